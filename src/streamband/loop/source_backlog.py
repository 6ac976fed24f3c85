"""A source's unread records as part of eq. (3)'s sender backlog (000 §IV-B), the same for
Storm's Kafka spouts and Flink's sources: the bytes each flow out of the source will carry
for the records its source has not read yet.

For a join fed by independent topics that backlog is where the input that is behind in
event time waits, and the backlog the input still has to deliver; under back-pressure it
grows for every flow of one source alike, which leaves that source's own split as it was.
"""

from __future__ import annotations

import numpy as np


class SourceBacklog:
    """Per flow, what it carries per record its source emitted (bytes, or messages),
    learnt over every interval so far (0 before its source emits): what the flow
    carried in them over the records its source emitted in them;
    :meth:`carried_for` converts a source's unread records into what each flow will
    carry for them."""

    def __init__(self, n: int) -> None:
        self._emitted = np.zeros(n)
        self._carried = np.zeros(n)
        self._records = np.zeros(n)
        self.per_record = np.zeros(n)

    def carried_for(self, unread: np.ndarray, emitted: np.ndarray, carried: np.ndarray
                    ) -> np.ndarray:
        """What each flow will carry for its source's ``unread`` records, in the unit of
        ``carried`` (what the flow carried in the interval); ``emitted``: the records the
        source emitted so far (cumulative).

        The ratio is taken over all intervals, not the last one: what a flow carries in
        one interval is what its cap let through, so a ratio from one interval would
        give the flow capped last the smaller share of its source's backlog, and the
        smaller cap again (Kafka-fed Storm TI: its truck flows' caps swapped every step).

        Examples
        --------
        Two flows out of one source: 4 records emitted, 8 and 2 bytes carried; then
        nothing emitted, and the ratios stay; then 4 more records, 0 and 10 bytes.

        >>> b, four = SourceBacklog(2), np.array([4.0, 4.0])
        >>> b.carried_for(np.array([10.0, 10.0]), four, np.array([8.0, 2.0])).tolist()
        [20.0, 5.0]
        >>> b.carried_for(np.array([30.0, 30.0]), four, np.zeros(2)).tolist()
        [60.0, 15.0]
        >>> b.carried_for(np.array([10.0, 10.0]), 2 * four, np.array([0.0, 10.0])).tolist()
        [10.0, 15.0]
        """
        emitted = np.asarray(emitted, float)
        self._carried += np.asarray(carried, float)
        self._records += np.maximum(emitted - self._emitted, 0.0)
        self._emitted = emitted
        self.per_record = np.divide(self._carried, self._records,
                                    out=np.zeros_like(self._carried), where=self._records > 0)
        return np.asarray(unread, float) * self.per_record

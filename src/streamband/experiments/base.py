"""What every reproduction module of :mod:`streamband.experiments` has.

A reproduction module (``paper000``, ``paper001``, ``paper002``, ``paper003``,
``paper004``, ``joint``, ``appfair``) holds, in this order:

- ``NAME`` (the ``streamband bench`` argument), ``TITLE`` and ``BACKENDS`` (the
  backends it runs on, the first being the default);
- ``PAPER``: the paper's reference figures, with the section they come from;
- the specs it runs (built-in spec names, or a function building them);
- ``run(out, opts, console) -> Outcome``: runs everything, prints the tables, writes
  ``out/results.json`` and ``out/report.html``;
- ``compare(rows, ...) -> Comparison``: the measured figures beside the paper's, and
  the checks. A check must be able to fail: ``streamband bench`` exits 1 when one does.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Check:
    """One acceptance check: what is checked, what was measured, whether it holds."""

    what: str
    measured: str
    ok: bool


@dataclass
class Comparison:
    """A bench's figures beside the paper's (``header`` + ``rows``) and its checks."""

    header: list[str]
    rows: list[list[Any]]
    checks: list[Check] = field(default_factory=list)
    title: str = "against the paper"

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {"title": self.title, "header": self.header, "rows": self.rows,
                "checks": [asdict(c) for c in self.checks]}


@dataclass(frozen=True)
class Options:
    """The options of ``streamband bench`` every reproduction understands.

    ``backend``: where it runs (``sim``, ``testbed``, ``storm``); ``seconds``: the
    length of each run (``None``: the spec's or the module's default); ``repeat``:
    runs per configuration on noisy backends (median and spread reported);
    ``full_trace`` (paper-004): the whole trace everywhere; ``policy``: the managed
    policy under test in place of the module's default (to check that checks fail).
    """

    backend: str = "sim"
    seconds: float | None = None
    repeat: int = 1
    full_trace: bool = False
    policy: str | None = None


@dataclass
class Outcome:
    """What ``run`` returns: every run's row, the comparison and the files written."""

    rows: list[dict[str, Any]]
    comparison: Comparison
    results: Path
    report: Path

    @property
    def ok(self) -> bool:
        return self.comparison.ok


#: a row is flagged when the measured figure is more than this factor off the paper's
FLAG_FACTOR = 2.0


def distance(measured: float, paper: float) -> tuple[float, bool]:
    """``measured - paper`` and whether the row is more than 2x off the paper
    (ratio above 2 or below 1/2, or of the other sign).

    Examples
    --------
    >>> distance(35.4, 25.0)
    (10.399999999999999, False)
    >>> distance(35.5, 15.0)[1]
    True
    """
    if not (math.isfinite(measured) and math.isfinite(paper)) or paper == 0:
        return math.nan, False
    ratio = measured / paper
    return measured - paper, not (1.0 / FLAG_FACTOR <= ratio <= FLAG_FACTOR)

"""The coflow-benchmark trace (FB2010-1Hr-150-0): reader and validation.

Format (``shared/data/README.md``)::

    <ports> <coflows>
    <id> <arrival ms> <m> <mapper ports...> <r> <reducer port:MiB>...

Conventional reading (004 §IV-B, CoflowSim): every reducer's MiB are split evenly
over the coflow's mappers, one flow per (mapper, reducer) pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

MIB = 2**20


class TraceError(ValueError):
    """A trace that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Coflow:
    """One coflow of the trace: id, arrival (s), mapper ports, reducer ports and bytes."""

    id: int
    arrival_s: float
    mappers: tuple[int, ...]
    reducers: tuple[int, ...]
    reducer_bytes: tuple[float, ...]

    @property
    def size_bytes(self) -> float:
        return float(sum(self.reducer_bytes))

    @property
    def n_flows(self) -> int:
        return len(self.mappers) * len(self.reducers)


@dataclass(frozen=True)
class Trace:
    """A parsed trace: number of ports and the coflows in file order."""

    ports: int
    coflows: tuple[Coflow, ...]

    def head(self, n: int) -> Trace:
        """The first ``n`` coflows (small end-to-end runs)."""
        return Trace(self.ports, self.coflows[:n])

    @property
    def n_flows(self) -> int:
        return sum(c.n_flows for c in self.coflows)


def _int(tok: str, path: Path, lineno: int, what: str) -> int:
    try:
        return int(tok)
    except ValueError:
        raise TraceError(f"{path}:{lineno}: {what}: expected an integer, got {tok!r}") from None


def read_trace(path: str | Path) -> Trace:
    """Parse and validate ``path``; a malformed line raises :class:`TraceError` with its number."""
    path = Path(path)
    if not path.is_file():
        raise TraceError(f"{path}: trace file not found")
    with path.open() as fh:
        lines = fh.read().splitlines()
    if not lines:
        raise TraceError(f"{path}:1: empty file, expected '<ports> <coflows>'")
    head = lines[0].split()
    if len(head) != 2:
        raise TraceError(f"{path}:1: expected '<ports> <coflows>', got {lines[0]!r}")
    ports = _int(head[0], path, 1, "ports")
    n = _int(head[1], path, 1, "number of coflows")
    if ports < 1 or n < 0:
        raise TraceError(f"{path}:1: expected ports >= 1 and coflows >= 0, got {ports} {n}")
    coflows: list[Coflow] = []
    for lineno, line in enumerate(lines[1:], start=2):
        tok = line.split()
        if not tok:
            continue
        coflows.append(_parse_coflow(tok, ports, path, lineno))
    if len(coflows) != n:
        raise TraceError(f"{path}:1: header announces {n} coflows, file has {len(coflows)}")
    return Trace(ports, tuple(coflows))


def _parse_coflow(tok: list[str], ports: int, path: Path, lineno: int) -> Coflow:
    where = f"{path}:{lineno}"
    if len(tok) < 5:
        raise TraceError(f"{where}: expected '<id> <arrival ms> <m> <mappers..> <r> <port:MiB>..'")
    cid = _int(tok[0], path, lineno, "coflow id")
    arrival = _int(tok[1], path, lineno, "arrival (ms)")
    m = _int(tok[2], path, lineno, "number of mappers")
    if m < 1 or len(tok) < 4 + m:
        raise TraceError(f"{where}: expected {m} mapper ports and a reducer count")
    mappers = tuple(_int(t, path, lineno, "mapper port") for t in tok[3 : 3 + m])
    r = _int(tok[3 + m], path, lineno, "number of reducers")
    red = tok[4 + m :]
    if r < 1 or len(red) != r:
        raise TraceError(f"{where}: expected {r} reducers as 'port:MiB', got {len(red)} fields")
    rports, rbytes = [], []
    for t in red:
        p, sep, mb = t.partition(":")
        if not sep:
            raise TraceError(f"{where}: reducer {t!r}: expected 'port:MiB'")
        rports.append(_int(p, path, lineno, "reducer port"))
        try:
            v = float(mb)
        except ValueError:
            raise TraceError(f"{where}: reducer {t!r}: MiB is not a number") from None
        if not (v >= 0 and np.isfinite(v)):
            raise TraceError(f"{where}: reducer {t!r}: MiB must be >= 0")
        rbytes.append(v * MIB)
    for p in (*mappers, *rports):
        if not 0 <= p < ports:
            raise TraceError(f"{where}: port {p} outside 0..{ports - 1}")
    if arrival < 0:
        raise TraceError(f"{where}: arrival must be >= 0 ms, got {arrival}")
    return Coflow(cid, arrival / 1000.0, mappers, tuple(rports), tuple(rbytes))

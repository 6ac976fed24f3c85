"""The coflow-benchmark trace (FB2010-1Hr-150-0): reader and validation.

Format (``shared/data/README.md``)::

    <ports> <coflows>
    <id> <arrival ms> <m> <mapper ports...> <r> <reducer port:MiB>...

Conventional reading (004 §IV-B, CoflowSim): every reducer's MiB are split evenly
over the coflow's mappers, one flow per (mapper, reducer) pair; 1 MiB = 2^20 bytes.

Every problem is a :class:`~streamband.errors.TraceError` whose message is one line:
the file and line, what is wrong, what was expected.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from streamband.errors import TraceError

MIB = 2**20
#: the simulator keeps state per pair of ports (the big-switch loop about 100 bytes a
#: pair: 1024 ports ~ 100 MiB); FB2010 has 150 ports (racks)
MAX_PORTS = 1024
#: at most this many coflows (FB2010 has 526)
MAX_COFLOWS = 1_000_000
#: coflow ids fit an int64; arrivals within 10^12 ms (about 31 years)
MAX_ID = 2**63 - 1
MAX_ARRIVAL_MS = 10**12

__all__ = ["MAX_COFLOWS", "MAX_PORTS", "MIB", "Coflow", "Trace", "TraceError", "read_trace"]


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


#: a field as the format writes it: ASCII decimal digits (int() and float() also read
#: '1_0' as 10, '+1', '\u0661' and 'infinity')
_INT = re.compile(r"-?[0-9]+")
_MIB = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _int(tok: str, where: str, what: str, low: int, high: int | None = None) -> int:
    if not _INT.fullmatch(tok):
        raise TraceError(f"{where}: {what}: expected an integer in decimal digits, "
                         f"got {tok[:40]!r}")
    if len(tok.lstrip("-")) > 19:  # past an int64, and past what int() converts quickly
        rng = f"{low}..{high}" if high is not None else f">= {low}"
        raise TraceError(f"{where}: {what}: expected {rng}, got a number of "
                         f"{len(tok.lstrip('-'))} digits")
    v = int(tok)
    if v < low or (high is not None and v > high):
        rng = f"{low}..{high}" if high is not None else f">= {low}"
        raise TraceError(f"{where}: {what}: expected {rng}, got {v}")
    return v


def _text(path: Path) -> list[str]:
    """The file's lines, refusing binary and non-UTF-8 content."""
    try:
        path.stat()
    except FileNotFoundError:
        raise TraceError(f"{path}: trace file not found") from None
    except OSError as err:  # a loop of symbolic links, a path through a file, no access
        raise TraceError(f"{path}: {err.strerror}, expected a text trace") from None
    if not path.is_file():
        raise TraceError(f"{path}: not a regular file, expected a text trace")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise TraceError(f"{path}: cannot be read ({err.strerror})") from None
    nul = raw.find(b"\0")
    if nul >= 0:
        line = raw.count(b"\n", 0, nul) + 1
        raise TraceError(f"{path}:{line}: binary content (a NUL byte), expected a text trace")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise TraceError(f"{path}:{line}: not UTF-8 text (byte 0x{raw[err.start]:02x}), "
                         "expected a text trace") from None
    return text.splitlines()


def read_trace(path: str | Path) -> Trace:
    """Parse and validate ``path``.

    Raises
    ------
    TraceError
        For a missing, binary, non-UTF-8 or empty file, a malformed or out-of-range
        field, counts that disagree with the entries, duplicate coflow ids.
    """
    path = Path(path)
    lines = _text(path)
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        raise TraceError(f"{path}:1: empty file, expected '<ports> <coflows>' and a line "
                         "per coflow")
    where = f"{path}:{first + 1}"
    head = lines[first].split()
    if len(head) != 2:
        raise TraceError(f"{where}: expected '<ports> <coflows>', got {lines[first][:60]!r}")
    ports = _int(head[0], where, "ports", 1, MAX_PORTS)
    n = _int(head[1], where, "number of coflows", 0, MAX_COFLOWS)
    coflows: list[Coflow] = []
    seen: dict[int, int] = {}
    for lineno, line in enumerate(lines[first + 1:], start=first + 2):
        tok = line.split()
        if not tok:
            continue
        c = _parse_coflow(tok, ports, f"{path}:{lineno}")
        if c.id in seen:
            raise TraceError(f"{path}:{lineno}: coflow id {c.id} repeats line {seen[c.id]}, "
                             "expected distinct ids")
        seen[c.id] = lineno
        coflows.append(c)
        if len(coflows) > n:
            raise TraceError(f"{path}:{lineno}: more coflows than the {n} the header "
                             f"announces (line {first + 1})")
    if len(coflows) != n:
        raise TraceError(f"{where}: header announces {n} coflows, the file has "
                         f"{len(coflows)}")
    return Trace(ports, tuple(coflows))


def _parse_coflow(tok: list[str], ports: int, where: str) -> Coflow:
    form = "'<id> <arrival ms> <m> <m mapper ports> <r> <r reducers port:MiB>'"
    if len(tok) < 5:
        raise TraceError(f"{where}: expected {form}, got {len(tok)} fields")
    cid = _int(tok[0], where, "coflow id", 0, MAX_ID)
    arrival = _int(tok[1], where, "arrival (ms)", 0, MAX_ARRIVAL_MS)
    m = _int(tok[2], where, "number of mappers", 1, ports)
    # the mapper ports are the fields up to the reducer count, which precedes the
    # first 'port:MiB' field
    first_red = next((i for i, t in enumerate(tok) if ":" in t), len(tok))
    given = first_red - 4
    if given != m:
        raise TraceError(f"{where}: {m} mappers announced, {max(given, 0)} mapper ports "
                         f"before the reducer count, expected them to agree ({form})")
    mappers = tuple(_int(t, where, "mapper port", 0, ports - 1) for t in tok[3:3 + m])
    r = _int(tok[3 + m], where, "number of reducers", 1, ports)
    red = tok[4 + m:]
    if len(red) != r:
        raise TraceError(f"{where}: {r} reducers announced, {len(red)} 'port:MiB' fields "
                         "follow, expected them to agree")
    rports, rbytes = [], []
    for t in red:
        p, sep, mb = t.partition(":")
        if not sep:
            raise TraceError(f"{where}: reducer {t[:40]!r}: expected 'port:MiB'")
        rports.append(_int(p, where, f"reducer {t[:40]!r} port", 0, ports - 1))
        if not _MIB.fullmatch(mb):
            raise TraceError(f"{where}: reducer {t[:40]!r}: MiB is not a decimal number "
                             f"(expected digits, an optional fraction and exponent)")
        v = float(mb)
        if not (math.isfinite(v) and v >= 0):
            raise TraceError(f"{where}: reducer {t[:40]!r}: expected a finite MiB >= 0, "
                             f"got {mb[:40]!r}")
        rbytes.append(v * MIB)
    return Coflow(cid, arrival / 1000.0, mappers, tuple(rports), tuple(rbytes))

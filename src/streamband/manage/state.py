"""The manager's state directory (one SQLite file, ``state.db``): what a restarted
``streamband manage`` resumes from.

- ``policy``: the policy of each topology as last switched (through the API);
- ``allocation``: every allocation made (time, topology, policy, each flow's rate, the
  optimizer's and the whole step's time, what was decided: ``policy``, ``hold``,
  ``fail-open``), the oldest dropped past ``keep`` rows;
- ``safe``: per topology the last safe allocation (flow keys and rates), re-applied at
  start while its lease would still run, so a restart does not drop the caps;
- ``lease``: what was last pushed to the controller and until when (wall clock);
- ``routing``: per topology its latest placement, flows and their paths;
- ``event``: alerts and changes (placement re-read, policy switched, fail-open, ...).

One connection, used from the manager's threads under a lock; WAL journal so the
dashboard's reads do not wait for the loop's writes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from streamband.errors import PreconditionError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS policy (topology TEXT PRIMARY KEY, policy TEXT, since REAL);
CREATE TABLE IF NOT EXISTS allocation (
  id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL, topology TEXT, policy TEXT,
  decision TEXT, flows TEXT, rates TEXT, optimizer_ms REAL, step_ms REAL);
CREATE INDEX IF NOT EXISTS allocation_topology ON allocation (topology, id);
CREATE TABLE IF NOT EXISTS safe (topology TEXT PRIMARY KEY, time REAL, keys TEXT, rates TEXT);
CREATE TABLE IF NOT EXISTS lease (flow TEXT PRIMARY KEY, topology TEXT, rate_bps REAL,
  expires REAL);
CREATE TABLE IF NOT EXISTS routing (topology TEXT PRIMARY KEY, time REAL, topology_id TEXT,
  placement TEXT, flows TEXT, paths TEXT);
CREATE TABLE IF NOT EXISTS event (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL,
  topology TEXT, kind TEXT, message TEXT);
"""


def _rates(rates: np.ndarray | list[float | None]) -> str:
    return json.dumps([None if r is None or not np.isfinite(r) else float(r) for r in rates])


def _unrates(text: str) -> list[float]:
    return [np.inf if r is None else float(r) for r in json.loads(text)]


#: the files the state keeps in its directory (SQLite's database and its write-ahead log)
FILES = ("state.db", "state.db-wal", "state.db-shm")


class State:
    """The state directory ``root`` (created if missing)."""

    def __init__(self, root: Path, keep: int = 200_000) -> None:
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.root / FILES[0], check_same_thread=False,
                                      isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise PreconditionError(f"manager.state_dir: {self.root}: cannot keep the state "
                                    f"there ({exc})") from None
        self.keep = keep
        self.lock = threading.Lock()
        self._since_trim = 0

    def _q(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self.lock:
            return self.db.execute(sql, args).fetchall()

    # -- starts ------------------------------------------------------------------------
    def started(self) -> int:
        """Count this start; returns how many starts the state has seen (1: a new one)."""
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key='starts'").fetchone()
            n = int(row[0]) + 1 if row else 1
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('starts', ?)", (str(n),))
        return n

    # -- policies ----------------------------------------------------------------------
    def policies(self) -> dict[str, str]:
        return {t: p for t, p in self._q("SELECT topology, policy FROM policy")}

    def set_policy(self, topology: str, policy: str) -> None:
        self._q("INSERT OR REPLACE INTO policy VALUES (?, ?, ?)", (topology, policy, time.time()))

    # -- allocations -------------------------------------------------------------------
    def record(self, topology: str, policy: str, decision: str, flows: list[str],
               rates: np.ndarray, optimizer_ms: float | None, step_ms: float,
               when: float | None = None) -> None:
        self._q("INSERT INTO allocation (time, topology, policy, decision, flows, rates, "
                "optimizer_ms, step_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (when or time.time(), topology, policy, decision, json.dumps(flows),
                 _rates(rates), optimizer_ms, step_ms))
        self._since_trim += 1
        if self._since_trim >= 1000:
            self._since_trim = 0
            self._q("DELETE FROM allocation WHERE id <= (SELECT MAX(id) FROM allocation) - ?",
                    (self.keep,))

    def allocations(self, topology: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The latest allocations, newest first."""
        sql = ("SELECT id, time, topology, policy, decision, flows, rates, optimizer_ms, "
               "step_ms FROM allocation")
        args: tuple[Any, ...] = ()
        if topology is not None:
            sql += " WHERE topology = ?"
            args = (topology,)
        rows = self._q(sql + " ORDER BY id DESC LIMIT ?", (*args, limit))
        return [{"id": r[0], "time": r[1], "topology": r[2], "policy": r[3], "decision": r[4],
                 "flows": json.loads(r[5]), "rates_bps": json.loads(r[6]),
                 "optimizer_ms": r[7], "step_ms": r[8]} for r in rows]

    def count(self) -> int:
        return int(self._q("SELECT COUNT(*) FROM allocation")[0][0])

    # -- the last safe allocation and the leases ---------------------------------------
    def set_safe(self, topology: str, keys: list[dict[str, Any]], rates: np.ndarray) -> None:
        self._q("INSERT OR REPLACE INTO safe VALUES (?, ?, ?, ?)",
                (topology, time.time(), json.dumps(keys), _rates(rates)))

    def safe(self) -> dict[str, tuple[float, list[dict[str, Any]], list[float]]]:
        """topology -> (time, flow keys, rates; inf = uncapped)."""
        return {t: (when, json.loads(k), _unrates(r))
                for t, when, k, r in self._q("SELECT topology, time, keys, rates FROM safe")}

    def drop_safe(self, topology: str) -> None:
        self._q("DELETE FROM safe WHERE topology = ?", (topology,))

    def set_leases(self, items: list[tuple[str, dict[str, Any], float | None]],
                   expires: float) -> None:
        """``items``: (topology, flow key, rate or None) pushed with a lease to ``expires``."""
        with self.lock:
            self.db.execute("BEGIN")
            self.db.execute("DELETE FROM lease")
            self.db.executemany("INSERT OR REPLACE INTO lease VALUES (?, ?, ?, ?)",
                                [(json.dumps(k, sort_keys=True), t, r, expires)
                                 for t, k, r in items])
            self.db.execute("COMMIT")

    def leases(self) -> list[dict[str, Any]]:
        return [{"flow": json.loads(f), "topology": t, "rate_bps": r, "expires": e}
                for f, t, r, e in self._q("SELECT flow, topology, rate_bps, expires FROM lease")]

    # -- routing -----------------------------------------------------------------------
    def set_routing(self, topology: str, topology_id: str, placement: dict[str, Any],
                    flows: list[dict[str, Any]], paths: list[list[int]]) -> None:
        self._q("INSERT OR REPLACE INTO routing VALUES (?, ?, ?, ?, ?, ?)",
                (topology, time.time(), topology_id, json.dumps(placement), json.dumps(flows),
                 json.dumps(paths)))

    def routing(self) -> dict[str, dict[str, Any]]:
        return {t: {"time": when, "topology_id": tid, "placement": json.loads(p),
                    "flows": json.loads(f), "paths": json.loads(pa)}
                for t, when, tid, p, f, pa in self._q(
                    "SELECT topology, time, topology_id, placement, flows, paths FROM routing")}

    def drop_routing(self, topology: str) -> None:
        self._q("DELETE FROM routing WHERE topology = ?", (topology,))

    # -- events ------------------------------------------------------------------------
    def event(self, kind: str, message: str, topology: str = "") -> None:
        self._q("INSERT INTO event (time, topology, kind, message) VALUES (?, ?, ?, ?)",
                (time.time(), topology, kind, message))
        self._q("DELETE FROM event WHERE id <= (SELECT MAX(id) FROM event) - 10000")

    def events(self, limit: int = 50) -> list[dict[str, Any]]:
        return [{"time": t, "topology": top, "kind": k, "message": m}
                for t, top, k, m in self._q("SELECT time, topology, kind, message FROM event "
                                            "ORDER BY id DESC LIMIT ?", (limit,))]

    def close(self) -> None:
        with self.lock:
            self.db.close()

"""What the project starts, so that clean-up can find it after any crash.

- Every process the project starts (Mininet host shells and what runs in them, the
  controller, harness workers, iperf3, the engines' daemons) carries :data:`MARK` in its
  environment (:func:`marked_env`); :func:`marked_processes` finds them by that mark,
  after ``kill -9`` of anything.
- :data:`RUN_DIR` holds what the systems that are up keep on disk (their state, locks,
  stores).
- Clean-up is one command (Mininet's ``mn -c``, for this project only) extended by
  callbacks, as Mininet's ``Cleanup.addCleanupCallback``: each real system (the testbed's
  network, Storm, Swift, Kafka, Flink) declares a :class:`Cleanup` under the entry-point
  group ``streamband.cleanup`` (``pyproject.toml``); :func:`cleanups` loads them, and the
  clean-up names no system.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

from streamband.errors import PreconditionError

RUN_DIR = Path(os.environ.get("STREAMBAND_RUN_DIR", "/run/streamband"))
MARK = "STREAMBAND_TESTBED"
#: the entry-point group where each real system declares its :class:`Cleanup`
CLEANUP_GROUP = "streamband.cleanup"


def mark_value() -> str:
    """This process's mark: the run directory its systems keep their state in, and its
    pid; clean-up kills what carries its own run directory's mark, so that two
    streamband installs with run directories of their own do not clean each other."""
    return f"{RUN_DIR}|{os.getpid()}"


def marked_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process the project owns (carries :data:`MARK`)."""
    env = dict(os.environ)
    env[MARK] = mark_value()
    env.update(extra or {})
    return env


def _ancestors() -> set[int]:
    out, pid = set(), os.getpid()
    while pid > 1:
        out.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def processes_where(part: str, match: Callable[[list[bytes]], bool],
                    exclude: set[int] | None = None) -> list[int]:
    """Pids whose ``/proc/PID/part`` (``environ``, ``cmdline``: NUL-separated items)
    satisfies ``match``; never those in ``exclude`` (default: this process's line)."""
    skip = _ancestors() if exclude is None else exclude
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in skip:
            continue
        try:
            items = (d / part).read_bytes().split(b"\0")
        except OSError:
            continue
        if match(items):
            found.append(int(d.name))
    return sorted(found)


def marked_processes() -> list[int]:
    """Pids whose environment holds the project's mark for this run directory (never
    this process's line)."""
    needle = f"{MARK}={RUN_DIR}|".encode()
    return processes_where("environ", lambda env: any(i.startswith(needle) for i in env))


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def terminate(pids: list[int], grace_s: float = 1.0) -> list[int]:
    """SIGTERM ``pids``, then SIGKILL those still alive after ``grace_s``; returns the
    ones alive after that (zombies count as gone)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if Path(f"/proc/{p}").exists() and not _zombie(p)]
            time.sleep(0.05)
        if not pids:
            break
    return pids


def stop(proc: subprocess.Popen[Any] | None, grace_s: float = 10.0) -> None:
    """Ends a child process: SIGTERM, then SIGKILL if it still runs after ``grace_s``;
    reaped either way (None, or one that has ended: nothing to do)."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass
class Host:
    """Where an engine's process runs: an address and, on the testbed, the pid of a
    process in the host's network namespace (``None``: the root namespace)."""

    name: str
    ip: str
    netns_pid: int | None = None

    def wrap(self, cmd: list[str]) -> list[str]:
        """``cmd`` run inside the host's network namespace."""
        if self.netns_pid is None:
            return cmd
        return ["nsenter", f"--net=/proc/{self.netns_pid}/ns/net", *cmd]


H = TypeVar("H", bound=Host)


def namespace_hosts(state: dict[str, Any], master: str, workers: list[str] | None,
                  what: str, cls: type[H]) -> tuple[H, list[H]]:
    """The ``master`` host and the ``workers`` (default: every other host) of a running
    testbed (its state file) as ``cls`` in their namespaces; ``what`` names what runs on
    the master.

    Raises
    ------
    PreconditionError
        If the testbed has no such host.
    """
    hosts = state["hosts"]
    if master not in hosts:
        raise PreconditionError(f"the testbed has no host {master!r} for {what} "
                                "(start it with master=true)")
    names = workers or [h for h in hosts if h != master]
    for h in names:
        if h not in hosts:
            raise PreconditionError(f"the testbed has no host {h!r}")
    return (cls(master, hosts[master]["ip"], hosts[master]["pid"]),
            [cls(h, hosts[h]["ip"], hosts[h]["pid"]) for h in names])


def tagged_processes(var: str, tag: str) -> list[int]:
    """Pids whose environment has ``VAR=tag`` (an engine's cluster tags its processes with
    its work directory), never this process."""
    needle = f"{var}={tag}".encode()
    return processes_where("environ", lambda env: needle in env, exclude={os.getpid()})


def stop_tagged(var: str, tag: str, procs: dict[str, subprocess.Popen[Any]],
                grace_s: float = 3.0) -> list[int]:
    """Stops every process tagged ``VAR=tag`` (TERM, then KILL) and reaps the children in
    ``procs`` (emptied); returns the pids stopped."""
    pids = tagged_processes(var, tag)
    terminate(pids, grace_s)
    for p in procs.values():
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass
    procs.clear()
    return pids


@dataclass(frozen=True)
class ClusterState:
    """The state file of the engine cluster ``streamband ENGINE up`` started
    (``RUN_DIR/ENGINE.json``): its work directory, home and spec, for ``attach``. The
    cluster is alive while a process tagged ``VAR=work`` (:func:`tagged_processes`)
    lives."""

    path: Path
    var: str

    def read(self) -> dict[str, Any] | None:
        """The state of a cluster that is alive, else None."""
        try:
            st = json.loads(self.path.read_text())
            return st if tagged_processes(self.var, st.get("work", "")) else None
        except (OSError, json.JSONDecodeError, AttributeError):
            return None

    def write(self, work: Path, home: Path, spec: Any,
              procs: dict[str, subprocess.Popen[Any]], **extra: str) -> None:
        """Records the cluster of ``work``: its home, its spec (a dataclass), the pids of
        the processes it started."""
        d = asdict(spec)
        d["work_dir"] = str(d["work_dir"])
        st = {"work": str(work), "home": str(home), **extra, "spec": d,
              "pids": {k: p.pid for k, p in procs.items()}}
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(st, indent=1))

    def clear(self, work: Path) -> None:
        """Removes the state file if it names ``work``."""
        try:
            if json.loads(self.path.read_text()).get("work") == str(work):
                self.path.unlink()
        except (OSError, json.JSONDecodeError, AttributeError):
            pass

    def stale(self) -> bool:
        """A state file is there and names no live cluster."""
        return self.path.exists() and self.read() is None


def java_error(lines: list[str]) -> str:
    """The line of a Java client's output that names its failure (the last exception or
    error, else the last line)."""
    lines = lines or ["(no output)"]
    for ln in reversed(lines):
        if "Exception" in ln or "Error" in ln:
            return ln.strip()[:300]
    return lines[-1][:300]


def usage(pids: list[int], roles: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """Memory (RSS, MB) and CPU time (s) of each of ``pids`` whose command line holds one
    of ``roles``' keys (the first that matches names its role); the others are left out."""
    tick = os.sysconf("SC_CLK_TCK")
    out = []
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            rss = next(int(ln.split()[1]) for ln in Path(f"/proc/{pid}/status").read_text()
                       .splitlines() if ln.startswith("VmRSS:"))
        except (OSError, StopIteration, ValueError):
            continue
        role = next((r for k, r in roles if k in cmd), None)
        if role:
            out.append({"pid": pid, "role": role, "cmd": cmd, "rss_mb": round(rss / 1024, 1),
                        "cpu_s": round((int(stat[11]) + int(stat[12])) / tick, 2)})
    return out


@dataclass(frozen=True)
class Cleanup:
    """One real system's part of ``streamband testbed clean``.

    Parameters
    ----------
    name : str
        The system (``storm``, ``swift``, ``network``), shown in messages.
    processes : callable
        Pids of the system's processes that may not carry :data:`MARK` (e.g. JVMs a
        daemon launched); killed with the marked ones.
    leftovers : callable
        What of the system's still exists, one line per thing (processes excluded).
    clean : callable
        Removes what :attr:`leftovers` lists (after every process is gone); returns what
        it removed.
    order : int
        Lower runs first (the network, which the engines' hosts live in, runs last).
    """

    name: str
    processes: Callable[[], list[int]] = list
    leftovers: Callable[[], list[str]] = list
    clean: Callable[[], list[str]] = list
    order: int = 50


def cleanups() -> list[Cleanup]:
    """Every :class:`Cleanup` declared under :data:`CLEANUP_GROUP`, in run order."""
    found = [ep.load() for ep in entry_points(group=CLEANUP_GROUP)]
    return sorted(found, key=lambda c: (c.order, c.name))


def project_processes() -> list[int]:
    """The marked processes and every system's own (never this process's line)."""
    pids = set(marked_processes())
    for c in cleanups():
        pids.update(c.processes())
    return sorted(pids)


#: processes started while clean-up kills (a Supervisor relaunching its workers, a
#: cluster half-way through its start) are found by scanning again, this many times
ROUNDS = 5


def leftovers() -> list[str]:
    """Everything of the project's that still exists, one line per thing."""
    left = [f"process {p}" for p in project_processes()]
    for c in cleanups():
        left += c.leftovers()
    return left


def clean() -> list[str]:
    """Remove everything the project started (``streamband testbed clean``): every
    marked process and every system's own, then each system's :attr:`Cleanup.clean`;
    returns what was removed."""
    removed: list[str] = []
    for _ in range(ROUNDS):
        pids = project_processes()
        if not pids:
            break
        removed += [f"process {p}" for p in pids]
        terminate(pids)
    for c in cleanups():
        removed += c.clean()
    return removed

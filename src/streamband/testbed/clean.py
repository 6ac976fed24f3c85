"""Clean-up as a first-class command (Mininet's ``mn -c``, for this project only):
kill every process carrying the project's mark and every Storm JVM run from the
project's ``storm.home``, delete the project's bridges and veths, give the machine back
its allowed congestion controls, stop OVS if the project started it. Works after
``kill -9`` of anything, since it reads the kernel's and OVS's state, not the project's
memory."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from streamband.testbed import ovs
from streamband.testbed.network import restore_congestion_control
from streamband.testbed.registry import ALLOWED_CC_BEFORE, MARK, RUN_DIR, STATE

IFACE = re.compile(r"^(sb[hs]\d+-eth\d+|sbm\d+)(@\S+)?$")  # sbm: a management link
STORE = RUN_DIR / "swift"  # the Swift store's files (configs, devices, its state)
STORM_HOME_ARG = b"-Dstorm.home="
#: processes started while clean-up kills (a Supervisor relaunching its workers, a
#: cluster half-way through its start) are found by scanning again, this many times
ROUNDS = 5


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
    """Pids whose environment holds the project's mark (never this process's line)."""
    needle = f"{MARK}=".encode()
    return processes_where("environ", lambda env: any(i.startswith(needle) for i in env))


def storm_processes() -> list[int]:
    """Pids of the Storm JVMs (daemons, workers, log writers) whose ``-Dstorm.home`` is a
    home the project built (its ``.complete`` file, :func:`streamband.storm.home.ensure_home`),
    whether or not they carry the mark (never this process's line)."""
    homes: dict[bytes, bool] = {}

    def ours(args: list[bytes]) -> bool:
        home = next((a[len(STORM_HOME_ARG):] for a in args if a.startswith(STORM_HOME_ARG)),
                    None)
        if home is None:
            return False
        if home not in homes:
            homes[home] = (Path(os.fsdecode(home)) / ".complete").is_file()
        return homes[home]

    return processes_where("cmdline", ours)


def project_processes() -> list[int]:
    """The marked processes and the project's Storm JVMs."""
    return sorted(set(marked_processes()) | set(storm_processes()))


def project_interfaces() -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) > 1:
            m = IFACE.match(parts[1].strip())
            if m:
                names.append(m.group(1))
    return names


def leftovers() -> list[str]:
    """Everything of the project's that still exists."""
    left = [f"process {p}" for p in project_processes()]
    left += [f"bridge {b}" for b in ovs.project_bridges()]
    left += [f"interface {i}" for i in project_interfaces()]
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [f"netns {n.split()[0]}" for n in netns.splitlines() if n.startswith("sb")]
    if STATE.exists():
        left.append(f"state {STATE}")
    if STORE.exists():
        left.append(f"swift store {STORE}")
    if ALLOWED_CC_BEFORE.exists():
        left.append(f"widened tcp_allowed_congestion_control ({ALLOWED_CC_BEFORE})")
    return left


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


def clean(stop_ovs: bool = True) -> list[str]:
    """Remove everything the project started; returns what was removed."""
    removed: list[str] = []
    for _ in range(ROUNDS):
        pids = project_processes()
        if not pids:
            break
        removed += [f"process {p}" for p in pids]
        terminate(pids)
    for b in ovs.project_bridges():
        ovs.vsctl("--if-exists", "del-br", b, check=False)
        removed.append(f"bridge {b}")
    for i in project_interfaces():
        subprocess.run(["ip", "link", "del", i], capture_output=True)
        removed.append(f"interface {i}")
    if STATE.exists():
        STATE.unlink(missing_ok=True)
        removed.append(f"state {STATE}")
    if STORE.exists():
        shutil.rmtree(STORE, ignore_errors=True)
        removed.append(f"swift store {STORE}")
    before = restore_congestion_control()
    if before is not None:
        removed.append(f"tcp_allowed_congestion_control widened (back to {before!r})")
    if stop_ovs and ovs.stop_if_ours():
        removed.append("openvswitch daemons")
    return removed


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True

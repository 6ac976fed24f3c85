"""002's actuator (§V-C4: tc token buckets on "the inbound and outbound bandwidth
associated with the network interfaces and service ports"): HTB classes per
service on both ends of every storage host's link, with a lease.

On each shaped interface (the host's own end: what the node sends; the switch's
end: what the node receives) the link's single HTB class (Mininet's ``TCLink``:
``5:1`` at the link rate) gets three leaves:

- ``5:10`` user-centric: the object, container and account server ports;
- ``5:20`` system-centric: the replication server and rsync ports;
- ``5:30`` everything else (ARP, ICMP): a tiny assured rate, the link as ceiling;

classified by u32 on the TCP source or destination port (either end of a
connection is the service's well-known port), each class with its own queue, so
client requests do not wait behind recovery's backlog.

The lease (fail-open): the shaper process (``python -m streamband.swift.tc
CONF``) owns the classes. It applies each plan the loop writes and, when the
plan's lease runs out before a new one arrives (the loop died or hung), puts
every interface back to its single class: plain sharing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streamband.errors import RunError
from streamband.swift.layout import RECOVERY_PORTS, USER_PORTS

HANDLE = 5
USER_CLS, RECOVERY_CLS, OTHER_CLS = "10", "20", "30"  # minor ids (tc reads hex)
MIN_RATE_BPS = 8e3


class ShaperError(RunError):
    """A ``tc`` command failed."""


@dataclass(frozen=True)
class Port:
    """One interface to shape: ``host``'s end (``netns_pid`` set, egress = what the
    host sends) or the switch's end (root namespace, egress = what it receives)."""

    host: str
    dev: str
    link_bps: float
    netns_pid: int | None = None


def tc_batch(lines: list[str], netns_pid: int | None = None) -> None:
    """``tc -batch`` in the root namespace or in ``netns_pid``'s."""
    if not lines:
        return
    cmd = ["tc", "-batch", "-"]
    if netns_pid is not None:
        cmd = ["mnexec", "-a", str(netns_pid), *cmd]
    r = subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True)
    if r.returncode:
        raise ShaperError(f"tc: {r.stderr.strip()[-300:]}")


def _rate(bps: float) -> str:
    return f"{max(MIN_RATE_BPS, bps):.0f}bit"


def plain_lines(p: Port) -> list[str]:
    """The link as Mininet shaped it: one HTB class at the link rate."""
    return [f"qdisc del dev {p.dev} root",
            f"qdisc add dev {p.dev} root handle {HANDLE}:0 htb default 1",
            f"class add dev {p.dev} parent {HANDLE}:0 classid {HANDLE}:1 htb "
            f"rate {_rate(p.link_bps)} burst 15k"]


def _class(p: Port, cls: str, rate: float, ceil: float, prio: int, verb: str) -> str:
    ceil = min(max(ceil, rate), p.link_bps)
    return (f"class {verb} dev {p.dev} parent {HANDLE}:1 classid {HANDLE}:{cls} htb "
            f"rate {_rate(min(rate, ceil))} ceil {_rate(ceil)} burst 15k cburst 15k "
            f"prio {prio} quantum 1514")


Cls = tuple[float, float, int]  # rate, ceil (bit/s), HTB prio (0: borrows first)


def tree_lines(p: Port, user: Cls, recovery: Cls) -> list[str]:
    """The service classes on ``p`` with (rate, ceil, prio) for user and recovery."""
    h = HANDLE
    lines = [f"qdisc del dev {p.dev} root",
             f"qdisc add dev {p.dev} root handle {h}:0 htb default {OTHER_CLS}",
             f"class add dev {p.dev} parent {h}:0 classid {h}:1 htb "
             f"rate {_rate(p.link_bps)} ceil {_rate(p.link_bps)} burst 15k",
             _class(p, USER_CLS, *user, "add"),
             _class(p, RECOVERY_CLS, *recovery, "add"),
             _class(p, OTHER_CLS, max(MIN_RATE_BPS, p.link_bps / 100), p.link_bps, 0, "add")]
    pref = 10
    for ports, cls in ((USER_PORTS, USER_CLS), (RECOVERY_PORTS, RECOVERY_CLS)):
        for port in ports:
            for end in ("sport", "dport"):
                lines.append(f"filter add dev {p.dev} parent {h}:0 protocol ip pref {pref} "
                             f"u32 match ip protocol 6 0xff match ip {end} {port} 0xffff "
                             f"flowid {h}:{cls}")
                pref += 1
    return lines


def change_lines(p: Port, user: Cls, recovery: Cls) -> list[str]:
    return [_class(p, USER_CLS, *user, "change"),
            _class(p, RECOVERY_CLS, *recovery, "change")]


def class_bytes(p: Port) -> dict[str, int]:
    """Bytes sent so far by each class of ``p`` by minor id (tc's counters)."""
    cmd = ["tc", "-s", "class", "show", "dev", p.dev]
    if p.netns_pid is not None:
        cmd = ["mnexec", "-a", str(p.netns_pid), *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    res: dict[str, int] = {}
    cur: str | None = None
    for line in out.splitlines():
        if line.startswith(f"class htb {HANDLE}:"):
            cur = line.split()[2].split(":")[1]
        elif cur is not None and line.strip().startswith("Sent "):
            res[cur] = int(line.split()[1])
            cur = None
    return res


# -- the lease holder -------------------------------------------------------------------


@dataclass
class ShaperConfig:
    """The shaper process: its interfaces and the files it talks through."""

    ports: list[dict[str, Any]]
    plan: str  # written by the loop: {"seq", "expires" (wall clock), "hosts" | null}
    status: str  # written here: {"seq", "shaped", "expired"}
    poll_s: float = 0.05

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self)))
        return path


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def _cls(want: list[float], prio: int) -> Cls:
    """[rate, ceil] or [rate, ceil, prio] of a plan as a class (``prio`` by default)."""
    return (want[0], want[1], int(want[2]) if len(want) > 2 else prio)


class Shaper:
    """Applies plans to the ports and expires them (see the module docstring)."""

    def __init__(self, cfg: ShaperConfig) -> None:
        self.cfg = cfg
        self.ports = [Port(**p) for p in cfg.ports]
        self.shaped: set[str] = set()  # devs carrying the service classes
        self.seq = 0
        self.expires = 0.0
        self.expired = 0
        self.last: dict[str, Any] | None = None

    def apply(self, hosts: dict[str, dict[str, list[float]]] | None) -> None:
        for p in self.ports:
            want = (hosts or {}).get(p.host)
            if want is None:
                if p.dev in self.shaped:
                    tc_batch(plain_lines(p), p.netns_pid)
                    self.shaped.discard(p.dev)
                continue
            user = _cls(want["user"], 0)
            rec = _cls(want["recovery"], 1)
            if p.dev in self.shaped:
                tc_batch(change_lines(p, user, rec), p.netns_pid)
            else:
                tc_batch(tree_lines(p, user, rec), p.netns_pid)
                self.shaped.add(p.dev)

    def step(self) -> None:
        """Apply a new plan (each write of the loop renews the lease), or expire."""
        try:
            plan = json.loads(Path(self.cfg.plan).read_text())
        except (OSError, ValueError):
            plan = None
        if plan is not None and plan["seq"] != self.seq:
            self.seq = plan["seq"]
            self.expires = plan["expires"]
            hosts = plan.get("hosts")
            if hosts != self.last:
                self.apply(hosts)
                self.last = hosts
            self._status()
        if self.shaped and time.time() > self.expires:
            self.apply(None)
            self.last = None
            self.expired += 1
            self._status()

    def _status(self) -> None:
        write_json(Path(self.cfg.status), {"seq": self.seq, "shaped": sorted(self.shaped),
                                           "expired": self.expired, "t": time.time()})

    def run(self) -> None:
        """Until SIGTERM, or until the process that started it is gone (then the
        classes go too: nobody is left to renew them)."""
        parent = os.getppid()
        self._status()
        try:
            while os.getppid() == parent:
                self.step()
                time.sleep(self.cfg.poll_s)
        finally:
            if self.shaped:
                self.apply(None)


def main(argv: list[str] | None = None) -> None:
    cfg = ShaperConfig(**json.loads(Path((argv or sys.argv[1:])[0]).read_text()))
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    Shaper(cfg).run()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()

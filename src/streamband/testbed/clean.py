"""The testbed network's part of ``streamband testbed clean`` (:data:`CLEANUP`,
declared under ``streamband.cleanup``): the project's bridges and veths, network
namespaces, the state of the testbed that was up, the machine's allowed congestion
controls as they were, and Open vSwitch if the project started it. Works after
``kill -9`` of anything, since it reads the kernel's and OVS's state, not the project's
memory. It runs last, once every engine that lived in the hosts is gone."""

from __future__ import annotations

import re
import subprocess

from streamband.procs import Cleanup
from streamband.testbed import ovs
from streamband.testbed.network import restore_congestion_control
from streamband.testbed.registry import ALLOWED_CC_BEFORE, STATE

# sbm: a management link, the services' network (its bridge, its veths)
IFACE = re.compile(r"^(sb[hs]\d+-eth\d+|sbm\d+s?)(@\S+)?$")


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
    """What of the testbed network still exists."""
    left = [f"bridge {b}" for b in ovs.project_bridges()]
    left += [f"interface {i}" for i in project_interfaces()]
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left += [f"netns {n.split()[0]}" for n in netns.splitlines() if n.startswith("sb")]
    if STATE.exists():
        left.append(f"state {STATE}")
    if ALLOWED_CC_BEFORE.exists():
        left.append(f"widened tcp_allowed_congestion_control ({ALLOWED_CC_BEFORE})")
    return left


def clean() -> list[str]:
    """Remove the testbed network; returns what was removed."""
    removed: list[str] = []
    for b in ovs.project_bridges():
        ovs.vsctl("--if-exists", "del-br", b, check=False)
        removed.append(f"bridge {b}")
    for i in project_interfaces():
        subprocess.run(["ip", "link", "del", i], capture_output=True)
        removed.append(f"interface {i}")
    if STATE.exists():
        STATE.unlink(missing_ok=True)
        removed.append(f"state {STATE}")
    before = restore_congestion_control()
    if before is not None:
        removed.append(f"tcp_allowed_congestion_control widened (back to {before!r})")
    if ovs.stop_if_ours():
        removed.append("openvswitch daemons")
    return removed


CLEANUP = Cleanup("network", leftovers=leftovers, clean=clean, order=90)

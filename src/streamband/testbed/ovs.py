"""Open vSwitch on this machine: started by the project when it is not running,
userspace datapath (the kernel here has no OVS module)."""

from __future__ import annotations

import subprocess
import time

from streamband.errors import PreconditionError
from streamband.procs import RUN_DIR
from streamband.testbed.registry import OVS_STARTED

OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"


class OvsError(PreconditionError):
    """Open vSwitch is missing or does not answer."""


def vsctl(*args: str, check: bool = True) -> str:
    r = subprocess.run(["ovs-vsctl", "--timeout=10", *args], capture_output=True, text=True)
    if check and r.returncode:
        raise OvsError(f"ovs-vsctl {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def running() -> bool:
    return subprocess.run(["ovs-vsctl", "--timeout=2", "show"],
                          capture_output=True).returncode == 0


def ensure_running() -> None:
    """Start ovsdb-server and ovs-vswitchd unless they answer already."""
    if running():
        return
    try:
        r = subprocess.run([OVS_CTL, "start", "--system-id=random"], capture_output=True,
                           text=True, timeout=60)
    except FileNotFoundError:
        raise OvsError("Open vSwitch is not installed (apt-get install openvswitch-switch)") \
            from None
    for _ in range(50):
        if running():
            RUN_DIR.mkdir(parents=True, exist_ok=True)
            OVS_STARTED.touch()
            return
        time.sleep(0.1)
    raise OvsError(f"ovs-ctl start failed: {r.stderr.strip()[-300:]}")


def stop_if_ours() -> bool:
    """Stop OVS if the project started it and it holds no other bridge."""
    if not OVS_STARTED.exists() or not running():
        OVS_STARTED.unlink(missing_ok=True)
        return False
    if vsctl("list-br", check=False).split():
        return False
    subprocess.run([OVS_CTL, "stop"], capture_output=True, timeout=60)
    OVS_STARTED.unlink(missing_ok=True)
    return True


def project_bridges() -> list[str]:
    if not running():
        return []
    tagged = vsctl("--bare", "--columns=name", "find", "bridge", "external_ids:streamband=1",
                   check=False).split()
    named = [b for b in vsctl("list-br", check=False).split() if b.startswith("sbs")]
    return sorted(set(tagged) | set(named))


def offloads_off(intf: str, netns_pid: int | None = None, gro: bool = False) -> None:
    """TCP through the userspace datapath stalls with offloads on."""
    cmd = ["ethtool", "-K", intf, "tx", "off", "tso", "off", "gso", "off"]
    if gro:
        cmd += ["gro", "off"]
    if netns_pid is not None:
        cmd = ["mnexec", "-a", str(netns_pid), *cmd]
    subprocess.run(cmd, capture_output=True)

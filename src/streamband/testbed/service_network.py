"""A network beside the links under test for the services an application reads from
(Kafka's broker): a Linux bridge (``sbm10``) with one veth to every host's namespace
(``sbm11``, ``sbm12``, … on the bridge; ``svc0`` in the host, ``10.254.0.N/24``).

A topic read by a source crosses the source's own downlink on the star: the fork-join's
source A on S1 fetched 8 KB per id from the master's broker through the link that also
brings D its 6 + 3 KB per id, so the link under test carried traffic the manager does
not allocate (issue 33: the broker's traffic does not cross the links under
test unless a spec says so). Over this network it crosses no switch port, no meter and
no shaped link. Clean-up after a crash: :mod:`streamband.testbed.clean` removes every
``sbm`` interface (the namespace ends go with their pairs or their namespaces).
"""

from __future__ import annotations

import subprocess

from streamband.errors import RunError

#: the bridge and the first veth's number (sbm0/sbm1 are the manage stage's link)
BRIDGE, FIRST = "sbm10", 11
#: the hosts' addresses on this network: inside 10/8 (the testbed's), so the host's
#: more specific /24 route picks this interface
PREFIX, HOST_IFACE = "10.254.0", "svc0"


def _ip(*args: str, ns: int | None = None, check: bool = True) -> None:
    pre = [] if ns is None else ["nsenter", f"--net=/proc/{ns}/ns/net"]
    r = subprocess.run([*pre, "ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RunError(f"service network: ip {' '.join(args)}: {r.stderr.strip()}")


class ServiceNetwork:
    """The service network of one testbed: :meth:`attach` a host (by its namespace's
    pid) once, read its address with :meth:`ip`, :meth:`remove` everything."""

    def __init__(self) -> None:
        self.hosts: dict[str, int] = {}  # host -> its number on this network

    def ip(self, host: str) -> str:
        return f"{PREFIX}.{self.hosts[host]}"

    def attach(self, host: str, netns_pid: int) -> str:
        """Connect ``host`` (idempotent); its address on this network."""
        if host in self.hosts:
            return self.ip(host)
        if not self.hosts:
            self.remove()
            _ip("link", "add", BRIDGE, "type", "bridge")
            _ip("link", "set", BRIDGE, "up")
        n = len(self.hosts) + 1
        outer = f"sbm{FIRST + n - 1}"
        inner = f"{outer}s"
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", outer, "master", BRIDGE)
        _ip("link", "set", outer, "up")
        _ip("link", "set", inner, "netns", str(netns_pid))
        _ip("link", "set", inner, "name", HOST_IFACE, ns=netns_pid)
        _ip("addr", "add", f"{PREFIX}.{n}/24", "dev", HOST_IFACE, ns=netns_pid)
        _ip("link", "set", HOST_IFACE, "up", ns=netns_pid)
        self.hosts[host] = n
        return self.ip(host)

    def remove(self) -> None:
        """Delete the bridge and every veth on it (their namespace ends go with them)."""
        out = subprocess.run(["ip", "-o", "link", "show", "master", BRIDGE],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            name = line.split(":", 2)[1].strip().split("@")[0]
            _ip("link", "del", name, check=False)
        _ip("link", "del", BRIDGE, check=False)
        self.hosts.clear()

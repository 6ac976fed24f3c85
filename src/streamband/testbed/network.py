"""The emulated network: a Mininet net built from a model topology.

Switches are OVS bridges on the userspace datapath (``datapath_type=netdev``),
OpenFlow 1.3, secure fail mode, connected to the project's controller; links are
veth pairs shaped by HTB (Mininet's ``TCLink``) at the model's capacities, with
offloads off on both ends (TCP stalls on the userspace datapath otherwise). ARP is
static. On topologies with more than one switch the testbed installs one path per host pair from
:class:`streamband.model.routing.Router` (ECMP by pair) in table 1, since plain
L2 learning floods forever on their loops.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from streamband.errors import PreconditionError
from streamband.model.routing import Router
from streamband.model.testbed import TestbedSpec
from streamband.model.topology import Topology
from streamband.procs import MARK, mark_value, marked_env
from streamband.testbed import ovs
from streamband.testbed.registry import (
    ALLOWED_CC_BEFORE,
    HOST_PREFIX,
    SWITCH_PREFIX,
    read_state,
    write_state,
)
from streamband.testbed.service_network import ServiceNetwork


class TestbedError(PreconditionError):
    """The testbed cannot start (busy, OVS missing, controller not reachable)."""

    __test__ = False


#: the congestion controls a network namespace other than the machine's may choose
ALLOWED_CC = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")


def allow_congestion_control(name: str) -> str | None:
    """Let the hosts' namespaces choose TCP congestion control ``name``.

    Outside the initial namespace Linux sets only the algorithms listed in
    ``net.ipv4.tcp_allowed_congestion_control`` (else EPERM), and that list holds the
    machine's default and reno: on a machine whose default is bbr, a host asked for cubic
    silently kept bbr. Adds ``name`` to the list; returns the list as it was when
    changed, None when ``name`` was allowed. The list as it was is kept in
    ``ALLOWED_CC_BEFORE`` until :func:`restore_congestion_control` (from
    :meth:`Testbed.stop`, or ``streamband testbed clean`` after a ``kill -9``).

    Raises
    ------
    TestbedError
        ``name`` is not available in this kernel.
    """
    allowed = ALLOWED_CC.read_text().split()
    if name in allowed:
        return None
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    if name not in avail:
        raise TestbedError(f"congestion_control: {name!r} is not available in this kernel "
                           f"(available: {' '.join(avail)})")
    if not ALLOWED_CC_BEFORE.exists():  # a kept list is the machine's own: keep it
        ALLOWED_CC_BEFORE.parent.mkdir(parents=True, exist_ok=True)
        ALLOWED_CC_BEFORE.write_text(" ".join(allowed))
    ALLOWED_CC.write_text(" ".join([*allowed, name]))
    return " ".join(allowed)


def restore_congestion_control() -> str | None:
    """Give the machine back the allowed list :func:`allow_congestion_control` widened;
    returns the list restored, None when nothing was kept."""
    try:
        before = ALLOWED_CC_BEFORE.read_text().strip()
    except FileNotFoundError:
        return None
    if before:
        ALLOWED_CC.write_text(before)
    ALLOWED_CC_BEFORE.unlink(missing_ok=True)
    return before or None


def _mininet() -> Any:
    try:
        import mininet.log
        import mininet.net  # noqa: F401
    except ImportError:
        raise TestbedError(
            "Mininet is not importable: apt-get install mininet, and use a venv made from "
            "/usr/bin/python3 with --system-site-packages"
        ) from None
    mininet.log.setLogLevel(os.environ.get("STREAMBAND_MININET_LOG", "critical"))
    return mininet


class Testbed:
    """One emulated network plus (optionally) its controller process.

    ``with Testbed(spec) as tb:`` starts everything and stops it on exit (also after a
    failed start: nothing is left half-up). Node names in Mininet are ``sbhN`` /
    ``sbsN``; use the model's names here (:meth:`ip`, :meth:`node`, :meth:`popen`).

    Parameters
    ----------
    spec : TestbedSpec
        The network (topology, link capacities) and the control plane (controller,
        its API and OpenFlow addresses, cross traffic).
    log_dir : Path, optional
        Where the controller's and the cross traffic's logs go (default: a new
        temporary directory).

    Raises
    ------
    TestbedError
        On entering, if a testbed is already up, OVS or Mininet is missing, or the
        switches do not reach the controller.
    """

    __test__ = False

    def __init__(self, spec: TestbedSpec, log_dir: Path | None = None) -> None:
        self.spec = spec
        self.topo: Topology = spec.build()
        self.host_name = {h: f"{HOST_PREFIX}{i + 1}" for i, h in enumerate(self.topo.hosts)}
        self.switch_name = {s: f"{SWITCH_PREFIX}{i + 1}" for i, s in enumerate(self.topo.switches)}
        self.dpid = {s: i + 1 for i, s in enumerate(self.topo.switches)}
        self.net: Any = None
        self.controller: subprocess.Popen[bytes] | None = None
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="streamband-testbed-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.procs: list[subprocess.Popen[Any]] = []
        #: the services' network beside the links under test (Kafka's broker)
        self.services = ServiceNetwork()
        #: the allowed congestion controls before this testbed added its own (restored)
        self._widened_cc = False  # this testbed widened the machine's allowed list

    # -- names ------------------------------------------------------------------
    def ip(self, host: str) -> str:
        i = self.topo.hosts.index(host) + 1
        return f"10.0.{i // 256}.{i % 256}"

    def mac(self, host: str) -> str:
        i = self.topo.hosts.index(host) + 1
        return f"00:00:00:00:{i // 256:02x}:{i % 256:02x}"

    def node(self, name: str) -> Any:
        return self.net[self.host_name.get(name) or self.switch_name[name]]

    def service_ip(self, host: str) -> str:
        """``host``'s address on the services' network (connected on first use), whose
        traffic crosses none of the links under test
        (:mod:`streamband.testbed.service_network`)."""
        return self.services.attach(host, self.node(host).pid)

    def switch_port(self, host: str) -> str:
        """The switch-side veth of ``host``'s link (its downlink's egress)."""
        h = self.node(host)
        return h.intfList()[0].link.intf2.name

    # -- life cycle -----------------------------------------------------------------
    def start(self) -> Testbed:
        st = read_state()
        if st and _alive(st.get("pid", -1)) and st.get("pid") != os.getpid():
            raise TestbedError(
                f"a testbed is already up (pid {st['pid']}); run `streamband testbed down`"
            )
        ovs.ensure_running()
        try:
            write_state({"pid": os.getpid(), "ready": False, "spec": self.spec.model_dump()})
            if self.spec.controller:
                self._start_controller()
            self._start_net()
            self._wait_connected()
            if self.spec.controller:
                self._register_hosts()
            for ct in self.spec.cross_traffic:
                self.cross_traffic(ct.src, ct.dst, ct.mbps, udp=ct.udp)
            write_state(self.state())
        except BaseException:
            self.stop()
            raise
        return self

    def _start_controller(self) -> None:
        log = open(self.log_dir / "controller.log", "wb")  # noqa: SIM115
        self.controller = subprocess.Popen(
            [sys.executable, "-m", "streamband.cli.controller", "--listen", self.spec.api,
             "--openflow", self.spec.openflow],
            stdout=log, stderr=subprocess.STDOUT, env=marked_env(), start_new_session=True,
        )

    def restart_controller(self) -> None:
        """Kill the controller (SIGKILL, as a crash) and start a new one; the switches
        reconnect and the new controller drops every meter it holds no lease for."""
        if self.controller is not None:
            self.controller.kill()
            self.controller.wait(10)
        self._start_controller()
        self._wait_connected()
        self._register_hosts()
        write_state(self.state())

    def _start_net(self) -> None:
        mn = _mininet()
        from mininet.link import TCLink
        from mininet.node import OVSSwitch, RemoteController
        from mininet.topo import Topo

        topo = self.topo
        of_host, _, of_port = self.spec.openflow.rpartition(":")
        mtopo = Topo()
        for h in topo.hosts:
            mtopo.addHost(self.host_name[h], ip=f"{self.ip(h)}/8", mac=self.mac(h))
        for s in topo.switches:
            mtopo.addSwitch(self.switch_name[s], dpid=f"{self.dpid[s]:016x}",
                            datapath="user", protocols="OpenFlow13", failMode="secure")
        done: set[frozenset[str]] = set()
        for lk in topo.links:
            pair = frozenset((lk.src, lk.dst))
            if pair in done:
                continue
            done.add(pair)
            back = topo.links[topo.link_id(lk.dst, lk.src)]
            a, b = (self.host_name.get(lk.src) or self.switch_name[lk.src],
                    self.host_name.get(lk.dst) or self.switch_name[lk.dst])
            mtopo.addLink(a, b, cls=TCLink,
                          params1={"bw": lk.capacity_bps / 1e6},
                          params2={"bw": back.capacity_bps / 1e6})
        saved = os.environ.get(MARK)
        os.environ[MARK] = mark_value()  # host shells inherit the clean-up mark
        try:
            self.net = mn.net.Mininet(
                topo=mtopo, switch=OVSSwitch, link=TCLink, controller=None,
                autoSetMacs=False, build=False, waitConnected=False,
            )
            self.net.addController("c0", controller=RemoteController, ip=of_host,
                                   port=int(of_port))
            self.net.build()
            self.net.start()
        finally:
            if saved is None:
                os.environ.pop(MARK, None)
            else:
                os.environ[MARK] = saved
        for sw in self.net.switches:
            ovs.vsctl("set", "bridge", sw.name, "external_ids:streamband=1")
        for link in self.net.links:
            for intf in (link.intf1, link.intf2):
                if intf.node in self.net.hosts:
                    intf.node.cmd(f"ethtool -K {intf.name} tx off tso off gso off")
                else:
                    ovs.offloads_off(intf.name, gro=True)
        cc = self.spec.congestion_control
        self._widened_cc = allow_congestion_control(cc) is not None
        for host in self.net.hosts:  # a namespace inherits the machine's default otherwise
            host.cmd(f"sysctl -qw net.ipv4.tcp_congestion_control={cc}")
            got = host.cmd("sysctl -n net.ipv4.tcp_congestion_control").strip()
            if got != cc:
                raise TestbedError(f"congestion_control: host {host.name} runs {got!r}, "
                                   f"expected {cc!r} (sysctl refused it)")
        self.net.staticArp()
        if len(topo.switches) > 1:
            self._install_paths()

    def paths(self, pairs: list[tuple[str, str]]) -> list[list[int]]:
        """The model links each (src_host, dst_host) pair's packets take on this testbed:
        every flow between two hosts shares one path, chosen by ECMP keyed on the pair
        (table 1, :meth:`_install_paths`). A manager's routing matrix on the testbed is
        built from these, not from the simulator's per-flow ECMP, which can pick the
        other core of a two-tier fabric.

        Example: on ``two_tier`` (links numbered as :func:`streamband.model.two_tier`
        adds them), the first host of rack 1 to the first of rack 2 gives
        ``[[4, 0, 9, 13]]``: its uplink, rack1→core1, core1→rack2, the downlink.
        """
        return Router(self.topo, "ecmp").paths(pairs, pairs)

    def _install_paths(self) -> None:
        """Table 1 of every switch: one path per ordered host pair (:meth:`paths`)."""
        topo = self.topo
        out_port: dict[tuple[str, str], int] = {}
        for link in self.net.links:
            for here, there in ((link.intf1, link.intf2), (link.intf2, link.intf1)):
                out_port[(here.node.name, there.node.name)] = here.node.ports[here]
        rules: dict[str, list[str]] = {self.switch_name[s]: [] for s in topo.switches}
        pairs = [(s, d) for s in topo.hosts for d in topo.hosts if s != d]
        for (s, d), path in zip(pairs, self.paths(pairs), strict=True):
            for lid in path[1:]:
                lk = topo.links[lid]
                here = self.switch_name[lk.src]
                there = self.host_name.get(lk.dst) or self.switch_name[lk.dst]
                rules[here].append(
                    f"table=1,priority=10,dl_src={self.mac(s)},dl_dst={self.mac(d)},"
                    f"actions=output:{out_port[(here, there)]}")
        for br, lines in rules.items():
            lines.append("table=1,priority=1,actions=drop")
            with tempfile.NamedTemporaryFile("w", suffix=".flows", delete=False) as f:
                f.write("\n".join(lines) + "\n")
            try:
                subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "add-flows", br, f.name],
                               check=True, capture_output=True, text=True)
            finally:
                os.unlink(f.name)

    def _wait_connected(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        bridges = [sw.name for sw in self.net.switches]
        while time.monotonic() < deadline:
            if self.controller is not None and self.controller.poll() is not None:
                log = (self.log_dir / "controller.log").read_text()[-500:]
                raise TestbedError(f"controller exited: {log.strip()}")
            if self._connected(bridges):
                return
            time.sleep(0.2)
        raise TestbedError(f"switches did not connect to the controller at {self.spec.openflow}")

    def _register_hosts(self) -> None:
        """Tell the controller where every host attaches, so that a meter without a
        dpid goes on the sender's edge switch (the first switch of its path)."""
        from streamband.sdn.client import ControllerClient, ControllerError

        client = ControllerClient(self.spec.api)
        try:
            client.wait_ready(len(self.topo.switches))
            client.put_hosts({self.ip(h): self.edge_dpid(h) for h in self.topo.hosts},
                             replace=True)
        except ControllerError as exc:
            raise TestbedError(str(exc)) from None
        finally:
            client.close()

    def edge_dpid(self, host: str) -> int:
        """The dpid of ``host``'s edge switch (where its flows are metered)."""
        return self.dpid[self.topo.host_switch(host)]

    @staticmethod
    def _connected(bridges: list[str]) -> bool:
        for b in bridges:
            uuids = ovs.vsctl("get", "bridge", b, "controller", check=False).strip("[]\n ")
            if not uuids:
                return False
            for u in uuids.split(","):
                if ovs.vsctl("get", "controller", u.strip(), "is_connected",
                             check=False).strip() != "true":
                    return False
        return True

    def link_ports(self) -> list[Any]:
        """Where each model link is counted (link id order): a host's uplink enters
        its switch at the host's port (rx), every other link leaves a switch (tx)."""
        from streamband.loop.openflow import PortRef

        intf: dict[tuple[str, str], str] = {}
        for link in self.net.links:
            for here, there in ((link.intf1, link.intf2), (link.intf2, link.intf1)):
                intf[(here.node.name, there.node.name)] = here.name
        refs = []
        for lk in self.topo.links:
            if self.topo.is_host(lk.src):
                sw, other = self.switch_name[lk.dst], self.host_name[lk.src]
                refs.append(PortRef(self.dpid[lk.dst], intf[(sw, other)], "rx"))
            else:
                sw = self.switch_name[lk.src]
                other = self.host_name.get(lk.dst) or self.switch_name[lk.dst]
                refs.append(PortRef(self.dpid[lk.src], intf[(sw, other)], "tx"))
        return refs

    def state(self) -> dict[str, Any]:
        """What `status` shows and clean-up and other processes need."""
        return {
            "pid": os.getpid(),
            "ready": True,
            "spec": self.spec.model_dump(),
            "api": self.spec.api if self.spec.controller else None,
            "controller_pid": self.controller.pid if self.controller else None,
            "hosts": {h: {"node": self.host_name[h], "ip": self.ip(h), "mac": self.mac(h),
                          "pid": self.node(h).pid, "switch_port": self.switch_port(h),
                          "dpid": self.edge_dpid(h)}
                      for h in self.topo.hosts},
            "switches": {s: {"bridge": self.switch_name[s], "dpid": self.dpid[s]}
                         for s in self.topo.switches},
            "log_dir": str(self.log_dir),
        }

    def popen(self, host: str, cmd: list[str], **kw: Any) -> subprocess.Popen[Any]:
        """Run ``cmd`` in ``host``'s namespace, marked for clean-up."""
        kw.setdefault("env", marked_env(kw.pop("extra_env", None)))
        p = self.node(host).popen(cmd, **kw)
        self.procs.append(p)
        return p

    def cross_traffic(self, src: str, dst: str, mbps: float, udp: bool = True,
                      port: int = 5301, seconds: int = 86400) -> None:
        """iperf3 traffic the application does not own (000 §V-B2's cross traffic)."""
        self.popen(dst, ["iperf3", "-s", "-p", str(port)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        cmd = ["iperf3", "-c", self.ip(dst), "-p", str(port), "-t", str(seconds),
               "-b", f"{mbps}M"] + (["-u"] if udp else [])
        self.popen(src, cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.procs.clear()
        self.services.remove()
        if self.net is not None:
            try:
                self.net.stop()
            finally:
                self.net = None
        if self.controller is not None:
            self.controller.kill()
            self.controller.wait(10)
            self.controller = None
        if self._widened_cc:
            restore_congestion_control()
            self._widened_cc = False
        st = read_state()
        if st and st.get("pid") == os.getpid():
            from streamband.testbed.registry import STATE

            STATE.unlink(missing_ok=True)

    def __enter__(self) -> Testbed:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError, OSError):
        return False
    return True


def started(spec: TestbedSpec, log_dir: Path) -> Testbed:
    """A started testbed of ``spec`` logging to ``log_dir`` (what a system that runs on
    the testbed's hosts, e.g. :class:`streamband.swift.session.Session`, is given)."""
    return Testbed(spec, log_dir=log_dir).start()

"""The os-ken application of tier 2 (000 §V-B, Fig. 6): forwarding, the bandwidth
enforcer (one OpenFlow 1.3 meter per flow, §V-B1), the link statistics collector
(port and flow counters polled every second, §V-B2, §IV-A2) and meter leases.

Pipeline on every switch:

- table 0: one rule per managed flow (IPv4 pair + transport ports), priority 100,
  ``meter:N`` (drop band, kbps) then ``goto_table:1``; a rule without a meter only
  counts. Table miss: ``goto_table:1``.
- table 1: forwarding. Table miss is ``NORMAL`` (OVS's own L2 learning); on
  topologies with several paths the testbed adds per-host-pair path rules from
  :class:`streamband.model.routing.Router` above it and a drop rule for the rest.

Where a flow is metered: at the switch given by ``dpid``; without one, at the
sender's edge switch (the first switch of the flow's path), looked up in the host
attachments the testbed registers (``PUT /v1/hosts``: IP -> dpid); with a single
switch, that switch.

Strict priority classes (000 §VII, 004) are not OpenFlow here: see
:mod:`streamband.sdn.priority` (HTB ``prio`` classes on the switch-side veth,
u32 on the 5-tuple), because ``set_queue`` does not reach the kernel's queues on
the userspace datapath.

Leases (fail-open): every managed flow carries an expiry; the manager refreshes it
with every allocation. When it lapses (the manager died) the rule and its meter are
deleted and the flow falls back to plain TCP sharing.

Thread model: os-ken's native hub (threads). The HTTP API thread calls the public
methods below; they serialize the OpenFlow messages of a whole batch into one
buffer, send it, and wait for a barrier reply, so a call returns once the switch
has applied every change.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.controller import Datapath
from os_ken.controller.handler import (
    CONFIG_DISPATCHER,
    DEAD_DISPATCHER,
    MAIN_DISPATCHER,
    set_ev_cls,
)
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_3

from streamband.errors import RunError
from streamband.sdn.flowkey import FlowKey
from streamband.sdn.priority import PortShape, PriorityError, PriorityQueues
from streamband.sdn.shaper import FlowShaper

LOG = logging.getLogger("streamband.sdn")

METER_TABLE, FORWARD_TABLE = 0, 1
FLOW_PRIORITY = 100
COOKIE_FLAG = 0x5B00_0000_0000_0000  # marks the rules this app manages
COOKIE_MASK = 0xFF00_0000_0000_0000


class EnforcerError(RunError):
    """A request the switches cannot carry out (no switch, switch error, timeout)."""


@dataclass
class Settings:
    """Tunables of the app (set by :mod:`streamband.sdn.server` before start)."""

    poll_interval_s: float = 1.0
    lease_check_s: float = 0.05
    burst_s: float = float(os.environ.get("STREAMBAND_METER_BURST_S", "0.3"))  # s of rate
    min_burst_kbit: int = 64
    barrier_timeout_s: float = 5.0


SETTINGS = Settings()


@dataclass
class ManagedFlow:
    """One flow rule in table 0 and, when capped, its meter."""

    cookie: int
    dpid: int
    flow: FlowKey
    rate_bps: float | None  # None: counted only, no meter
    meter_id: int | None
    expires: float  # time.monotonic() deadline
    bytes: int = 0
    packets: int = 0
    bps: float = 0.0
    _last: tuple[float, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.cookie & ~COOKIE_MASK,
            "dpid": self.dpid,
            "flow": self.flow.model_dump(),
            "rate_bps": self.rate_bps,
            "meter_id": self.meter_id,
            "lease_left_s": round(self.expires - time.monotonic(), 3),
            "bytes": self.bytes,
            "packets": self.packets,
            "bps": self.bps,
        }


@dataclass
class PortCounters:
    """Counters of one switch port and the rates over the last poll."""

    dpid: int
    port_no: int
    name: str = ""
    rx_bytes: int = 0
    tx_bytes: int = 0
    rx_packets: int = 0
    tx_packets: int = 0
    rx_bps: float = 0.0
    tx_bps: float = 0.0
    time: float = 0.0
    _last: tuple[float, int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in (
                "dpid", "port_no", "name", "rx_bytes", "tx_bytes", "rx_packets",
                "tx_packets", "rx_bps", "tx_bps", "time",
            )
        }


@dataclass
class _Waiter:
    event: threading.Event = field(default_factory=threading.Event)
    body: list[Any] = field(default_factory=list)
    error: str | None = None


class StreambandApp(app_manager.OSKenApp):
    """Forwarding + bandwidth enforcer + link statistics collector (000 §V-B)."""

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = SETTINGS
        self.lock = threading.RLock()
        self.datapaths: dict[int, Datapath] = {}
        self.ports: dict[tuple[int, int], PortCounters] = {}
        self.flows: dict[tuple[int, tuple[Any, ...]], ManagedFlow] = {}
        self._free_meters: dict[int, list[int]] = {}
        self._next_meter: dict[int, int] = {}
        self._next_cookie = 1
        self._waiters: dict[int, _Waiter] = {}
        self._errors: dict[int, str] = {}
        self.expired_total = 0
        self.hosts: dict[str, int] = {}  # host IP -> dpid of its edge switch
        self.priorities = PriorityQueues()
        self.shaper = FlowShaper()
        self.threads.append(hub.spawn(self._poll_loop))
        self.threads.append(hub.spawn(self._lease_loop))

    # -- switch life cycle ------------------------------------------------------
    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def _features(self, ev: Any) -> None:
        dp = ev.msg.datapath
        ofp, p = dp.ofproto, dp.ofproto_parser
        # a fresh start: no stale meters or managed rules from an earlier controller
        dp.send_msg(p.OFPFlowMod(dp, table_id=METER_TABLE, command=ofp.OFPFC_DELETE,
                                 out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                 cookie=COOKIE_FLAG, cookie_mask=COOKIE_MASK))
        dp.send_msg(p.OFPMeterMod(dp, command=ofp.OFPMC_DELETE, meter_id=ofp.OFPM_ALL))
        dp.send_msg(p.OFPFlowMod(dp, table_id=METER_TABLE, priority=0, match=p.OFPMatch(),
                                 instructions=[p.OFPInstructionGotoTable(FORWARD_TABLE)]))
        normal = [p.OFPActionOutput(ofp.OFPP_NORMAL)]
        dp.send_msg(p.OFPFlowMod(dp, table_id=FORWARD_TABLE, priority=0, match=p.OFPMatch(),
                                 instructions=[p.OFPInstructionActions(
                                     ofp.OFPIT_APPLY_ACTIONS, normal)]))
        dp.send_msg(p.OFPPortDescStatsRequest(dp, 0))
        with self.lock:
            self.datapaths[dp.id] = dp
            self._free_meters[dp.id] = []
            self._next_meter[dp.id] = 1
            for key in [k for k in self.flows if k[0] == dp.id]:
                del self.flows[key]
        LOG.info("switch %016x connected", dp.id)

    @set_ev_cls(ofp_event.EventOFPStateChange, [DEAD_DISPATCHER])
    def _gone(self, ev: Any) -> None:
        dp = ev.datapath
        if dp.id is None:
            return
        with self.lock:
            if self.datapaths.get(dp.id) is dp:
                del self.datapaths[dp.id]
                for key in [k for k in self.flows if k[0] == dp.id]:
                    del self.flows[key]
                for key in [k for k in self.ports if k[0] == dp.id]:
                    del self.ports[key]
        LOG.info("switch %016x gone", dp.id)

    @set_ev_cls(ofp_event.EventOFPPortDescStatsReply, MAIN_DISPATCHER)
    def _port_desc(self, ev: Any) -> None:
        dpid = ev.msg.datapath.id
        with self.lock:
            for port in ev.msg.body:
                pc = self.ports.setdefault((dpid, port.port_no), PortCounters(dpid, port.port_no))
                pc.name = port.name.decode() if isinstance(port.name, bytes) else port.name
        self._reply(ev.msg)

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def _port_status(self, ev: Any) -> None:
        port, dpid = ev.msg.desc, ev.msg.datapath.id
        with self.lock:
            if ev.msg.reason == ev.msg.datapath.ofproto.OFPPR_DELETE:
                self.ports.pop((dpid, port.port_no), None)
            else:
                pc = self.ports.setdefault((dpid, port.port_no), PortCounters(dpid, port.port_no))
                pc.name = port.name.decode() if isinstance(port.name, bytes) else port.name

    # -- replies and errors -----------------------------------------------------
    def _reply(self, msg: Any) -> None:
        w = self._waiters.get(msg.xid)
        if w is None:
            return
        w.body.extend(msg.body if isinstance(msg.body, list) else [msg.body])
        if not (getattr(msg, "flags", 0) & ofproto_v1_3.OFPMPF_REPLY_MORE):
            w.event.set()

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def _barrier(self, ev: Any) -> None:
        w = self._waiters.get(ev.msg.xid)
        if w is not None:
            w.event.set()

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def _error(self, ev: Any) -> None:
        m = ev.msg
        text = f"switch {m.datapath.id:016x}: OpenFlow error type={m.type} code={m.code}"
        LOG.warning("%s (xid %s)", text, m.xid)
        self._errors[m.xid] = text
        if len(self._errors) > 10000:
            self._errors.clear()

    def _request(self, dp: Datapath, msg: Any, timeout: float | None = None) -> list[Any]:
        """Send a multipart request and wait for every part of the reply."""
        w = _Waiter()
        dp.set_xid(msg)
        self._waiters[msg.xid] = w
        try:
            dp.send_msg(msg)
            if not w.event.wait(timeout or self.settings.barrier_timeout_s):
                raise EnforcerError(f"switch {dp.id:016x}: no reply to {type(msg).__name__}")
            return w.body
        finally:
            self._waiters.pop(msg.xid, None)

    def _send_batch(self, dp: Datapath, msgs: list[Any]) -> None:
        """Send ``msgs`` as one buffer, then a barrier; raise on any switch error."""
        p = dp.ofproto_parser
        xids = []
        chunks = []
        for m in msgs:
            xids.append(dp.set_xid(m))
            m.serialize()
            chunks.append(bytes(m.buf))
        barrier = p.OFPBarrierRequest(dp)
        dp.set_xid(barrier)
        barrier.serialize()
        chunks.append(bytes(barrier.buf))
        w = _Waiter()
        self._waiters[barrier.xid] = w
        try:
            if not dp.send(b"".join(chunks)):
                raise EnforcerError(f"switch {dp.id:016x}: disconnected")
            if not w.event.wait(self.settings.barrier_timeout_s):
                raise EnforcerError(f"switch {dp.id:016x}: no barrier reply")
        finally:
            self._waiters.pop(barrier.xid, None)
        errs = [self._errors.pop(x) for x in xids if x in self._errors]
        if errs:
            raise EnforcerError(f"{len(errs)} of {len(msgs)} messages failed: {errs[0]}")

    # -- the bandwidth enforcer ---------------------------------------------------
    def _dp(self, dpid: int | None, flow: FlowKey | None = None) -> Datapath:
        if dpid is None and flow is not None and flow.src_ip in self.hosts:
            dpid = self.hosts[flow.src_ip]  # the sender's edge switch
        if dpid is None:
            if len(self.datapaths) != 1:
                raise EnforcerError(
                    f"dpid: required when {len(self.datapaths)} switches are connected "
                    "and the sender's switch is not registered (PUT /v1/hosts)"
                )
            return next(iter(self.datapaths.values()))
        try:
            return self.datapaths[dpid]
        except KeyError:
            raise EnforcerError(f"dpid: switch {dpid:016x} is not connected") from None

    def _meter_band(self, dp: Datapath, rate_bps: float) -> tuple[int, list[Any]]:
        ofp, p = dp.ofproto, dp.ofproto_parser
        kbps = max(1, int(round(rate_bps / 1000.0)))
        burst = max(self.settings.min_burst_kbit, int(kbps * self.settings.burst_s))
        flags = ofp.OFPMF_KBPS | ofp.OFPMF_BURST
        return flags, [p.OFPMeterBandDrop(rate=kbps, burst_size=burst)]

    def _match(self, dp: Datapath, f: FlowKey) -> Any:
        fields: dict[str, Any] = {"eth_type": 0x0800, "ipv4_src": f.src_ip, "ipv4_dst": f.dst_ip}
        fields["ip_proto"] = 6 if f.proto == "tcp" else 17
        if f.src_port:
            fields[f"{f.proto}_src"] = f.src_port
        if f.dst_port:
            fields[f"{f.proto}_dst"] = f.dst_port
        return dp.ofproto_parser.OFPMatch(**fields)

    def _flow_mod(self, dp: Datapath, mf: ManagedFlow, command: int) -> Any:
        ofp, p = dp.ofproto, dp.ofproto_parser
        inst: list[Any] = []
        if mf.meter_id is not None:
            inst.append(p.OFPInstructionMeter(mf.meter_id, ofp.OFPIT_METER))
        inst.append(p.OFPInstructionGotoTable(FORWARD_TABLE))
        return p.OFPFlowMod(
            dp, cookie=mf.cookie, table_id=METER_TABLE, command=command,
            priority=FLOW_PRIORITY, match=self._match(dp, mf.flow), instructions=inst,
            out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
            flags=ofp.OFPFF_SEND_FLOW_REM if command == ofp.OFPFC_ADD else 0,
        )

    def _alloc_meter(self, dpid: int) -> int:
        free = self._free_meters[dpid]
        if free:
            return free.pop()
        mid = self._next_meter[dpid]
        self._next_meter[dpid] = mid + 1
        return mid

    def set_flows(
        self, items: list[tuple[FlowKey, float | None, int | None]], lease_s: float,
        replace: bool = False,
    ) -> dict[str, Any]:
        """Install, modify or uncap the rules of ``items`` ``(flow, rate_bps, dpid)``
        (``rate_bps`` None: count only) and renew their leases; with ``replace``,
        delete every managed flow not listed. Returns counts and the time spent."""
        t0 = time.perf_counter()
        counts = {"installed": 0, "modified": 0, "unchanged": 0, "removed": 0}
        with self.lock:
            expires = time.monotonic() + lease_s
            batches: dict[int, list[Any]] = {}
            seen: set[tuple[int, tuple[Any, ...]]] = set()
            for flow, rate, dpid in items:
                dp = self._dp(dpid, flow)
                ofp, p = dp.ofproto, dp.ofproto_parser
                msgs = batches.setdefault(dp.id, [])
                key = (dp.id, flow.key())
                seen.add(key)
                mf = self.flows.get(key)
                if mf is None:
                    mf = ManagedFlow(COOKIE_FLAG | self._next_cookie, dp.id, flow, rate, None,
                                     expires)
                    self._next_cookie += 1
                    if rate is not None:
                        mf.meter_id = self._alloc_meter(dp.id)
                        flags, bands = self._meter_band(dp, rate)
                        msgs.append(p.OFPMeterMod(dp, ofp.OFPMC_ADD, flags, mf.meter_id, bands))
                    msgs.append(self._flow_mod(dp, mf, ofp.OFPFC_ADD))
                    self.flows[key] = mf
                    counts["installed"] += 1
                    continue
                mf.expires = expires
                if rate == mf.rate_bps:
                    counts["unchanged"] += 1
                    continue
                counts["modified"] += 1
                if rate is not None and mf.meter_id is not None:
                    flags, bands = self._meter_band(dp, rate)
                    msgs.append(p.OFPMeterMod(dp, ofp.OFPMC_MODIFY, flags, mf.meter_id, bands))
                elif rate is not None:
                    mf.meter_id = self._alloc_meter(dp.id)
                    flags, bands = self._meter_band(dp, rate)
                    msgs.append(p.OFPMeterMod(dp, ofp.OFPMC_ADD, flags, mf.meter_id, bands))
                    msgs.append(self._flow_mod(dp, mf, ofp.OFPFC_MODIFY_STRICT))
                else:
                    old = mf.meter_id
                    mf.meter_id = None
                    msgs.append(self._flow_mod(dp, mf, ofp.OFPFC_MODIFY_STRICT))
                    msgs.append(p.OFPMeterMod(dp, ofp.OFPMC_DELETE, 0, old, []))
                    self._free_meters[dp.id].append(old)
                mf.rate_bps = rate
            if replace:
                gone = [k for k in self.flows if k not in seen]
                counts["removed"] = len(gone)
                for k in gone:
                    self._removal(self.flows.pop(k), batches)
            for dpid, msgs in batches.items():
                if msgs:
                    self._send_batch(self.datapaths[dpid], msgs)
        counts["elapsed_ms"] = (time.perf_counter() - t0) * 1000.0  # type: ignore[assignment]
        return counts

    def _removal(self, mf: ManagedFlow, batches: dict[int, list[Any]]) -> None:
        dp = self.datapaths.get(mf.dpid)
        if dp is None:
            return
        ofp, p = dp.ofproto, dp.ofproto_parser
        msgs = batches.setdefault(dp.id, [])
        msgs.append(p.OFPFlowMod(
            dp, cookie=mf.cookie, cookie_mask=0xFFFF_FFFF_FFFF_FFFF, table_id=METER_TABLE,
            command=ofp.OFPFC_DELETE_STRICT, priority=FLOW_PRIORITY,
            match=self._match(dp, mf.flow), out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
        if mf.meter_id is not None:
            msgs.append(p.OFPMeterMod(dp, ofp.OFPMC_DELETE, 0, mf.meter_id, []))
            self._free_meters[dp.id].append(mf.meter_id)

    def delete_flows(self, ids: list[int] | None = None) -> int:
        """Delete the managed flows with these ids (all when None)."""
        with self.lock:
            keys = [k for k, mf in self.flows.items()
                    if ids is None or (mf.cookie & ~COOKIE_MASK) in ids]
            batches: dict[int, list[Any]] = {}
            for k in keys:
                self._removal(self.flows.pop(k), batches)
            for dpid, msgs in batches.items():
                self._send_batch(self.datapaths[dpid], msgs)
            return len(keys)

    def renew(self, lease_s: float) -> int:
        """Renew every lease, meters' and priority classes' (the manager's
        keep-alive); returns how many."""
        with self.lock:
            deadline = time.monotonic() + lease_s
            for mf in self.flows.values():
                mf.expires = deadline
            n = len(self.flows)
        return n + self.priorities.renew(lease_s) + self.shaper.renew(lease_s)

    def _lease_loop(self) -> None:
        while True:
            hub.sleep(self.settings.lease_check_s)
            now = time.monotonic()
            try:
                self._expire_meters(now)
            except Exception:  # keep the loop alive
                LOG.exception("lease loop")
            for what, trees in (("priority classes", self.priorities),
                                ("rate classes", self.shaper)):
                try:
                    n = trees.expire(now)
                    if n:
                        LOG.info("lease expired: %d flows out of their %s", n, what)
                except Exception:
                    LOG.exception("lease loop (%s)", what)

    def _expire_meters(self, now: float) -> None:
        with self.lock:
            dead = [k for k, mf in self.flows.items() if mf.expires <= now]
            if not dead:
                return
            batches: dict[int, list[Any]] = {}
            for k in dead:
                self._removal(self.flows.pop(k), batches)
            self.expired_total += len(dead)
            for dpid, msgs in batches.items():
                self._send_batch(self.datapaths[dpid], msgs)
        LOG.info("lease expired: removed %d flows (fail-open)", len(dead))

    def set_hosts(self, hosts: dict[str, int], replace: bool = False) -> int:
        """Register where hosts attach (IP -> dpid of the edge switch)."""
        with self.lock:
            if replace:
                self.hosts.clear()
            self.hosts.update(hosts)
            return len(self.hosts)

    # -- strict priority classes (000 §VII, 004) ----------------------------------
    def port_name(self, dpid: int, port_no: int) -> str:
        """The interface name of a switch port (from the port descriptions)."""
        with self.lock:
            pc = self.ports.get((dpid, port_no))
        if pc is None or not pc.name:
            raise EnforcerError(f"port: switch {dpid:016x} has no port {port_no}")
        return pc.name

    def known_port(self, name: str) -> bool:
        with self.lock:
            return any(pc.name == name for pc in self.ports.values())

    def set_classes(self, items: list[tuple[str, FlowKey, int, float | None]],
                    lease_s: float,
                    shapes: dict[str, PortShape] | None = None) -> dict[str, Any]:
        """Put each ``(egress port name, flow, class 0..7, link rate or None)`` in its
        strict-priority class (0 highest) for ``lease_s`` (renewed like the meters'),
        the ports in ``shapes`` built (or reshaped) as given there."""
        self._check_ports({dev for dev, *_ in items}, self.shaper.ports, "rate classes")
        try:
            return self.priorities.assign(items, lease_s, shapes)
        except PriorityError as exc:
            raise EnforcerError(str(exc)) from None

    def set_rates(self, items: list[tuple[str, FlowKey, float, float | None]],
                  lease_s: float) -> dict[str, Any]:
        """Give each ``(egress port name, flow, rate bit/s, link rate or None)`` its own
        HTB leaf at that rate (:mod:`streamband.sdn.shaper`) for ``lease_s`` (renewed like
        the meters')."""
        self._check_ports({dev for dev, *_ in items}, self.priorities.ports,
                          "priority classes")
        try:
            return self.shaper.assign(items, lease_s)
        except PriorityError as exc:
            raise EnforcerError(str(exc)) from None

    def _check_ports(self, devs: set[str], other: dict[str, Any], what: str) -> None:
        """Raise EnforcerError for a port no switch has, or one that holds ``other``'s
        tree (``what``): a port has one tree at a time."""
        for dev in sorted(devs):
            if not self.known_port(dev):
                raise EnforcerError(f"port: {dev!r} is not a port of a connected switch")
            if dev in other:
                raise EnforcerError(f"port: {dev!r} holds {what}; delete them first")

    def flow_list(self) -> list[dict[str, Any]]:
        with self.lock:
            return [mf.as_dict() for mf in self.flows.values()]

    # -- the link statistics collector ------------------------------------------------
    def poll(self, dpid: int | None = None) -> None:
        """Read port and managed-flow counters of one switch (all when None) now."""
        for dp in [self._dp(dpid)] if dpid is not None else list(self.datapaths.values()):
            p, ofp = dp.ofproto_parser, dp.ofproto
            ports = self._request(dp, p.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY))
            flows = self._request(dp, p.OFPFlowStatsRequest(
                dp, 0, METER_TABLE, ofp.OFPP_ANY, ofp.OFPG_ANY, COOKIE_FLAG, COOKIE_MASK,
                p.OFPMatch()))
            self._account(dp.id, ports, flows)

    def _account(self, dpid: int, ports: list[Any], flows: list[Any]) -> None:
        with self.lock:
            for st in ports:
                pc = self.ports.setdefault((dpid, st.port_no), PortCounters(dpid, st.port_no))
                t = st.duration_sec + st.duration_nsec * 1e-9 or time.monotonic()
                if pc._last is not None and t > pc._last[0]:
                    dt = t - pc._last[0]
                    pc.rx_bps = 8.0 * (st.rx_bytes - pc._last[1]) / dt
                    pc.tx_bps = 8.0 * (st.tx_bytes - pc._last[2]) / dt
                pc._last = (t, st.rx_bytes, st.tx_bytes)
                pc.rx_bytes, pc.tx_bytes = st.rx_bytes, st.tx_bytes
                pc.rx_packets, pc.tx_packets = st.rx_packets, st.tx_packets
                pc.time = time.time()
            by_cookie = {mf.cookie: mf for mf in self.flows.values() if mf.dpid == dpid}
            for st in flows:
                mf = by_cookie.get(st.cookie)
                if mf is None:
                    continue
                t = st.duration_sec + st.duration_nsec * 1e-9
                if mf._last is not None and t > mf._last[0]:
                    mf.bps = 8.0 * (st.byte_count - mf._last[1]) / (t - mf._last[0])
                mf._last = (t, st.byte_count)
                mf.bytes, mf.packets = st.byte_count, st.packet_count

    @set_ev_cls(ofp_event.EventOFPPortStatsReply, MAIN_DISPATCHER)
    def _port_stats(self, ev: Any) -> None:
        self._reply(ev.msg)

    @set_ev_cls(ofp_event.EventOFPFlowStatsReply, MAIN_DISPATCHER)
    def _flow_stats(self, ev: Any) -> None:
        self._reply(ev.msg)

    def _poll_loop(self) -> None:
        while True:
            hub.sleep(self.settings.poll_interval_s)
            try:
                self.poll()
            except Exception as exc:  # a slow switch must not stop polling
                LOG.warning("statistics poll: %s", exc)

    def port_list(self) -> list[dict[str, Any]]:
        with self.lock:
            return [pc.as_dict() for pc in sorted(self.ports.values(),
                                                  key=lambda c: (c.dpid, c.port_no))]

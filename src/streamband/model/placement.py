"""Instance placement: which host runs each operator instance (000 §II-A4, 001 §II-B).

A placement is a dict ``instance id -> host``.
"""

from __future__ import annotations

import itertools
import random as _random
import re

from streamband.errors import SpecError, nearest
from streamband.model.app import App
from streamband.model.topology import Topology


class PlacementError(SpecError):
    """A placement that names a missing host or instance, or misses an instance."""


def _check_hosts(hosts: list[str]) -> None:
    if not hosts:
        raise PlacementError("placement hosts: expected at least one host")


def round_robin(app: App, hosts: list[str]) -> dict[str, str]:
    """Instances in declared operator order dealt over the hosts in turn (000 §II-A4:
    Split1, JobExtractor1, Count1 on M1; Split2, JobExtractor2, Count2 on M2; ...)."""
    _check_hosts(hosts)
    return {iid: hosts[k % len(hosts)] for k, iid in enumerate(app.instances())}


def random_placement(app: App, hosts: list[str], seed: int = 0) -> dict[str, str]:
    """Each instance on a host drawn uniformly at random (seeded)."""
    _check_hosts(hosts)
    rng = _random.Random(seed)
    return {iid: rng.choice(hosts) for iid in app.instances()}


def explicit(app: App, hosts: list[str], mapping: dict[str, str]) -> dict[str, str]:
    """A given map; keys are instance ids (``B[0]``) or operator names (all instances)."""
    _check_hosts(hosts)
    known = set(hosts)
    out: dict[str, str] = {}
    for key, host in mapping.items():
        if host not in known:
            raise PlacementError(
                f"placement.map[{key!r}]: unknown host {host!r}, expected one of {hosts}"
            )
        if "[" in key:
            m = re.fullmatch(r"(.+)\[(\d+)\]", key)
            op, idx = (m.group(1), int(m.group(2))) if m else (key, -1)
            if m is None or op not in {o.name for o in app.operators} \
                    or idx >= app.op(op).parallelism:
                raise PlacementError(f"placement.map[{key!r}]: no such instance, expected "
                                     f"OPERATOR[i] with i below the operator's parallelism")
            out[key] = host
        else:
            if key not in {o.name for o in app.operators}:
                names = [o.name for o in app.operators]
                raise PlacementError(f"placement.map[{key!r}]: no such operator, expected one "
                                     f"of {', '.join(names)}{nearest(key, names)}")
            for i in range(app.op(key).parallelism):
                out.setdefault(f"{key}[{i}]", host)
    missing = [iid for iid in app.instances() if iid not in out]
    if missing:
        raise PlacementError(f"placement.map: instances without a host: {missing}")
    return out


def bottleneck_score(app: App, topo: Topology, placement: dict[str, str]) -> tuple:
    """001 §III-C's criterion on the hosts' links: the link whose crossing flows carry
    the largest aggregate tuple size per source tuple, then the ratio of the largest
    to the smallest of them; lower is better."""
    on_link = {lk: v for lk, v in link_loads(app, topo, placement).items()
               if topo.links[lk].kind != "internal"}
    worst = max(
        ((sum(v), max(v) / min(v) if min(v) > 0 else float("inf")) for v in on_link.values()),
        default=(0.0, 1.0),
    )
    total = sum(sum(v) for v in on_link.values())
    return (round(worst[0], 9), round(worst[1], 9), round(total, 9))


def link_loads(app: App, topo: Topology, placement: dict[str, str]) -> dict[int, list[float]]:
    """Bytes per source tuple that each flow puts on each link it crosses."""
    from streamband.model.flows import FlowMap  # local: flows imports placement users

    fm = FlowMap(app, topo, placement)  # the same ECMP paths as the simulator
    per_tuple = fm.nominal_rates() * [f.tuple_bytes for f in fm.flows]
    src_rate = sum((o.rate_tps or 0.0) for o in app.operators if o.kind == "source") or 1.0
    on_link: dict[int, list[float]] = {}
    for f, b in zip(fm.flows, per_tuple, strict=True):
        for lk in f.links:
            on_link.setdefault(lk, []).append(b / src_rate)
    return on_link


def sustainable_rate(app: App, topo: Topology, placement: dict[str, str]) -> float:
    """The common rate: the largest source rate (tuples/s, all sources together) at which
    every flow can progress together, as app-aware allocation makes the flows of an
    aligned DAG do: link l needs r x (bytes per source tuple on l) <= C_l, so
    r* = min_l C_l / load_l (8 bits a byte). Parts of the DAG that do not wait for
    each other (two sinks) may each go faster; infinite when no flow crosses a link."""
    caps = topo.capacities
    return min(
        (caps[lk] / 8.0 / sum(v) for lk, v in link_loads(app, topo, placement).items() if sum(v)),
        default=float("inf"),
    )


#: largest number of candidate placements searched exhaustively
EXHAUSTIVE = 20_000


def _balanced_search(app: App, hosts: list[str], score, start: dict[str, str]) -> dict[str, str]:
    """Lowest ``score`` over placements where every host runs at most
    ceil(instances / hosts): exhaustive when there are at most ``EXHAUSTIVE`` candidate
    maps (hosts are symmetric, so the first instance is fixed), else pairwise swaps and
    moves from ``start`` until no neighbour is better."""
    iids = app.instances()
    cap = -(-len(iids) // len(hosts))
    if len(hosts) ** (len(iids) - 1) <= EXHAUSTIVE:
        best, best_score = None, None
        for combo in itertools.product(range(len(hosts)), repeat=len(iids)):
            if combo[0] != 0:
                break
            if max(combo.count(h) for h in set(combo)) > cap:
                continue
            pl = {iid: hosts[h] for iid, h in zip(iids, combo, strict=True)}
            sc = score(pl)
            if best_score is None or sc < best_score:
                best, best_score = pl, sc
        assert best is not None
        return best
    best, best_score = dict(start), score(start)
    improved = True
    while improved:
        improved = False
        for a in iids:
            for cand in _neighbours(best, a, iids, hosts, cap):
                sc = score(cand)
                if sc < best_score:
                    best, best_score, improved = cand, sc, True
                    break
    return best


def _neighbours(pl: dict[str, str], a: str, iids: list[str], hosts: list[str], cap: int):
    load = {h: 0 for h in hosts}
    for h in pl.values():
        load[h] += 1
    for h in hosts:
        if h != pl[a] and load[h] < cap:
            cand = dict(pl)
            cand[a] = h
            yield cand
    for b in iids:
        if pl[b] != pl[a]:
            cand = dict(pl)
            cand[a], cand[b] = pl[b], pl[a]
            yield cand


def joint(app: App, topo: Topology, hosts: list[str] | None = None) -> dict[str, str]:
    """Placement chosen jointly with the bandwidth allocation (the future work of 001
    §III-E): the load-balanced placement with the largest :func:`sustainable_rate`,
    i.e. the one whose busiest link, per unit of capacity, carries the fewest bytes per
    source tuple once app-aware allocation makes every flow progress together; ties
    go to fewer bytes on the network. 001's conclusion is the special case: with
    weight-based allocation the ratio of tuple sizes no longer matters, only the
    aggregate, and here capacities count too."""
    hosts = hosts or list(topo.hosts)
    _check_hosts(hosts)
    caps = topo.capacities

    def score(pl: dict[str, str]) -> tuple:
        loads = link_loads(app, topo, pl)
        worst = max((sum(v) * 8.0 / caps[lk] for lk, v in loads.items()), default=0.0)
        return (round(worst, 12), round(sum(sum(v) for v in loads.values()), 9))

    return _balanced_search(app, hosts, score, round_robin(app, hosts))


def tuple_size_rule(app: App, topo: Topology, hosts: list[str] | None = None) -> dict[str, str]:
    """001 §III-C: among load-balanced placements (every host runs at most
    ceil(instances / hosts)), pick the one whose bottleneck links carry the smallest
    aggregate of tuple sizes, breaking ties by the smaller ratio of tuple sizes.

    """
    hosts = hosts or list(topo.hosts)
    _check_hosts(hosts)
    return _balanced_search(
        app, hosts, lambda pl: bottleneck_score(app, topo, pl), round_robin(app, hosts)
    )

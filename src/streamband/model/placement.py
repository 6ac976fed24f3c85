"""Instance placement: which host runs each operator instance (000 §II-A4, 001 §II-B).

A placement is a dict ``instance id -> host``.
"""

from __future__ import annotations

import itertools
import random as _random

from streamband.model.app import App, split_instance
from streamband.model.topology import Topology


class PlacementError(ValueError):
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
            op, idx = split_instance(key)
            if op not in {o.name for o in app.operators} or idx >= app.op(op).parallelism:
                raise PlacementError(f"placement.map[{key!r}]: no such instance")
            out[key] = host
        else:
            if key not in {o.name for o in app.operators}:
                raise PlacementError(f"placement.map[{key!r}]: no such operator")
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
    from streamband.model.flows import FlowMap  # local: flows imports placement users

    fm = FlowMap(app, topo, placement, routing="shortest")
    per_tuple = fm.nominal_rates() * [f.tuple_bytes for f in fm.flows]
    src_rate = sum((o.rate_tps or 0.0) for o in app.operators if o.kind == "source") or 1.0
    on_link: dict[int, list[float]] = {}
    for f, b in zip(fm.flows, per_tuple, strict=True):
        for lk in f.links:
            if topo.links[lk].kind != "internal":
                on_link.setdefault(lk, []).append(b / src_rate)
    worst = max(
        ((sum(v), max(v) / min(v) if min(v) > 0 else float("inf")) for v in on_link.values()),
        default=(0.0, 1.0),
    )
    total = sum(sum(v) for v in on_link.values())
    return (round(worst[0], 9), round(worst[1], 9), round(total, 9))


def tuple_size_rule(app: App, topo: Topology, hosts: list[str] | None = None) -> dict[str, str]:
    """001 §III-C: among load-balanced placements (every host runs at most
    ceil(instances / hosts)), pick the one whose bottleneck links carry the smallest
    aggregate of tuple sizes, breaking ties by the smaller ratio of tuple sizes.

    Exhaustive for up to 10 instances; above, pairwise-swap descent from round robin.
    """
    hosts = hosts or list(topo.hosts)
    _check_hosts(hosts)
    iids = app.instances()
    cap = -(-len(iids) // len(hosts))
    best, best_score = None, None
    if len(iids) <= 10:
        for combo in itertools.product(range(len(hosts)), repeat=len(iids)):
            if combo[0] != 0:  # hosts are symmetric: fix the first instance
                break
            if max(combo.count(h) for h in set(combo)) > cap:
                continue
            pl = {iid: hosts[h] for iid, h in zip(iids, combo, strict=True)}
            score = bottleneck_score(app, topo, pl)
            if best_score is None or score < best_score:
                best, best_score = pl, score
        assert best is not None
        return best
    best = round_robin(app, hosts)
    best_score = bottleneck_score(app, topo, best)
    improved = True
    while improved:
        improved = False
        for a, b in itertools.combinations(iids, 2):
            if best[a] == best[b]:
                continue
            cand = dict(best)
            cand[a], cand[b] = best[b], best[a]
            score = bottleneck_score(app, topo, cand)
            if score < best_score:
                best, best_score, improved = cand, score, True
    return best

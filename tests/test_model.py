"""Topology builders, routing, applications, placement and flows."""

import numpy as np
import pytest
from pydantic import ValidationError

from streamband.model import App, Edge, FlowMap, Operator, Router, fat_tree, leaf_spine, star
from streamband.model.flows import key_shares
from streamband.model.placement import (
    PlacementError,
    explicit,
    joint,
    round_robin,
    sustainable_rate,
    tuple_size_rule,
)
from streamband.model.routing import routing_matrix
from streamband.model.topology import TopologyError, two_tier


def fork_join(rate=500.0) -> App:
    return App(
        name="fj",
        operators=[Operator(name="A", kind="source", rate_tps=rate), Operator(name="B", kind="map"),
                   Operator(name="C", kind="map"), Operator(name="D", kind="join")],
        edges=[Edge(src="A", dst="B", tuple_bytes=8192), Edge(src="A", dst="C", tuple_bytes=4096),
               Edge(src="B", dst="D", tuple_bytes=6144), Edge(src="C", dst="D", tuple_bytes=3072)],
    )


def test_two_tier_has_the_links_of_000_fig2():
    t = two_tier(internal_bw_bps=10e6)
    kinds = [lk.kind for lk in t.links]
    assert kinds.count("uplink") == 8 and kinds.count("downlink") == 8
    assert kinds.count("internal") == 16
    assert all(lk.capacity_bps == 10e6 for lk in t.links if lk.kind == "internal")


def test_fat_tree_sizes_and_paths():
    t = fat_tree(4)
    assert len(t.hosts) == 16 and len(t.switches) == 20
    r = Router(t)
    p = r.path("h0_0_0", "h3_1_1", "flow-1")
    assert len(p) == 6  # up, edge->agg, agg->core, core->agg, agg->edge, down
    assert p[0] == t.uplink("h0_0_0") and p[-1] == t.downlink("h3_1_1")
    for a, b in zip(p, p[1:], strict=False):
        assert t.links[a].dst == t.links[b].src
    assert r.path("h0_0_0", "h3_1_1", "flow-1") == p  # stable for the same key
    paths = {tuple(r.path("h0_0_0", "h3_1_1", k)) for k in range(64)}
    assert len(paths) == 4  # ECMP spreads over the (k/2)^2 core paths
    assert len({tuple(Router(t, "shortest").path("h0_0_0", "h3_1_1", k)) for k in range(8)}) == 1
    assert r.path("h0_0_0", "h0_0_0") == []


def test_leaf_spine_and_routing_matrix():
    t = leaf_spine(3, 2, 2, 1e9)
    r = Router(t)
    paths = r.paths([("h1_1", "h3_2"), ("h1_1", "h1_2"), ("h2_1", "h2_1")])
    assert [len(p) for p in paths] == [4, 2, 0]
    R = routing_matrix(paths, len(t.links))
    assert R.shape == (3, len(t.links)) and R.sum() == 6


def test_zero_capacity_is_rejected():
    with pytest.raises(TopologyError, match="capacity must be a positive"):
        star(2, 0.0)


def test_app_rejects_cycles_unknown_kinds_and_bad_joins():
    ops = [Operator(name="a", kind="source", rate_tps=1), Operator(name="b", kind="map"),
           Operator(name="c", kind="map")]
    with pytest.raises(ValidationError, match="cycle"):
        App(name="x", operators=ops, edges=[Edge(src="a", dst="b", tuple_bytes=1),
                                            Edge(src="b", dst="c", tuple_bytes=1),
                                            Edge(src="c", dst="b", tuple_bytes=1)])
    with pytest.raises(ValidationError):
        Operator(name="z", kind="teleport")
    with pytest.raises(ValidationError, match="unknown operator"):
        App(name="x", operators=ops, edges=[Edge(src="a", dst="q", tuple_bytes=1)])
    with pytest.raises(ValidationError, match="two or more inputs"):
        App(name="x", operators=[ops[0], Operator(name="j", kind="join")],
            edges=[Edge(src="a", dst="j", tuple_bytes=1)])


def test_round_robin_matches_000_section_2a4():
    app = App(
        name="linkedin",
        operators=[Operator(name="Split", kind="source", parallelism=2, rate_tps=10),
                   Operator(name="Skill", kind="map", parallelism=2),
                   Operator(name="Job", kind="map", parallelism=2),
                   Operator(name="Merge", kind="map", parallelism=2),
                   Operator(name="Count", kind="map", parallelism=2),
                   Operator(name="TopK", kind="sink")],
        edges=[Edge(src=a, dst=b, tuple_bytes=1) for a, b in (
            ("Split", "Skill"), ("Split", "Job"), ("Skill", "Merge"), ("Job", "Merge"),
            ("Merge", "Count"), ("Count", "TopK"))],
    )
    pl = round_robin(app, ["M1", "M2", "M3", "M4"])
    on = {h: sorted(i for i, x in pl.items() if x == h) for h in ("M1", "M2", "M3", "M4")}
    assert on["M1"] == ["Count[0]", "Job[0]", "Split[0]"]
    assert on["M3"] == ["Merge[0]", "Skill[0]", "TopK[0]"]
    assert on["M4"] == ["Merge[1]", "Skill[1]"]


def test_001_placement_rule_picks_tp1():
    pl = tuple_size_rule(fork_join(), star(["S1", "S2"], 20e6))
    assert pl["A[0]"] == pl["B[0]"] and pl["C[0]"] == pl["D[0]"] and pl["A[0]"] != pl["C[0]"]


def test_explicit_placement_names_missing_host():
    with pytest.raises(PlacementError, match="unknown host 'S9'"):
        explicit(fork_join(), ["S1", "S2"], {"A": "S9", "B": "S1", "C": "S1", "D": "S1"})
    with pytest.raises(PlacementError, match="without a host"):
        explicit(fork_join(), ["S1", "S2"], {"A": "S1"})


def test_flowmap_groupings():
    app = App(
        name="g",
        operators=[Operator(name="s", kind="source", parallelism=2, rate_tps=100),
                   Operator(name="f", kind="map", parallelism=3),
                   Operator(name="a", kind="sink", parallelism=2),
                   Operator(name="l", kind="sink", parallelism=2)],
        edges=[Edge(src="s", dst="f", grouping="fields", tuple_bytes=10),
               Edge(src="f", dst="a", grouping="all", tuple_bytes=10),
               Edge(src="s", dst="l", grouping="local_or_shuffle", tuple_bytes=10)],
    )
    topo = star(2, 1e9)
    pl = {"s[0]": "h1", "s[1]": "h2", "f[0]": "h1", "f[1]": "h2", "f[2]": "h1",
          "a[0]": "h1", "a[1]": "h2", "l[0]": "h2", "l[1]": "h2"}
    fm = FlowMap(app, topo, pl)
    rates = fm.nominal_rates()
    by_id = {f.id: r for f, r in zip(fm.flows, rates, strict=True)}
    assert sum(v for k, v in by_id.items() if "->f[" in k) == pytest.approx(100.0)
    assert sum(v for k, v in by_id.items() if "->a[" in k) == pytest.approx(200.0)  # copies
    assert {k for k in by_id if k.startswith("s[1]->l")} == {"s[1]->l[0]", "s[1]->l[1]"}
    assert by_id["s[0]->l[0]"] == pytest.approx(25.0)  # no local instance: shuffle
    assert [f.internal for f in fm.flows if f.id == "s[1]->l[0]"] == [True]


def test_zipf_key_shares_are_skewed_and_sum_to_one():
    e = Edge(src="a", dst="b", grouping="fields", tuple_bytes=1,
             keys={"kind": "zipf", "keys": 1000, "s": 1.2})
    s = key_shares(e, 4)
    assert s.sum() == pytest.approx(1.0) and s.max() > 1.5 * s.min()
    assert np.allclose(key_shares(Edge(src="a", dst="b", tuple_bytes=1), 4), 0.25)


def test_sustainable_rate_of_fork_join_placements():
    topo = star(["S1", "S2"], 20e6)
    app = fork_join()
    tp2 = explicit(app, topo.hosts, {"A": "S1", "C": "S1", "B": "S2", "D": "S2"})
    # TP2: 8 KB + 3 KB cross S1's uplink per source tuple -> 20e6 / 8 / 11264 tuples/s
    assert sustainable_rate(app, topo, tp2) == pytest.approx(20e6 / 8 / 11264)


def test_joint_placement_is_at_least_round_robin_and_beats_it_on_two_tier():
    app = App(
        name="ti",
        operators=[Operator(name="t", kind="source", parallelism=2, rate_tps=250),
                   Operator(name="c", kind="source", parallelism=2, rate_tps=250),
                   Operator(name="j", kind="join", parallelism=2, join_mode="latest",
                            primary="t")],
        edges=[Edge(src="t", dst="j", grouping="shuffle", tuple_bytes=20480),
               Edge(src="c", dst="j", grouping="all", tuple_bytes=5120)],
    )
    topo = two_tier(host_bw_bps=1e9, internal_bw_bps=20e6)
    rr = round_robin(app, topo.hosts)
    best = joint(app, topo)
    assert max(list(best.values()).count(h) for h in topo.hosts) == 1  # balanced
    assert sustainable_rate(app, topo, best) > 1.5 * sustainable_rate(app, topo, rr)
    assert joint(fork_join(), star(["S1", "S2"], 20e6)) == tuple_size_rule(
        fork_join(), star(["S1", "S2"], 20e6))

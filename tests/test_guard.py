"""Do no harm: the manager keeps TCP's measured split unless an allocation moves enough
of a bottleneck's capacity, with hysteresis (001's TP1 vs TP2 on one 20 Mbit/s uplink)."""

import numpy as np
import pytest
import scipy.sparse as sp

from streamband.alloc.common import entries
from streamband.loop.guard import HarmGuard

MBIT = 1e6
E = entries(sp.csr_matrix(np.array([[1, 0], [1, 0]])))  # two flows on link 0; link 1 idle
CAP = np.array([20 * MBIT, 20 * MBIT])
HOT = np.array([True, False])


def decide(g: HarmGuard, alloc: list[float], measured: list[float]) -> bool:
    return g.decide(E, CAP, HOT, np.array(alloc) * MBIT, np.array(measured) * MBIT)


def test_small_moves_keep_tcp_large_ones_cap_with_hysteresis():
    g = HarmGuard()
    assert not decide(g, [8, 12], [10, 10])  # TP1: 2 of 20 Mbit/s change hands
    assert g.moved == pytest.approx(0.10)
    assert decide(g, [14.5, 5.5], [10, 10])  # TP2: 4.5 of 20
    assert g.moved == pytest.approx(0.225)
    # capped now: TCP's split is the last uncapped measurement (10/10), not the metered one
    assert decide(g, [11.8, 8.2], [11.8, 8.2])  # 0.09 >= margin_off: keep capping
    assert not decide(g, [11, 9], [11, 9])  # 0.05 < margin_off: release
    assert not decide(g, [11.8, 8.2], [10.2, 9.8])  # uncapped again, 0.08 < margin_on


def test_uncapped_flows_and_idle_links_do_not_count():
    g = HarmGuard()
    assert not decide(g, [np.inf, np.inf], [3, 17])
    assert g.moved == 0.0


def test_margins_must_be_ordered():
    with pytest.raises(ValueError, match="margin_off <= margin_on"):
        HarmGuard(margin_on=0.05, margin_off=0.1)


def test_an_interval_above_capacity_is_not_tcps_split():
    # a first interval longer than Δt reads 16 + 24 Mbit/s on a 20 Mbit/s link: with it as
    # TCP's split, any allocation would look like a large move and capping would stick
    g = HarmGuard()
    assert not decide(g, [4.6, 15.4], [15.8, 24.1])
    assert g.tcp_bps is None and g.moved == 0.0
    assert not decide(g, [6, 14], [7.6, 11.5])  # the real split: about 2 of 20 move
    assert g.moved == pytest.approx(0.1025)


def test_tcps_split_is_the_mean_of_the_last_uncapped_intervals():
    g = HarmGuard(window=2)
    for measured in ([6, 14], [8, 12], [10, 10]):
        decide(g, [np.inf, np.inf], measured)
    assert g.tcp_bps == pytest.approx(np.array([9, 11]) * MBIT)  # the last two


def _place(edges: list[tuple[str, str]], host: dict[str, str]) -> dict:
    """A placement as :func:`streamband.flink.flows.placement` reads it from the REST API:
    one subtask per vertex, each in a TaskManager of its own (``tm-V``) on ``host[V]``."""
    names = sorted({v for e in edges for v in e})
    return {"vertices": {v: {"name": v, "component": v, "parallelism": 1, "subtasks": [
                {"subtask": 0, "tm": f"tm-{v}", "endpoint": None, "status": "RUNNING"}]}
                         for v in names},
            "edges": [{"src": a, "dst": b, "ship": "HASH"} for a, b in edges],
            "taskmanagers": {f"tm-{v}": {"host": host[v], "data_port": 1} for v in names}}


def test_one_sources_fork_join_is_paced_a_join_of_two_sources_is_not():
    """001's fork-join (A feeds B and C, D joins them) on TP3's hosts: every pair carries
    A's records alone, so both links are paced. Trucking IoT's combiner joins two
    sources: its downlink carries both and is left to the policy; the truck source's
    uplink carries its records alone."""
    from streamband.flink.flows import pair_sources, tm_pairs
    from streamband.loop.guard import paced_links

    place = _place([("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")],
                   {"A": "s1", "D": "s1", "B": "s2", "C": "s2"})
    pairs = [p for p in tm_pairs(place) if p.remote]
    assert {p.edges for p in pairs} == {("A->B",), ("A->C",), ("B->D",), ("C->D",)}
    assert set(pair_sources(place, pairs)) == {frozenset({("A", 0)})}
    up = sp.csr_matrix([[1.0 if p.src.host == "s1" else 0.0, 1.0 if p.dst.host == "s1" else 0.0]
                        for p in pairs])  # links: s1's uplink, s1's downlink
    assert paced_links(up, pair_sources(place, pairs)).tolist() == [True, True]

    place = _place([("truck", "join"), ("traffic", "join"), ("join", "sink")],
                   {"truck": "h1", "traffic": "h2", "join": "h3", "sink": "h3"})
    pairs = [p for p in tm_pairs(place) if p.remote]
    srcs = pair_sources(place, pairs)
    assert sorted(map(sorted, srcs)) == [[("traffic", 0)], [("truck", 0)]]
    # links: h1's uplink (truck's pair), h3's downlink (both pairs)
    r = sp.csr_matrix([[1.0 if p.src.host == "h1" else 0.0, 1.0] for p in pairs])
    assert paced_links(r, srcs).tolist() == [True, False]

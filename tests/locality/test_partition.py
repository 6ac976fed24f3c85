"""Key graph (003 §3.3, Fig. 5), METIS partitioning under imbalance alpha, routing tables."""

from __future__ import annotations

import numpy as np
import pytest

from streamband.locality.keygraph import build_keygraph
from streamband.locality.partition import Partition, partition_keygraph, rebalance, refine
from streamband.locality.routing_table import RoutingTable, hash_route, tables_from_partition


def fig5_graph():
    # 003 Fig. 5: Asia with #java/#ruby, Oceania with #python
    keys = {"A": (np.array(["Asia", "Oceania"], object), np.array([11, 5])),
            "B": (np.array(["#java", "#ruby", "#python"], object), np.array([5, 5, 6]))}
    pairs = {("A", "B"): (np.array(["Asia", "Asia", "Oceania", "Asia"], object),
                          np.array(["#java", "#ruby", "#python", "#python"], object),
                          np.array([5, 5, 5, 1]))}
    return build_keygraph(keys, pairs)


def test_keygraph_weights() -> None:
    g = fig5_graph()
    assert g.ops == ["A", "B"] and g.n_vertices == 5 and g.n_edges == 4
    w = dict(zip(g.keys.tolist(), g.vweight.tolist(), strict=True))
    assert w == {"Asia": 11, "Oceania": 5, "#java": 5, "#python": 6, "#ruby": 5}
    xadj, adj, ew = g.csr()
    assert xadj[-1] == 8 and ew.sum() == 2 * 16
    assert g.top_edges(2).n_edges == 2


def random_graph(seed: int, keys: int = 3000, tuples: int = 60_000, p_same: float = 0.7):
    rng = np.random.default_rng(seed)
    freq = np.arange(1, keys + 1) ** -0.8  # skewed, yet no key alone above alpha x mean
    a = rng.choice(keys, tuples, p=freq / freq.sum())
    b = np.where(rng.random(tuples) < p_same, a, rng.integers(0, keys, tuples))
    ua, ca = np.unique(a, return_counts=True)
    ub, cb = np.unique(b, return_counts=True)
    code, c = np.unique(a * keys + b, return_counts=True)
    return build_keygraph({"A": (ua, ca), "B": (ub, cb)},
                          {("A", "B"): (code // keys, code % keys, c)}), a, b


@pytest.mark.parametrize("nparts", [2, 4, 6])
@pytest.mark.parametrize("alpha", [1.03, 1.1])
def test_metis_imbalance_within_alpha(nparts: int, alpha: float) -> None:
    g, _, _ = random_graph(nparts)
    part = partition_keygraph(g, nparts, alpha)
    imb = part.imbalance()
    assert set(imb) == {"A", "B"}
    assert max(imb.values()) <= alpha + 1e-9
    # and it co-locates the correlated pairs far better than chance (1/n)
    assert 1 - part.cut_fraction() > 0.65


def test_dag_keygraph_three_operators() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 300, 20_000)
    b = (a + rng.integers(0, 2, a.size)) % 300
    c = b % 50
    kc = {op: np.unique(x, return_counts=True) for op, x in (("A", a), ("B", b), ("C", c))}
    pc = {}
    for (x, y), (u, v) in {("A", "B"): (a, b), ("B", "C"): (b, c), ("A", "C"): (a, c)}.items():
        code, cnt = np.unique(u * 1000 + v, return_counts=True)
        pc[(x, y)] = (code // 1000, code % 1000, cnt)
    g = build_keygraph(kc, pc)
    part = partition_keygraph(g, 4, 1.05)
    assert max(part.imbalance().values()) <= 1.05 + 1e-9
    assert 1 - part.cut_fraction() > 0.5


def test_routing_table_hash_fallback_and_tables() -> None:
    t = RoutingTable("B", 4, {"x": 3})
    assert t.route("x") == 3
    assert t.route("y") == hash_route("y", "B", 4)
    assert t.route_many(np.array(["x", "y", "x"], object)).tolist() == [3, t.route("y"), 3]
    new = RoutingTable("B", 4, {"y": (t.route("y") + 1) % 4})
    moved = t.owners_changed(new)
    assert set(moved) == {"x", "y"} or set(moved) == {"y"}
    assert RoutingTable.from_json(t.to_json()) == t
    g = fig5_graph()
    part = partition_keygraph(g, 2, 1.5)
    hosts = {"A": ["h0", "h1"], "B": ["h0", "h1"]}
    tabs = tables_from_partition(part, {"A": 2, "B": 2}, hosts, ["h0", "h1"])
    asia = tabs["A"].route("Asia")
    assert tabs["B"].route("#java") == asia and tabs["B"].route("#ruby") == asia
    assert tabs["B"].route("#python") == tabs["A"].route("Oceania") != asia


def test_refine_lowers_cut_within_alpha() -> None:
    g, _, _ = random_graph(7, keys=2000)
    parts = np.random.default_rng(0).integers(0, 4, g.n_vertices)
    parts = rebalance(g, parts, 4, 1.05)
    before = Partition(g, 4, parts)
    after = Partition(g, 4, refine(g, parts, 4, 1.05, g.csr()))
    assert after.cut_fraction() < before.cut_fraction() - 0.1
    assert max(after.imbalance().values()) <= max(1.05, max(before.imbalance().values())) + 1e-9

"""Speed of the locality statistics and partitioning (issue 4, paper 003 §3.2-3.3).

- SpaceSaving over key pairs: >= 1 M pair updates/s on one core, against a baseline
  measured here (the textbook one-item-at-a-time SpaceSaving with a dict);
- METIS partitioning of a key graph with 10^6 edges into 6 servers: <= 10 s.

Run: .venv/bin/python bench/locality_speed.py [--json OUT]
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from streamband.locality.keygraph import build_keygraph
from streamband.locality.partition import partition_keygraph
from streamband.locality.spacesaving import PairSpaceSaving, encode_pairs


def textbook_spacesaving(items: list[int], capacity: int) -> dict[int, int]:
    """Metwally et al. one item at a time (a dict + linear min on eviction, lazily)."""
    counts: dict[int, int] = {}
    for x in items:
        c = counts.get(x)
        if c is not None:
            counts[x] = c + 1
        elif len(counts) < capacity:
            counts[x] = 1
        else:
            victim = min(counts, key=counts.__getitem__)
            counts[x] = counts.pop(victim) + 1
    return counts


def zipf_pairs(n: int, keys: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = (rng.zipf(1.3, n) - 1) % keys
    b = np.where(rng.random(n) < 0.5, (a * 7 + 3) % keys, (rng.zipf(1.3, n) - 1) % keys)
    return a.astype(np.int64), b.astype(np.int64)


def main() -> dict:
    out: dict = {}
    # -- SpaceSaving ------------------------------------------------------------
    n = 4_000_000
    a, b = zipf_pairs(n, 100_000)
    ss = PairSpaceSaving()  # 1 MB: 43,690 counters
    t = time.perf_counter()
    ss.update(a, b)
    dt = time.perf_counter() - t
    rate = n / dt
    ua_, ub_ = (np.random.default_rng(5).integers(0, 1_000_000, n) for _ in range(2))
    ss_u = PairSpaceSaving()
    t = time.perf_counter()
    ss_u.update(ua_, ub_)
    rate_uniform = n / (time.perf_counter() - t)
    nb = 200_000
    codes = encode_pairs(a[:nb], b[:nb]).tolist()
    t = time.perf_counter()
    textbook_spacesaving(codes, 1000)  # small capacity: its eviction scan is O(m)
    base = nb / (time.perf_counter() - t)
    out["spacesaving"] = {"pairs": n, "counters": ss.summary.capacity, "seconds": dt,
                          "updates_per_s": rate, "baseline_updates_per_s": base,
                          "updates_per_s_uniform_worst_case": rate_uniform,
                          "baseline": "textbook per-item dict SpaceSaving, 1000 counters",
                          "ratio": rate / base, "target_updates_per_s": 1e6,
                          "ok": min(rate, rate_uniform) >= 1e6}
    # -- METIS on 10^6 edges ------------------------------------------------------------
    rng = np.random.default_rng(1)
    keys = 200_000
    m = 1_000_000
    ka = rng.integers(0, keys, m)
    kb = np.where(rng.random(m) < 0.6, ka, rng.integers(0, keys, m))
    code = np.unique(ka * keys + kb)[:m]
    while code.size < m:  # top up to exactly 10^6 distinct pairs
        extra = rng.integers(0, keys, m) * keys + rng.integers(0, keys, m)
        code = np.unique(np.concatenate([code, extra]))[:m]
    pa, pb = code // keys, code % keys
    w = rng.integers(1, 100, m)
    t = time.perf_counter()
    ua, ca = np.unique(pa, return_counts=True)
    ub, cb = np.unique(pb, return_counts=True)
    g = build_keygraph({"A": (ua, ca), "B": (ub, cb)}, {("A", "B"): (pa, pb, w)})
    t_build = time.perf_counter() - t
    t = time.perf_counter()
    part = partition_keygraph(g, 6)
    t_part = time.perf_counter() - t
    # baseline: the same graph with a random balanced assignment (what hash gives)
    rand_parts = rng.integers(0, 6, g.n_vertices)
    cut_rand = float(g.eweight[rand_parts[g.src] != rand_parts[g.dst]].sum() / g.eweight.sum())
    out["partition"] = {"edges": g.n_edges, "vertices": g.n_vertices, "build_s": t_build,
                        "metis_s": t_part, "total_s": t_build + t_part, "target_s": 10.0,
                        "ok": t_build + t_part <= 10.0,
                        "imbalance": part.imbalance(), "cut_fraction": part.cut_fraction(),
                        "cut_fraction_random_baseline": cut_rand,
                        "cut_ratio_vs_random": part.cut_fraction() / cut_rand}
    return out


if __name__ == "__main__":
    res = main()
    s, p = res["spacesaving"], res["partition"]
    print(f"SpaceSaving pairs: {s['updates_per_s'] / 1e6:.2f} M updates/s "
          f"(Zipf), {s['updates_per_s_uniform_worst_case'] / 1e6:.2f} M/s (uniform over "
          f"10^12 pairs) ({s['counters']} counters), "
          f"baseline {s['baseline_updates_per_s'] / 1e6:.3f} M/s, "
          f"ratio x{s['ratio']:.0f}, target >= 1 M/s: {'ok' if s['ok'] else 'MISSED'}")
    print(f"METIS {p['edges']:,} edges / {p['vertices']:,} keys into 6: build {p['build_s']:.2f} s "
          f"+ partition {p['metis_s']:.2f} s = {p['total_s']:.2f} s (target <= 10 s: "
          f"{'ok' if p['ok'] else 'MISSED'}); cut {p['cut_fraction']:.3f} vs random "
          f"{p['cut_fraction_random_baseline']:.3f}; imbalance {p['imbalance']}")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(res, f, indent=2)
    sys.exit(0 if s["ok"] and p["ok"] else 1)  # a missed target fails the run

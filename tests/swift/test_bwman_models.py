"""The models of 002 §III (eq. 1 linear, eq. 2 logarithmic): least squares on
points, checked on data generated with known coefficients."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamband.alloc.bwman import fit


@pytest.mark.parametrize(("kind", "a1", "a2"), [("linear", 4.388, 14.38),
                                                 ("log", 441.6, -2609.0),
                                                 ("linear", 2.9, -1.5), ("log", 0.21, 0.3)])
def test_fit_recovers_known_coefficients(kind, a1, a2):
    rng = np.random.default_rng(0)
    bw = np.linspace(1.0, 12.0, 25)
    f = np.log(bw) if kind == "log" else bw
    clean = a1 * f + a2
    y = clean + rng.normal(0.0, 0.01 * np.abs(clean).mean(), bw.size)
    m = fit(kind, bw, y)
    assert m.kind == kind and m.n == 25
    assert m.a1 == pytest.approx(a1, rel=0.03)
    assert m.a2 == pytest.approx(a2, abs=0.05 * abs(a2) + 0.05 * abs(a1))
    assert m.r2 > 0.99


def test_exact_points_fit_exactly_and_invert():
    m = fit("log", [1.0, 2.0, 4.0], [0.1 + 0.2 * math.log(x) for x in (1.0, 2.0, 4.0)])
    assert (m.a1, m.a2, m.r2) == pytest.approx((0.2, 0.1, 1.0))
    for bw in (0.5, 3.0, 10.0):
        assert m.inverse(m.predict(bw)) == pytest.approx(bw)
    lin = fit("linear", [2.0, 4.0], [10.0, 14.0])
    assert lin.inverse(18.0) == pytest.approx(6.0)
    assert lin.inverse(0.0) == 0.0  # never a negative bandwidth


def test_r2_drops_on_data_the_form_does_not_fit():
    bw = np.linspace(1, 10, 20)
    m = fit("linear", bw, np.where(bw < 5, 0.0, 10.0))  # a step is not a line
    assert m.r2 < 0.9


def test_a_flat_model_asks_for_unbounded_bandwidth():
    m = fit("linear", [1.0, 2.0, 3.0], [5.0, 5.0, 5.0])
    assert m.a1 == pytest.approx(0.0, abs=1e-12)
    assert math.isinf(fit("linear", [1.0, 2.0], [5.0, 4.0]).inverse(10.0))


def test_fit_needs_two_bandwidths():
    with pytest.raises(ValueError, match="two bandwidths"):
        fit("linear", [3.0, 3.0, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="positive"):
        fit("log", [0.0, 1.0], [1.0, 2.0])

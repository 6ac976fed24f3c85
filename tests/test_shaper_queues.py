"""The shaper's leaf queues (sdn/shaper.py): lengths follow the assured rates and fit the
switch's send buffer; computed without touching ``tc``."""

from hypothesis import given
from hypothesis import strategies as st

from streamband.sdn.priority import SEND_BUFFER_PKTS
from streamband.sdn.shaper import MIN_PKTS, FlowShaper, Leaf, ShapedPort


def _queues(link_bps: float, rates: list[float]) -> tuple[ShapedPort, list[int]]:
    """The port after its tree is fitted to leaves at ``rates``, and every class's queue
    length (the unlisted class's first), each checked against the ``tc`` line that set it."""
    port = ShapedPort("p", link_bps, other_bps=link_bps)
    for i, r in enumerate(rates):
        port.leaves[i] = Leaf(0x100 + i, 100 + i, None, r, 0.0)
    lines = "\n".join(FlowShaper._refit(port))
    for lf in port.leaves.values():
        assert f"parent 5:{lf.minor:x} handle {lf.minor:x}: pfifo limit {lf.pkts}\n" in lines + "\n"
    return port, [port.other_pkts, *(lf.pkts for lf in port.leaves.values())]


@given(st.floats(1e6, 1e9), st.lists(st.floats(1e4, 1e9), min_size=1, max_size=40))
def test_queues_fit_the_send_buffer_and_follow_the_rates(link_bps, rates):
    port, limits = _queues(link_bps, rates)
    leaves = list(port.leaves.values())
    assert sum(limits) <= max(SEND_BUFFER_PKTS, MIN_PKTS * len(limits))
    assert min(limits) >= MIN_PKTS
    by_rate = sorted(leaves, key=lambda lf: lf.set_bps)
    assert all(a.pkts <= b.pkts for a, b in zip(by_rate, by_rate[1:], strict=False))


def test_a_flow_with_most_of_the_link_gets_most_of_the_queue():
    port, limits = _queues(15e6, [6e6, 3e6, 1e6])
    big, mid, small = port.leaves.values()
    assert big.pkts > mid.pkts > small.pkts
    assert big.pkts >= 2 * small.pkts + MIN_PKTS

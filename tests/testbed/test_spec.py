import pytest

from streamband.testbed.spec import SpecError, load_spec


def test_short_form_builds_model_topology():
    s = load_spec("star:workers=3,bw_mbps=20")
    topo = s.topology()
    assert topo.hosts == ["master", "w1", "w2", "w3"]
    assert topo.capacities.max() == 20e6


@pytest.mark.parametrize("bad,field", [
    ("star:bw_mbps=-1", "bw_mbps"), ("ring", "kind"), ("fat_tree:k=3", "k"),
    ("star:nosuch=1", "nosuch"), ("star:workers", "workers"),
])
def test_bad_spec_one_line_naming_the_field(bad, field):
    with pytest.raises(SpecError) as e:
        load_spec(bad)
    assert field in str(e.value) and "\n" not in str(e.value)


def test_cross_traffic_hosts_checked():
    with pytest.raises(SpecError, match="cross_traffic"):
        load_spec({"kind": "star", "cross_traffic": [{"src": "w1", "dst": "zz", "mbps": 1}]})

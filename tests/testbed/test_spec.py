"""Testbed specs: the network grammar plus control-plane fields, one line on error."""

import pytest

from streamband.errors import SpecError
from streamband.model.testbed import load_spec


def test_short_form_builds_model_topology():
    s = load_spec("star:hosts=3,master=true,link_mbps=20")
    topo = s.build()
    assert topo.hosts == ["master", "w1", "w2", "w3"]
    assert topo.capacities.max() == 20e6


@pytest.mark.parametrize("bad,field", [
    ("star:link_mbps=-1", "link_mbps"), ("ring", "topology"), ("fat_tree:k=3", "k"),
    ("star:nosuch=1", "nosuch"), ("star:hosts", "hosts"), ("star:hosts=200", "hosts"),
    ("fat_tree:k=6", "at most 64 hosts"), ("big_switch", "coflow simulator"),
    ("star:api=localhost", "HOST:PORT"), ("star:link_mbps=nan", "link_mbps"),
])
def test_bad_spec_one_line_naming_the_field(bad, field):
    with pytest.raises(SpecError) as e:
        load_spec(bad)
    assert field in str(e.value) and "\n" not in str(e.value)


def test_typo_names_the_nearest_key():
    with pytest.raises(SpecError, match="did you mean 'link_mbps'"):
        load_spec("star:link_mpbs=20")
    with pytest.raises(SpecError, match="did you mean 'fat_tree'"):
        load_spec("fattree:k=4")


def test_cross_traffic_hosts_checked():
    with pytest.raises(SpecError, match=r"cross_traffic\[0\]\.dst: unknown host 'zz'"):
        load_spec({"topology": "star", "cross_traffic": [{"src": "w1", "dst": "zz", "mbps": 1}]})

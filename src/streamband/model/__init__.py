"""Network and application model: topology, routing, application DAGs, placement, flows."""

from streamband.model.app import App, Edge, KeyDistribution, Operator
from streamband.model.flows import Flow, FlowMap
from streamband.model.routing import Router, routing_matrix
from streamband.model.topology import Link, Topology, fat_tree, leaf_spine, star, two_tier

__all__ = [
    "App", "Edge", "Flow", "FlowMap", "KeyDistribution", "Link", "Operator", "Router",
    "Topology", "fat_tree", "leaf_spine", "routing_matrix", "star", "two_tier",
]

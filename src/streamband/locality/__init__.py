"""Locality-aware key routing for stateful streaming (paper 003, Caneill et al. 2016).

SpaceSaving statistics of key pairs, the key graph partitioned with METIS, routing
tables with hash fallback, and the online reconfiguration protocol with state
migration (003 §3.2–§3.4).
"""

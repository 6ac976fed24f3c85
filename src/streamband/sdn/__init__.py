"""Tier 2 of 000 §V-B: the SDN controller application (os-ken).

One process (``streamband controller``) runs the os-ken application
:class:`streamband.sdn.app.StreambandApp` (forwarding, the bandwidth enforcer's
meters with leases, the link statistics collector) and its HTTP/JSON API
(:mod:`streamband.sdn.api`), used by the manager (tier 1).
"""

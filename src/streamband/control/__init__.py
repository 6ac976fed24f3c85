"""The cross-layer loop of 000 Fig. 4: observe -> decide -> act, every Δt.

Division of labour: :mod:`.manager` is the loop and the three interfaces of its
adapters (profiler, link statistics, enforcer); the adapters of each backend live in
:mod:`streamband.backends`; :mod:`.live` runs the loop in real time beside a real
network (allocation log, Prometheus metrics, leases renewed by every push);
:mod:`.api_client` talks to the SDN controller (:mod:`streamband.sdn`). Policies are
in :mod:`streamband.alloc`: the loop never decides, a policy never sees a backend.
"""

"""The cross-layer loop of 000 Fig. 4: observe -> decide -> act, every Δt.

:mod:`.manager` is the loop and the three interfaces of its adapters (profiler, link
statistics, enforcer); :mod:`.openflow` the adapters every real network shares (link
statistics, meters, classes through the controller's API); :mod:`.live` runs the loop in
real time beside a real network (allocation log, Prometheus metrics, leases renewed by
every push); :mod:`.guard` is do-no-harm; :mod:`.bwman` is BwMan's MAPE-K loop (002).
Policies are in :mod:`streamband.alloc`: the loop never decides, a policy never sees a
backend.
"""

"""The cross-layer loop (000 Fig. 4): profiler, link statistics, manager, enforcer."""

"""Backends: where the manager loop runs. One module per backend, one line each here.

Division of labour: a backend module holds the three adapters of the loop (profiler,
link statistics, enforcer; :mod:`.base` says what they are) and a runner for the
cases of an experiment. :mod:`.openflow` is the network half shared by every real
backend (link statistics and meters through the SDN controller). Nothing here
decides: policies are in :mod:`streamband.alloc`, the loop in :mod:`streamband.control`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from streamband.errors import OptionError, nearest

#: backend name -> (module, what it is)
BACKENDS: dict[str, tuple[str, str]] = {
    "sim": ("streamband.backends.sim", "the fluid simulator: no root, any machine, any scale"),
    "testbed": ("streamband.backends.testbed", "Mininet + Open vSwitch + os-ken over real "
                "TCP, the traffic harness as the workload (root)"),
    "storm": ("streamband.backends.storm", "Apache Storm on the testbed's hosts, profiled by "
              "the engine itself (root, Java)"),
    "cluster": ("streamband.backends.cluster", "a Storm cluster and an OpenFlow controller "
                "known by their addresses, run as a service by `streamband manage`"),
}


def backend(name: str) -> ModuleType:
    """The module of the backend ``name``.

    Raises
    ------
    OptionError
        For an unknown backend (naming the nearest one).
    """
    if name not in BACKENDS:
        raise OptionError(f"--backend: unknown backend {name!r}, expected one of "
                          f"{', '.join(BACKENDS)}{nearest(name, BACKENDS)}")
    return importlib.import_module(BACKENDS[name][0])

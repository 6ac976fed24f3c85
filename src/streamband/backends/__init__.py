"""Backends: where an experiment's cases run. One module per backend, one line each
in :data:`BACKENDS`.

Division of labour: a backend module is a runner (:mod:`.base` says what it returns);
the loop's adapters live with the system they observe: the engines' profilers in their
packages (:mod:`streamband.storm.profiler`), the network half shared by every real
backend in :mod:`streamband.loop.openflow`. Nothing here decides: policies are in
:mod:`streamband.alloc`, the loop in :mod:`streamband.loop`.
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
    "flink": ("streamband.backends.flink", "Apache Flink on the testbed's hosts, fed by Kafka, "
              "profiled by its own metrics reporter (root, Java)"),
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

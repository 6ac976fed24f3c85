"""One module per reproduction, each with the same shape (:mod:`.base`): the specs
it runs, ``run(out, opts, console)`` and ``compare(...)`` with the paper's reference
figures beside it.

Division of labour: :mod:`.spec` validates experiment specs (YAML, shipped ones in
``specs/``); :mod:`.runner` plans specs into cases and runs them on a backend
(:mod:`streamband.backends`) with progress bars; each ``paperNNN`` / ``joint`` module
holds one paper's reproduction and its acceptance checks; :mod:`streamband.report`
draws. To add a reproduction: write its module and add one line to
:data:`EXPERIMENTS`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from streamband.errors import OptionError, nearest

#: ``streamband bench NAME`` -> the module holding that reproduction
EXPERIMENTS: dict[str, str] = {
    "paper-000": "streamband.experiments.paper000",
    "paper-001": "streamband.experiments.paper001",
    "paper-003": "streamband.experiments.paper003",
    "paper-004": "streamband.experiments.paper004",
    "joint": "streamband.experiments.joint",
    "appfair": "streamband.experiments.appfair",
}


def experiment(name: str) -> ModuleType:
    """The reproduction module ``name``.

    Raises
    ------
    OptionError
        For an unknown name (naming the nearest one).
    """
    if name not in EXPERIMENTS:
        raise OptionError(f"NAME: unknown bench {name!r}, expected one of "
                          f"{', '.join(EXPERIMENTS)}{nearest(name, EXPERIMENTS)}")
    return importlib.import_module(EXPERIMENTS[name])

"""The coflow schedulers, one registry entry each: name, class, whether the compiled
loop runs it, and the parameters the entry fixes (a variant is an entry with other
fixed parameters, e.g. ``stream-oracle``). To add a scheduler: a class in this package
(the Python reference), its rule in ``rust/coflow_core`` if it is compiled, one
entry here."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from streamband.sim.coflow.engine import Scheduler
from streamband.sim.coflow.schedulers.aalo import Aalo
from streamband.sim.coflow.schedulers.baraat import Baraat
from streamband.sim.coflow.schedulers.fs import FairSharing
from streamband.sim.coflow.schedulers.fs_static import StaticFairSharing
from streamband.sim.coflow.schedulers.stream import Stream, StreamOracle
from streamband.sim.coflow.schedulers.varys import Varys


@dataclass(frozen=True)
class Entry:
    """One scheduler: ``make`` builds ``cls(**params, **options)``."""

    name: str
    cls: type[Scheduler]
    compiled: bool
    about: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def options(self) -> tuple[str, ...]:
        """The constructor parameters a caller may still set."""
        sig = inspect.signature(self.cls.__init__).parameters
        return tuple(p for p in sig if p != "self" and p not in self.params)


REGISTRY: dict[str, Entry] = {e.name: e for e in (
    Entry("fs", FairSharing, True, "per-flow max-min fair sharing (004 §IV-B)"),
    Entry("fs-static", StaticFairSharing, True, "per-end static share, not work-conserving"),
    Entry("stream", Stream, True, "004: receiver-driven C-SJF, decentralized relay"),
    Entry("stream-oracle", StreamOracle, True, "004 with the coflow's bytes seen centrally"),
    Entry("aalo", Aalo, True, "D-CLAS, centralized (Aalo, SIGCOMM'15)"),
    Entry("baraat", Baraat, True, "FIFO with limited multiplexing (Baraat, SIGCOMM'14)"),
    Entry("varys", Varys, True, "clairvoyant SEBF + MADD (Varys, SIGCOMM'14)"),
)}
NAMES = tuple(REGISTRY)


def make(name: str, **options: Any) -> Scheduler:
    """A fresh scheduler ``name`` with ``options`` (unset options keep their defaults;
    an option the scheduler does not take is ignored only when it is ``None``)."""
    if name not in REGISTRY:
        raise ValueError(f"policy: expected one of {', '.join(NAMES)}, got {name!r}")
    e = REGISTRY[name]
    allowed = e.options()
    bad = [k for k, v in options.items() if v is not None and k not in allowed]
    if bad:
        raise ValueError(f"{name}: takes {', '.join(allowed) or 'no options'}, got {bad[0]!r}")
    kw = {k: v for k, v in options.items() if v is not None}
    return e.cls(**e.params, **kw)

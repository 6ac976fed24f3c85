"""``--backend cluster`` refused: a cluster known by its addresses is managed as a
service (``streamband manage``, :mod:`streamband.manage`), not by an experiment."""

from __future__ import annotations

from typing import Any

from streamband.errors import PreconditionError


class Runner:
    """The cluster backend runs as a service, not as the runner of an experiment."""

    name = "cluster"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise PreconditionError("--backend cluster: a real cluster is managed as a service, "
                                "not by an experiment: streamband manage --config "
                                "cluster.yaml")

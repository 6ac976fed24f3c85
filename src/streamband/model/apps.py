"""Several applications on one network (000 §VII): each keeps its own DAG, placement
and sources, and they share the links.

They run as one merged DAG whose operator names are qualified by the application's
name, ``APP/OP`` (instances ``APP/OP[i]``): the flow map, the simulator and the
traffic harness need nothing else, and every flow and measured operator still says
which application it belongs to (:func:`app_of`).
"""

from __future__ import annotations

import numpy as np

from streamband.model.app import App

#: separates an application's name from its operator's in a merged DAG
SEP = "/"


def qualify(app: str, name: str) -> str:
    """``APP/NAME``: an operator or instance of ``app`` in the merged DAG."""
    return f"{app}{SEP}{name}"


def app_of(name: str) -> str:
    """The application of a qualified operator or instance name (``""`` if unqualified).

    Examples
    --------
    >>> app_of("app2/join[0]")
    'app2'
    """
    head, sep, _ = name.partition(SEP)
    return head if sep else ""


def merge(apps: list[App], name: str | None = None) -> App:
    """One DAG holding every application of ``apps`` side by side, names qualified.

    Examples
    --------
    >>> a = App.model_validate({"name": "a", "operators": [
    ...     {"name": "s", "kind": "source", "rate_tps": 1}, {"name": "k", "kind": "sink"}],
    ...     "edges": [{"src": "s", "dst": "k", "tuple_bytes": 1}]})
    >>> merge([a, a.model_copy(update={"name": "b"})]).instances()
    ['a/s[0]', 'a/k[0]', 'b/s[0]', 'b/k[0]']
    """
    ops, edges, measured, notes = [], [], [], []
    for a in apps:
        q = a.name
        for o in a.operators:
            ops.append(o.model_copy(update={
                "name": qualify(q, o.name),
                "primary": qualify(q, o.primary) if o.primary else o.primary}))
        for e in a.edges:
            edges.append(e.model_copy(update={"src": qualify(q, e.src),
                                              "dst": qualify(q, e.dst)}))
        measured += [qualify(q, m) for m in a.measured()]
        if a.notes:
            notes.append(f"{a.name}: {a.notes}")
    return App(name=name or "+".join(a.name for a in apps), operators=ops, edges=edges,
               throughput_at=measured, notes=" ".join(notes))


def flow_apps(flow_srcs: list[str], names: list[str]) -> np.ndarray:
    """(F,) the index in ``names`` of each flow's application, from its sender's
    qualified instance id."""
    index = {n: i for i, n in enumerate(names)}
    return np.array([index[app_of(s)] for s in flow_srcs], np.int64)


def per_app(by_operator: dict[str, tuple[float, float]], names: list[str]
            ) -> dict[str, tuple[float, float]]:
    """Each application's throughput (sum over its measured operators, tuples/s) and
    mean latency (weighted by tuples, s) from the per-operator figures."""
    out = {}
    for n in names:
        mine = [(tps, lat) for op, (tps, lat) in by_operator.items() if app_of(op) == n]
        tps = sum(t for t, _ in mine)
        lat = (sum(t * la for t, la in mine if t > 0) / tps) if tps > 0 else float("nan")
        out[n] = (tps, lat)
    return out

"""The operator's tests run against the testbed presented as a remote cluster
(:mod:`streamband.manage.stage`): a star of master + w1 + w2 at 20 Mbit/s, the
controller's API on a management link (token), Storm on the hosts, 001's fork-join
(TP1, acking on, failed tuples replayed) and ``streamband manage`` on the master host,
its guard off (the tests check the caps it enforces and what becomes of them).
One stage serves every test of this directory; it is stopped (and checked gone) after
the directory's last test, before any other directory's testbed starts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from streamband.manage import stage as remote
from streamband.manage.stage import wait_for
from streamband.storm.workloads import fork_join

HERE = Path(__file__).parent
FJ_BYTES = (lambda w, a: w.edge_bytes(a))(*fork_join())  # 001: 8 / 4 / 6 / 3 KB
_held: dict[str, Any] = {}


def _release() -> None:
    cm = _held.pop("cm", None)
    _held.pop("stage", None)
    if cm is not None:
        cm.__exit__(None, None, None)


@pytest.fixture(scope="session")
def stage(tmp_path_factory: pytest.TempPathFactory):
    """The running stage with the manager up and allocating for ``fj``."""
    if "stage" not in _held:
        work = tmp_path_factory.mktemp("operator")
        cm = remote.stage(work)
        st = cm.__enter__()
        _held["cm"] = cm
        t0 = time.monotonic()
        try:
            st.submit_fork_join("fj", rate=300, timeout_s=15)
            cfg = st.write_config(work / "cluster.yaml", [
                {"name": "fj", "policy": "appaware", "tuple_bytes": FJ_BYTES},
                {"name": "fj2", "policy": "maxmin", "tuple_bytes": FJ_BYTES}],
                work / "state", dt=1.0, guard=False)
            st.extra["config"] = cfg
            st.start_manager(cfg)
            wait_for(lambda: sum(1 for s in st.topology("fj")["series"]
                                 if s["decision"] == "policy") >= 5, 120,
                     "the manager allocates for fj")
        except BaseException:
            _release()
            raise
        print(f"operator stage up in {time.monotonic() - t0:.1f} s")
        _held["stage"] = st
    yield _held["stage"]
    _release()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """Stop the stage after this directory's last test (its fixtures are gone first)."""
    out = yield
    if nextitem is None or Path(nextitem.path).parent != HERE:
        _release()
    return out


ORDER = ("config", "service", "dashboard", "prometheus", "soak", "drills", "shaper")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """This directory's modules in the order a stage lives: the quiet checks first, the
    soak before the drills disturb anything."""
    mine = [i for i, it in enumerate(items) if Path(it.path).parent == HERE]

    def rank(it: pytest.Item) -> int:
        stem = Path(it.path).stem.removeprefix("test_manage_")
        return ORDER.index(stem) if stem in ORDER else len(ORDER)

    for slot, it in zip(mine, sorted((items[i] for i in mine), key=rank), strict=True):
        items[slot] = it

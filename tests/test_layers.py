"""The layers of ARCHITECTURE.md hold: import-linter's contracts (``pyproject.toml``)
pass on the code, fail when an upward import is added, and no two Python files of
``src/`` import each other, directly or through others (imports inside functions
count)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    # a fresh interpreter, so that the package is found under ``src`` only
    return subprocess.run([str(LINT), "--config", str(config), "--no-cache"],
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
                          cwd=src)


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A copy of ``src/`` and of the contracts, to break on purpose."""
    d = tmp_path_factory.mktemp("layers")
    shutil.copytree(ROOT / "src" / "streamband", d / "streamband",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(ROOT / "pyproject.toml", d / "pyproject.toml")
    return d


def test_the_contracts_hold(copy):
    r = _lint(copy, copy / "pyproject.toml")
    assert r.returncode == 0, r.stdout[-3000:]
    assert "broken" not in r.stdout.lower() or "0 broken" in r.stdout


@pytest.mark.parametrize("where, line", [
    ("model/__init__.py", "import streamband.backends"),  # model is below backends
    ("alloc/base.py", "def f():\n    from streamband.loop.manager import Manager"),
    ("storm/flows.py", "from streamband.testbed import ovs"),  # siblings
])
def test_an_upward_import_breaks_them(copy, where, line):
    path = copy / "streamband" / where
    before = path.read_text()
    path.write_text(before + "\n\n" + line + "\n")
    try:
        r = _lint(copy, copy / "pyproject.toml")
    finally:
        path.write_text(before)
    assert r.returncode != 0, r.stdout[-2000:]
    assert "BROKEN" in r.stdout


def test_no_cycle_between_files():
    graph = grimp.build_graph("streamband")
    g = nx.DiGraph()
    for m in graph.modules:
        for dep in graph.find_modules_directly_imported_by(m):
            g.add_edge(m, dep)
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert cycles == []

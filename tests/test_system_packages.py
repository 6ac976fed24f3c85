"""README's two commands do the set-up: ``make test`` and ``.ci/run`` install the Debian
packages through one script (``scripts/system-packages.sh``), and every command a test
needs (``tests/conftest.py``) comes from a package that script installs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "system-packages.sh"


def packages() -> set[str]:
    """The packages the script installs (its arrays of names)."""
    text = SCRIPT.read_text()
    arrays = re.findall(r"^[A-Z]+=\(([^)]*)\)", text, re.M)
    return {p for a in arrays for p in a.split() if not p.startswith('"')}


def test_make_and_ci_install_through_the_one_script():
    ci = (ROOT / ".ci" / "run").read_text()
    make = (ROOT / "Makefile").read_text()
    assert "bash scripts/system-packages.sh" in ci and "apt-get" not in ci
    assert re.search(r"^system:\n\tbash scripts/system-packages.sh$", make, re.M)
    assert re.search(r"^homes: system ", make, re.M) and re.search(r"^test: homes", make, re.M)
    assert "streamband.storm.home" in make and "streamband.kafka.home" in make
    assert not re.search(r"^demo:.*(system|homes)", make, re.M)  # the simulator needs neither


def test_missing_lists_only_the_scripts_packages():
    """``--missing`` installs nothing and names only packages of the script (any user)."""
    r = subprocess.run(["bash", str(SCRIPT), "--missing"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert set(r.stdout.split()) <= packages()
    bad = subprocess.run(["bash", str(SCRIPT), "--nope"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


@pytest.fixture
def needs(pytestconfig: pytest.Config) -> dict[str, tuple[str, tuple[str, ...]]]:
    """tests/conftest.py's NEEDS, from the plugin pytest loaded (a plain import of
    "conftest" could be another directory's)."""
    return pytestconfig.pluginmanager.getplugin(str(ROOT / "tests" / "conftest.py")).NEEDS


@pytest.mark.skipif(shutil.which("dpkg") is None, reason="not a Debian machine")
def test_every_needed_command_comes_from_the_scripts_packages(needs):
    """Each command tests/conftest.py looks for, where installed, belongs to a package the
    script installs or to one of their dependencies: the two lists cannot drift."""
    listed = packages()
    depends = subprocess.run(["dpkg-query", "-W", "-f=${Depends}\n", *sorted(listed)],
                             capture_output=True, text=True).stdout
    reachable = listed | {d.split()[0].split(":")[0] for d in re.split(r"[,|\n]", depends)
                          if d.strip()}
    checked = 0
    for _, commands in needs.values():
        for cmd in commands:
            path = shutil.which(cmd)
            if path is None:
                continue
            owner = subprocess.run(["dpkg", "-S", os.path.realpath(path)],
                                   capture_output=True, text=True)
            if owner.returncode != 0:
                continue  # not from a package (a local build): nothing to compare
            pkg = owner.stdout.split(":")[0]
            assert pkg in reachable, (cmd, pkg)
            checked += 1
    if checked == 0:
        pytest.skip("none of the commands is installed here")

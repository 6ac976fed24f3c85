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

pytest_plugins = ["pytester"]
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


INNER = '''
import subprocess
import pytest

@pytest.fixture
def broker():  # the name a Kafka broker's fixture has: the conftest knows it needs Java
    raise AssertionError("never set up: skipped before")

@pytest.fixture
def system():
    subprocess.run(["streamband-no-such-tool"], check=True)

def test_needs_java(broker):
    pass

def test_needs_a_tool(system):
    pass

def test_fails_for_real():
    raise FileNotFoundError(2, "No such file or directory", "/etc/streamband-nowhere")
'''


def test_what_is_missing_is_a_skip_and_nothing_else_is(pytester, monkeypatch):
    """Through tests/conftest.py: a fixture known to need Java is skipped up front when
    Java is off PATH; a test that fails because a command is missing is reported skipped
    with that reason; a test that fails for anything else still fails."""
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_inner=INNER)
    monkeypatch.setenv("PATH", str(Path(os.__file__).parent))  # no java, javac, mvn
    r = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    r.assert_outcomes(skipped=2, failed=1)
    r.stdout.fnmatch_lines(["*2 tests skipped for what the install step brings*",
                            "*Java 17 and Maven missing (java, javac, mvn); to run it: sudo "
                            "make test*", "*streamband-no-such-tool missing; to run it: sudo "
                            "make test*"])

"""What every test directory shares: a test that needs what the install step brings (the
Debian packages of ``scripts/system-packages.sh``, and root for the testbed) is skipped
when it is missing, with the reason and the command that brings it, never left to error
(a fresh machine's ``make test`` errored in every testbed, Storm, Swift and operator test
at ``FileNotFoundError: 'ovs-vsctl'``). The needs are known up front from the fixtures
and modules below; a test not listed there that still fails because a command is missing,
or for want of root, is reported skipped with that reason (the command is checked to be
missing: on a machine that has it, the same failure stays a failure). One line at the end
counts them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from streamband.errors import PreconditionError

HERE = Path(__file__).parent
#: this file is a plugin, not a module of doctests: collected as one (--doctest-modules)
#: it would be imported a second time as "conftest", beside tests/coflow's
collect_ignore = ["conftest.py"]
INSTALL = "sudo make test (it installs what is missing: scripts/system-packages.sh)"
#: each need: what it is, and the commands whose presence shows it is installed
NEEDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "root": ("root (network namespaces, Open vSwitch)", ()),
    "testbed": ("Mininet, Open vSwitch, iperf3, ethtool, ping",
                ("mn", "ovs-vsctl", "ovs-ofctl", "iperf3", "ethtool", "ping")),
    "java": ("Java 17 and Maven", ("java", "javac", "mvn")),
    "swift": ("OpenStack Swift, rsync, memcached",
              ("swift-proxy-server", "swift-object-server", "swift-container-server",
               "swift-account-server", "rsync", "memcached")),
    "chromium": ("Chromium", ("chromium",)),
    "prometheus": ("Prometheus", ("prometheus",)),
}
#: the fixtures that start a real system, and what that system needs
FIXTURES = {"cleanup": ("root", "testbed"), "storm_testbed": ("root", "testbed", "java"),
            "stage": ("root", "testbed", "java"), "store": ("root", "testbed", "swift"),
            "testbed_cluster": ("root", "testbed", "java"), "broker": ("java",),
            "java": ("java",), "browser": ("chromium",), "prometheus": ("prometheus",)}
#: the modules (or directories) that start one without such a fixture
TESTBED_JAVA = ("root", "testbed", "java")
MODULES = {"kafka": ("java",), "flink": ("java",), "storm/test_storm_clean.py": ("java",),
           "flink/test_flink_testbed.py": TESTBED_JAVA,
           "storm/test_kafka_testbed.py": TESTBED_JAVA,
           "swift/test_swift_cli.py": ("root", "testbed", "swift")}


def lacking(need: str) -> list[str]:
    """What of ``need`` is missing here: ``["root"]``, the missing commands, or []."""
    if need == "root":
        return [] if os.geteuid() == 0 else ["root"]
    return [c for c in NEEDS[need][1] if shutil.which(c) is None]


def needs(item: pytest.Item) -> list[str]:
    """What ``item`` needs, from the fixtures it uses and the module it is in."""
    try:
        rel = Path(item.path).resolve().relative_to(HERE.resolve()).as_posix()
    except ValueError:  # a doctest of the package: it needs nothing of the machine
        return []
    out = [n for f in item.fixturenames for n in FIXTURES.get(f, ())]
    out += [n for key, ns in MODULES.items() for n in ns
            if rel == key or rel.startswith(key + "/")]
    return list(dict.fromkeys(out))


_skipped: dict[str, int] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        missing = {n: lacking(n) for n in needs(item)}
        missing = {n: m for n, m in missing.items() if m}
        if not missing:
            continue
        what = "; ".join("not root" if n == "root" else
                         f"{NEEDS[n][0]} missing ({', '.join(m)})" for n, m in missing.items())
        item.add_marker(pytest.mark.skip(reason=f"{what}; to run it: {INSTALL}"))
        _skipped[what] = _skipped.get(what, 0) + 1


def missing_cause(exc: BaseException) -> str | None:
    """What is missing, when ``exc`` is a failure for want of a command or of root that
    is indeed missing here; None for any other failure."""
    name = getattr(exc, "filename", None)
    if isinstance(exc, FileNotFoundError) and isinstance(name, str) and name \
            and "/" not in name and shutil.which(name) is None:
        return f"{name} missing"
    if isinstance(exc, PreconditionError):
        text = str(exc)
        if "needs root" in text and lacking("root"):
            return "not root"
        if "Java 17 and Maven" in text and lacking("java"):
            return f"{NEEDS['java'][0]} missing ({', '.join(lacking('java'))})"
        if "is not installed" in text:
            return text
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> pytest.TestReport:
    report: pytest.TestReport = yield
    why = missing_cause(call.excinfo.value) if report.failed and call.excinfo else None
    if why is not None:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           f"Skipped: {why}; to run it: {INSTALL}")
        _skipped[why] = _skipped.get(why, 0) + 1
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _skipped:
        n = sum(_skipped.values())
        why = "; ".join(sorted({w for k in _skipped for w in k.split("; ")}))
        terminalreporter.write_line(f"{n} tests skipped for what the install step brings "
                                    f"({why}); to run them: {INSTALL}")


#: Debian's Chromium, driven by Playwright (the dashboards' tests)
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture
def browser(tmp_path: Path):
    """A fresh headless Chromium (its own profile), stopped after the test."""
    from playwright.sync_api import sync_playwright

    assert shutil.which(CHROMIUM), "Debian's chromium is needed (apt-get install chromium)"
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=ARGS,
            viewport={"width": 1400, "height": 1800})
        try:
            yield ctx
        finally:
            ctx.close()

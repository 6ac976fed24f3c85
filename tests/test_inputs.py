"""Inputs a user can get wrong, through the real command (``streamband.cli``): every bad
input ends with one line on stderr naming what, where and what was expected, exit code
2, no traceback, and nothing written; hypothesis fuzzes specs, testbed specs and
option values the same way."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamband.cli import app
from streamband.model.spec import builtin_spec

runner = CliRunner()
FIXTURE = HealthCheck.function_scoped_fixture  # each example makes its own files


def tiny_spec() -> dict:
    """001's fork-join on one placement, 4 simulated seconds: a valid run takes ~0.1 s."""
    spec = yaml.safe_load(builtin_spec("paper-001").read_text())
    spec["sim"] = {"duration_s": 4, "step_s": 0.1, "sample_s": 0.5, "interval_s": 1,
                   "warmup_s": 1}
    spec["placements"] = {"TP1": spec["placements"]["TP1"]}
    spec["policies"] = ["tcp"]
    return spec


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def refused(args: list[str], *words: str, root: Path | None = None) -> str:
    """Run ``streamband ARGS``; assert exit 2, one line naming ``words``, no traceback,
    and (with ``root``) nothing new under ``root``; returns the line."""
    before = listing(root) if root is not None else None
    res = runner.invoke(app, args)
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 2, (args, res.output, res.exception)
    assert len(lines) == 1 and lines[0].startswith("error: "), (args, res.output)
    assert "Traceback" not in res.output
    for w in words:
        assert w in lines[0], (w, lines[0])
    if root is not None:
        assert listing(root) == before, args
    return lines[0]


def spec_file(tmp_path: Path, content: bytes | str | dict, name: str = "spec.yaml") -> str:
    p = tmp_path / name
    if isinstance(content, dict):
        content = yaml.safe_dump(content)
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(p)


# -- spec files --------------------------------------------------------------------------
@pytest.mark.parametrize(("content", "words"), [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", ("binary data", "NUL byte")),
    (b"experiment: x\napp: \xff\xfe\n", ("line 2", "not UTF-8")),
    (b"", ("empty",)),
    (b"   \n\n", ("empty",)),
    (b"experiment: [unclosed\n", ("line", "expected a YAML mapping")),
    (b"- a\n- b\n", ("expected a YAML mapping at the top level",)),
    (b"a" * (2 << 20), ("bytes, expected a spec of at most",)),
])
def test_spec_files_that_are_not_specs(tmp_path, content, words):
    refused(["run", spec_file(tmp_path, content), "--out", str(tmp_path / "out")], *words,
            root=tmp_path)


def test_spec_path_is_a_directory_or_missing(tmp_path):
    refused(["run", str(tmp_path), "--out", str(tmp_path / "o")], "is a directory",
            root=tmp_path)
    refused(["run", "paper-01", "--out", str(tmp_path / "o")], "no such file",
            "did you mean 'paper-001'", root=tmp_path)


def mutate(spec: dict, path: str, value: object) -> dict:
    node = spec
    *head, last = path.split("/")
    for key in head:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if value is KeyError:
        del node[last]
    else:
        node[int(last) if isinstance(node, list) else last] = value
    return spec


@pytest.mark.parametrize(("path", "value", "words"), [
    ("sim/duraton_s", 5, ("sim.duraton_s", "did you mean 'duration_s'")),
    ("app/operators/0/rate_tsp", 5, ("did you mean 'rate_tps'",)),
    ("networks/0/topolgy", "star", ("did you mean 'topology'",)),
    ("networks/0/topology", "fattree", ("did you mean 'fat_tree'",)),
    ("sim/warmup_s", 4, ("warmup_s", "less than duration_s")),
    ("sim/step_s", 0.7, ("step_s", "at most sample_s")),
    ("sim/sample_s", 2, ("sample_s", "at most interval_s")),
    ("sim/duration_s", float("nan"), ("duration_s", "finite")),
    ("sim/duration_s", float("inf"), ("duration_s",)),
    ("networks/0/bandwidth_mbps", [float("nan")], ("bandwidth_mbps[0]", "finite")),
    ("networks/0/link_mbps", 10, ("link_mbps", "set by bandwidth_mbps")),
    ("placements/TP1/map", {"A": "S1", "B": "S1", "C": "S2", "Z": "S2"}, ("placements.TP1",)),
    ("placements/TP1/map", {"A[7]": "S1", "B": "S1", "C": "S2", "D": "S2"},
     ("placements.TP1",)),
    ("placements/TP1/map", {"A[x]": "S1", "B": "S1", "C": "S2", "D": "S2"},
     ("placements.TP1",)),
    ("placements/TP1/map", {"A": "S9", "B": "S1", "C": "S2", "D": "S2"},
     ("unknown host 'S9'",)),
    ("placements/TP1/strategy", "round_robin", ("map", "only an explicit placement")),
    ("policies", ["tcp", "tcp"], ("each policy at most once",)),
    ("policies", ["tcp", "apaware"], ("did you mean 'appaware'",)),
    ("policies", ["tcp", "static"], ("static",)),
    ("app/operators/0/rate_tps", KeyError, ("a source needs rate_tps",)),
    ("app/edges/0/tuple_bytes", -1, ("tuple_bytes",)),
    ("app/throughput_at", ["Q"], ("throughput_at", "unknown operator 'Q'")),
    ("sim/backpressure", [10, 20], ("backpressure", "low < high")),
])
def test_bad_spec_fields(tmp_path, path, value, words):
    spec = mutate(tiny_spec(), path, value)
    refused(["run", spec_file(tmp_path, spec), "--out", str(tmp_path / "out")], *words,
            root=tmp_path)


def test_duplicate_network_names(tmp_path):
    spec = tiny_spec()
    spec["networks"] = spec["networks"] * 2
    refused(["run", spec_file(tmp_path, spec), "--out", str(tmp_path / "o")],
            "networks: names must be distinct", root=tmp_path)


def test_sweep_needs_two_bottlenecked_flows_and_says_so_before_running(tmp_path):
    spec = tiny_spec()  # at 1000 Mbit/s nothing is a bottleneck: nothing to sweep
    spec["networks"][0]["bandwidth_mbps"] = [1000]
    spec["policies"] = ["tcp", "sweep"]
    refused(["run", spec_file(tmp_path, spec), "--out", str(tmp_path / "o")],
            "policy sweep", "expected at least two", root=tmp_path)


# -- output paths ------------------------------------------------------------------------
def test_output_paths_checked_before_the_run(tmp_path):
    good = spec_file(tmp_path, tiny_spec())
    f = tmp_path / "afile"
    f.write_text("keep")
    refused(["run", good, "--out", str(f)], "--out", "is a file", root=tmp_path)
    refused(["run", good, "--out", str(f / "sub")], "--out", "is a file", root=tmp_path)
    refused(["run", good, "--out", "/proc/streamband-out"], "--out", "not writable",
            root=tmp_path)
    refused(["bench", "paper-003", "--out", str(f)], "--out", root=tmp_path)
    refused(["locality", "bench", "--json", str(tmp_path)], "--json", "is a directory",
            root=tmp_path)
    refused(["locality", "bench", "--json", "/proc/x.json"], "--json", "not writable",
            root=tmp_path)
    refused(["testbed", "status", "--json", str(tmp_path)], "--json", root=tmp_path)
    refused(["testbed", "selftest", "--json", "/proc/x.json"], "--json", root=tmp_path)
    assert f.read_text() == "keep"


# -- options -----------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "words"), [
    (["--seconds", "nan"], ("--seconds", "finite")),
    (["--seconds", "inf"], ("--seconds",)),
    (["--seconds", "-3"], ("--seconds",)),
    (["--seconds", "0.5"], ("--seconds",)),
    (["--repeat", "0"], ("--repeat", "1..100")),
    (["--repeat", "many"], ("--repeat",)),
    (["--backend", "cloud"], ("--backend", "expected one of sim, testbed")),
    (["--nosuch"], ("No such option",)),
])
def test_bad_run_options(tmp_path, args, words):
    refused(["run", spec_file(tmp_path, tiny_spec()), "--out", str(tmp_path / "o"), *args],
            *words, root=tmp_path)


@pytest.mark.parametrize(("args", "words"), [
    (["paper-01"], ("unknown bench", "did you mean 'paper-001'")),
    (["paper-001", "--full-trace"], ("--full-trace", "paper-004 only")),
    (["paper-000", "--backend", "testbed"], ("--backend", "runs on sim")),
    (["paper-001", "--policy", "tcp"], ("--policy", "manager-loop policy")),
    (["paper-001", "--policy", "fastest"], ("unknown policy 'fastest'",)),
    (["joint", "--seconds", "nan"], ("--seconds",)),
    (["paper-004", "--backend", "testbed", "--full-trace"], ("--full-trace", "--backend sim")),
    (["paper-004", "--backend", "testbed", "--seconds", "5"], ("--seconds", "10..3600")),
    (["paper-004", "--backend", "storm"], ("--backend", "runs on sim, testbed")),
])
def test_bad_bench_options(tmp_path, args, words):
    refused(["bench", *args, "--out", str(tmp_path / "o")], *words, root=tmp_path)


@pytest.mark.parametrize(("args", "words"), [
    (["controller", "--log-level", "LOUD"], ("--log-level", "expected one of DEBUG")),
    (["controller", "--poll", "nan"], ("--poll",)),
    (["controller", "--listen", "nowhere"], ("HOST:PORT",)),
    (["locality", "bench", "--workload", "flights", "--period", "30s"],
     ("--period", "between a minute and the data's span")),
    (["locality", "bench", "--workload", "flights", "--period", "400d"], ("--period",)),
    (["locality", "bench", "--link-gbps", "inf"], ("--link-gbps",)),
    (["locality", "bench", "--locality", "nan"], ("--locality",)),
    (["testbed", "check", "star:hosts=2,link_mpbs=20"], ("did you mean 'link_mbps'",)),
    (["testbed", "check", "fattree:k=4"], ("did you mean 'fat_tree'",)),
    (["testbed", "check", "star:api=127.0.0.1"], ("api", "HOST:PORT")),
    (["testbed", "check", "star:link_mbps=nan"], ("link_mbps",)),
    (["testbed", "check", "fat_tree:k=8"], ("at most 64 hosts",)),
])
def test_bad_options_elsewhere(tmp_path, args, words):
    refused(args, *words, root=tmp_path)


@pytest.mark.parametrize(("content", "words"), [
    (b"\x00\x01", ("binary data",)), (b"", ("empty",)), (b"topology: star\nhost: 3\n",
                                                      ("did you mean 'hosts'",)),
    (b"testbed: 3\n", ("testbed: expected a mapping",)),
])
def test_bad_testbed_spec_files(tmp_path, content, words):
    refused(["testbed", "check", spec_file(tmp_path, content, "tb.yaml")], *words,
            root=tmp_path)


def test_the_installed_command_prints_one_line(tmp_path):
    """The console script itself (not only the Typer app)."""
    res = subprocess.run([sys.executable, "-m", "streamband.cli", "run", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "is a directory" in res.stderr
    assert res.stdout == ""


# -- fuzz --------------------------------------------------------------------------------
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10**9, 10**9),
                 st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=12), st.lists(st.integers(-5, 5), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


def _paths(node: object, prefix: str = "") -> list[str]:
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out += [f"{prefix}{k}", *_paths(v, f"{prefix}{k}/")]
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += [f"{prefix}{i}", *_paths(v, f"{prefix}{i}/")]
    return out


PATHS = _paths(tiny_spec())


@pytest.mark.parametrize(("option", "args"), [
    ("--max-pending", ["run", "paper-001", "--max-pending", "100"]),
    ("--max-pending", ["bench", "paper-001", "--max-pending", "100"]),
    ("--max-pending", ["bench", "paper-001", "--backend", "storm", "--max-pending", "2000000"]),
    ("--max-pending", ["run", "paper-001", "--backend", "storm", "--max-pending", "-3"]),
    ("--tuple-scale", ["run", "paper-001", "--tuple-scale", "10"]),
    ("--tuple-scale", ["bench", "paper-000", "--tuple-scale", "10"]),
    ("--tuple-scale", ["bench", "paper-000", "--backend", "storm", "--tuple-scale", "0.5"]),
    ("--tuple-scale", ["run", "paper-001", "--backend", "storm", "--tuple-scale", "nan"]),
    ("--alignment-ms", ["bench", "paper-000", "--alignment-ms", "100"]),
    ("--alignment-ms", ["bench", "paper-000", "--backend", "storm", "--alignment-ms", "100"]),
    ("--alignment-ms", ["run", "paper-001", "--backend", "flink", "--alignment-ms", "-5"]),
    ("--alignment-ms", ["bench", "paper-001", "--backend", "flink", "--alignment-ms", "inf"]),
    ("--enforce", ["bench", "paper-000", "--enforce", "shaper"]),
    ("--enforce", ["run", "paper-001", "--backend", "testbed", "--enforce", "shaper"]),
    ("--enforce", ["bench", "paper-000", "--backend", "storm", "--enforce", "shaping"]),
    ("--source", ["bench", "paper-001", "--backend", "flink", "--source", "spout"]),
    ("--guarantee", ["bench", "paper-000", "--backend", "flink", "--guarantee",
                     "at-least-once"]),
    ("--backend", ["bench", "paper-002", "--backend", "flink"]),
    ("--dt", ["bench", "paper-000", "--dt", "5"]),
    ("--dt", ["bench", "paper-004", "--backend", "testbed", "--dt", "5"]),
    ("--dt", ["run", "paper-001", "--backend", "storm", "--dt", "0.05"]),
    ("--dt", ["bench", "paper-001", "--backend", "flink", "--dt", "nan"]),
])
def test_engine_options_checked_before_work(tmp_path, option, args):
    out = tmp_path / "out"
    res = runner.invoke(app, [*args, "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert option in res.output and len(res.output.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("key", ["a\x1eb", "a\u2028b", "a\rb", "a\x85b"])
def test_line_breaks_in_input_stay_on_one_line(tmp_path, key):
    """A key holding a character ``splitlines`` breaks at (found by the fuzz test): the
    error quotes it escaped, on one line."""
    spec = tiny_spec()
    spec["sim"][key] = 1
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", spec_file(tmp_path, spec), "--out", str(out)])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert not out.exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[FIXTURE])
@given(edits=st.lists(st.tuples(st.sampled_from(PATHS), st.one_of(JUNK, st.just(KeyError))),
                      min_size=1, max_size=3))
def test_fuzz_specs_never_traceback(tmp_path_factory, edits):
    tmp = tmp_path_factory.mktemp("fuzz")
    spec = tiny_spec()
    for path, value in edits:
        try:
            mutate(spec, path, value)
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # an earlier edit removed or replaced the place
    out = tmp / "out"
    res = runner.invoke(app, ["run", spec_file(tmp, spec), "--out", str(out)])
    assert res.exit_code in (0, 2), (edits, res.output, res.exception)
    assert "Traceback" not in res.output
    if res.exit_code == 2:
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), (edits, res.output)
        assert not out.exists()


@settings(max_examples=80, deadline=None)
@given(text=st.one_of(
    st.text(max_size=40),
    st.builds(lambda k, kv: k + ":" + ",".join(f"{a}={b}" for a, b in kv),
              st.sampled_from(["star", "two_tier", "fat_tree", "leaf_spine", "big_switch",
                               "ring", ""]),
              st.lists(st.tuples(st.sampled_from(["hosts", "k", "link_mbps", "racks", "api",
                                                  "master", "internal_mbps", "x", ""]),
                                 st.one_of(st.integers(-5, 300).map(str), st.text(max_size=6),
                                           st.sampled_from(["nan", "inf", "-inf", "1e9"]))),
                       max_size=3))))
def test_fuzz_testbed_specs_never_traceback(text):
    if text.startswith("-") or "\x00" in text:
        return  # an option, or a byte no shell passes
    res = runner.invoke(app, ["testbed", "check", text])
    assert res.exit_code in (0, 2), (text, res.output, res.exception)
    assert "Traceback" not in res.output
    if res.exit_code == 2:
        assert res.output.count("\n") == 1 and res.output.startswith("error: "), res.output


@settings(max_examples=60, deadline=None, suppress_health_check=[FIXTURE])
@given(seconds=st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(
           lambda x: not (1.0 <= x <= 86_400.0)), st.text(max_size=5)),
       repeat=st.one_of(st.integers(-10**6, 0), st.integers(101, 10**6), st.text(max_size=4)),
       backend=st.text(max_size=8))
def test_fuzz_options_never_traceback(tmp_path, seconds, repeat, backend):
    out = tmp_path / "fuzz-out"
    res = runner.invoke(app, ["run", "paper-001", "--out", str(out), "--seconds", str(seconds),
                              "--repeat", str(repeat), "--backend", backend])
    assert res.exit_code == 2, (seconds, repeat, backend, res.output, res.exception)
    assert res.output.count("\n") == 1 and res.output.startswith("error: "), res.output
    assert not out.exists()
    assert not (isinstance(seconds, float) and math.isfinite(seconds) and 1 <= seconds <= 86400)

"""Hostile inputs through the real command and the real controller: YAML that is not
what it looks like, files that are not files, output paths that are not files, loose
identifiers in traces, cluster configs that cannot work, and requests the controller's
HTTP API must refuse. Every refusal is exit code 2 and one line naming what, where and
what was expected, with nothing written and nothing left running; the API answers 4xx,
never 500, and keeps answering. (The service's profiler port and its own API:
``tests/operator/test_manage_inputs.py``.)"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from streamband.cli import app
from streamband.procs import stop
from streamband.sdn.client import ControllerClient, ControllerError
from test_inputs import listing, refused, spec_file, tiny_spec

ROOT = Path(__file__).resolve().parents[1]
BASE = yaml.safe_dump(tiny_spec(), sort_keys=False)  # 001's fork-join, 4 s: runs in ~0.1 s


def cli(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``streamband ARGS`` as its own process: a hang is a failure, not a stuck suite."""
    return subprocess.run([sys.executable, "-m", "streamband.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _alarm(signum: int, frame: object) -> None:
    raise TimeoutError("the command did not end within 30 s (a blocking read or write?)")


def invoke(args: list[str], env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    """``streamband ARGS`` in this process (a start costs seconds on a busy machine),
    ended by an alarm after 30 s: a FIFO that blocks fails the test, never hangs it."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(30)
    try:
        res = CliRunner().invoke(app, args, env=env)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if isinstance(res.exception, TimeoutError):
        raise res.exception
    return subprocess.CompletedProcess(args, res.exit_code, res.stdout, res.stderr)


def one_line(r: subprocess.CompletedProcess[str], *words: str) -> str:
    """Assert exit 2 and one line on stderr naming ``words``; returns the line."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, (r.returncode, r.stderr[-600:])
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-600:]
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def edited(old: str, new: str, text: str = BASE) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# -- YAML that is not what it looks like ---------------------------------------------------
DURATION = "  duration_s: 4\n"
MAP_B = "  - name: B\n    kind: map\n"
YAML_CASES = [
    # duplicate keys: YAML keeps the last one silently
    ("dup-top", BASE + "sim: {duration_s: 8}\n", ("key 'sim' given twice", "line")),
    ("dup-nested", edited(DURATION, DURATION + "  duration_s: 400\n"),
     ("key 'duration_s' given twice (first on line",)),
    ("dup-map", edited("      A: S1\n", "      A: S1\n      A: S2\n"), ("key 'A' given twice",)),
    ("dup-operator-field", edited("    rate_tps: 500\n", "    rate_tps: 500\n    rate_tps: 5\n"),
     ("key 'rate_tps' given twice",)),
    ("dup-policies", edited("policies:\n- tcp\n", "policies:\n- tcp\npolicies:\n- appaware\n"),
     ("key 'policies' given twice",)),
    # tags and implicit types
    ("tag-int", edited(DURATION, '  duration_s: !!int "4"\n'), ("explicit tag !!int",)),
    ("tag-float", edited(DURATION, '  duration_s: !!float "4"\n'), ("explicit tag !!float",)),
    ("tag-str", edited("experiment: paper-001", "experiment: !!str 5"), ("explicit tag !!str",)),
    ("tag-binary", edited("experiment: paper-001", "experiment: !!binary aGVsbG8="),
     ("explicit tag !!binary",)),
    ("tag-python", edited("experiment: paper-001",
                          "experiment: !!python/object/apply:os.system ['true']"),
     ("explicit tag !!python/object/apply:os.system",)),
    ("tag-custom", edited(DURATION, "  duration_s: !seconds 4\n"), ("explicit tag !seconds",)),
    ("tag-set", edited("policies:\n- tcp\n", "policies: !!set {tcp: null}\n"),
     ("explicit tag !!set",)),
    ("tag-map", edited("sim:\n", "sim: !!map\n"), ("explicit tag !!map",)),
    ("date", edited(DURATION, "  duration_s: 2024-01-01\n"),
     ("sim.duration_s", "expected a number, not a string", "2024-01-01")),
    ("timestamp", edited(DURATION, "  duration_s: 2024-01-01 10:00:00\n"),
     ("sim.duration_s", "not a string")),
    ("bool-true", edited(DURATION, "  duration_s: true\n"),
     ("sim.duration_s", "expected a number, not a boolean")),
    ("bool-yes", edited(DURATION, "  duration_s: yes\n"), ("sim.duration_s", "not a string")),
    ("bool-on-rate", edited("rate_tps: 500", "rate_tps: on"),
     ("app.operators.0.rate_tps", "not a string")),
    ("bool-tuple", edited("tuple_bytes: 8192", "tuple_bytes: true"),
     ("app.edges.0.tuple_bytes", "not a boolean")),
    ("bool-parallelism", edited(MAP_B, MAP_B + "    parallelism: true\n"),
     ("parallelism", "not a boolean")),
    ("bool-in-list", edited("  bandwidth_mbps:\n  - 20\n", "  bandwidth_mbps:\n  - true\n"),
     ("bandwidth_mbps", "element 0: expected a number, not a boolean")),
    ("base-60", edited(DURATION, "  duration_s: 1:30\n"), ("sim.duration_s", "'1:30'")),
    ("hex", edited(DURATION, "  duration_s: 0x10\n"), ("sim.duration_s", "'0x10'")),
    ("octal-0o", edited(DURATION, "  duration_s: 0o10\n"), ("sim.duration_s", "'0o10'")),
    ("underscores", edited("rate_tps: 500", "rate_tps: 5_00"), ("rate_tps", "'5_00'")),
    ("quoted-number", edited(DURATION, '  duration_s: "4"\n'), ("sim.duration_s", "not a string")),
    ("nan", edited(DURATION, "  duration_s: .nan\n"), ("sim.duration_s", "finite")),
    # numbers too long to convert, or beyond a float
    ("int-5000-digits", edited(DURATION, "  duration_s: " + "4" * 5000 + "\n"),
     ("an integer of 5000 digits: expected at most 20",)),
    ("int-400-digits", edited("rate_tps: 500", "rate_tps: " + "5" * 400),
     ("an integer of 400 digits",)),
    ("int-21-digits", edited("tuple_bytes: 8192", "tuple_bytes: " + "8" * 21),
     ("an integer of 21 digits",)),
    ("float-overflow", edited(DURATION, "  duration_s: 1.0e+999\n"),
     ("1.0e+999 is beyond the largest float", "expected a finite number")),
    ("float-overflow-neg", edited("rate_tps: 500", "rate_tps: -2.5e+400"),
     ("beyond the largest float",)),
    # what the loader refuses outright
    ("alias-bomb", BASE + "x_: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"x{i}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6)),
     ("aliases expand the document to", "expected at most 100000")),
    ("alias-cycle", BASE + "x_: &a [1, *a]\n", ("an alias inside the value it names",)),
    ("complex-key", BASE + "? [a, b]\n: 1\n", ("a key that is a list or mapping",)),
    # absurd but finite magnitudes
    ("rate-1e300", edited("rate_tps: 500", "rate_tps: 1.0e+300"),
     ("rate_tps", "less than or equal to 1000000000")),
    ("rate-1e10", edited("rate_tps: 500", "rate_tps: 1.0e+10"),
     ("rate_tps", "less than or equal to 1000000000")),
    ("tuple-1e300", edited("tuple_bytes: 8192", "tuple_bytes: 1.0e+300"),
     ("tuple_bytes", "1073741824")),
    ("tuple-4GiB", edited("tuple_bytes: 8192", "tuple_bytes: 4294967296"), ("tuple_bytes",)),
    ("bandwidth-1e300", edited("  - 20\n", "  - 1.0e+300\n"),
     ("bandwidth_mbps[0]", "at most 1e+07 Mbit/s")),
    ("internal-1e300", edited("  topology: star\n",
                              "  topology: star\n  internal_mbps: 1.0e+300\n"),
     ("internal_mbps",)),
    ("selectivity-1e300", edited(MAP_B, MAP_B + "    selectivity: 1.0e+300\n"),
     ("selectivity",)),
    ("parallelism-1e9", edited(MAP_B, MAP_B + "    parallelism: 1000000000\n"),
     ("parallelism",)),
    ("buffer-1e300", edited(DURATION, DURATION + "  buffer_tuples: 1.0e+300\n"),
     ("buffer_tuples",)),
    ("backpressure-1e300", edited(DURATION, DURATION + "  backpressure: [1.0e+300, 5]\n"),
     ("backpressure", "1e12")),
]


@pytest.mark.parametrize(("name", "text", "words"), YAML_CASES, ids=[c[0] for c in YAML_CASES])
def test_yaml_that_is_not_what_it_looks_like(tmp_path, name, text, words):
    path = spec_file(tmp_path, text)
    line = refused(["run", path, "--out", str(tmp_path / "out")], *words, root=tmp_path)
    assert path in line  # where: the file (and the line or field)


def test_the_same_spec_without_the_trap_runs(tmp_path):
    """The cases above differ from a spec that runs only by the trap they set."""
    res = invoke(["run", spec_file(tmp_path, BASE), "--out", str(tmp_path / "out")])
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "results.json").is_file()


@pytest.mark.parametrize(("args", "words"), [
    (["testbed", "check"], ("testbed spec",)),
    (["manage", "--check", "--config"], ("cluster config",)),
    (["bench", "paper-002", "--out", "OUT", "--spec"], ("Swift spec",)),
])
def test_every_yaml_input_reads_the_same_way(tmp_path, args, words):
    """The testbed spec, the cluster config and the Swift spec share the loader: a
    duplicate key, a tag and a 5000-digit integer are refused in each."""
    for text, word in (("topology: star\ntopology: two_tier\n", "given twice"),
                       ("link_mbps: !!float 5\n", "explicit tag !!float"),
                       ("hosts: " + "1" * 5000 + "\n", "an integer of 5000 digits")):
        path = spec_file(tmp_path, text, "in.yaml")
        full = [a if a != "OUT" else str(tmp_path / "out") for a in args] + [path]
        refused(full, word, path, root=tmp_path)


# -- files that are not files ---------------------------------------------------------------
@pytest.fixture
def odd_files(tmp_path: Path) -> dict[str, Path]:
    """A FIFO, a socket, a link loop, a link to /dev/zero, a directory and a big file."""
    files = {"fifo": tmp_path / "spec.fifo.yaml", "loop": tmp_path / "loop.yaml",
             "zero": tmp_path / "zero.yaml", "dir": tmp_path / "dir.yaml",
             "sock": tmp_path / "spec.sock", "big": tmp_path / "big.yaml"}
    os.mkfifo(files["fifo"])
    os.symlink(files["loop"], files["loop"])
    os.symlink("/dev/zero", files["zero"])
    files["dir"].mkdir()
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(files["sock"]))
    s.close()
    files["big"].write_text("a: " + "1" * (2 << 20) + "\n")
    return files


FILE_WORDS = {"fifo": "is a FIFO", "loop": "a loop of symbolic links",
              "zero": "is a character device", "dir": "is a directory", "sock": "is a socket",
              "big": "more than 1048576 bytes", "/dev/zero": "is a character device",
              "/dev/urandom": "is a character device", "/dev/null": "is a character device"}


@pytest.mark.parametrize("kind", list(FILE_WORDS))
@pytest.mark.parametrize("command", [["run", "{}", "--out", "{out}"],
                                     ["testbed", "check", "{}"],
                                     ["manage", "--check", "--config", "{}"],
                                     ["bench", "paper-002", "--out", "{out}", "--spec", "{}"]],
                         ids=["run", "testbed", "manage", "swift"])
def test_spec_paths_that_are_not_files(tmp_path, odd_files, command, kind):
    """A FIFO (which blocks a reader), an endless device, a link loop, a directory, a
    socket and an over-long file: refused in one line, in seconds, never 'no such file'."""
    path = str(odd_files.get(kind, kind))
    before = listing(tmp_path)
    line = one_line(invoke([a.format(path, out=tmp_path / "out") for a in command]),
                    FILE_WORDS[kind], path)
    assert "no such file" not in line and "expected a" in line
    assert listing(tmp_path) == before


def test_the_installed_command_does_not_block_on_a_fifo(tmp_path):
    """The console command itself, in its own process: a FIFO as the spec, as the
    cluster config and as ``--json`` ends in one line within the timeout (before, each
    blocked for ever)."""
    fifo = tmp_path / "x.fifo"
    os.mkfifo(fifo)
    for args, words in ((["run", str(fifo), "--out", str(tmp_path / "o")], "is a FIFO"),
                        (["manage", "--check", "--config", str(fifo)], "is a FIFO"),
                        (["testbed", "status", "--json", str(fifo)], "--json")):
        one_line(cli(args, timeout=120), words, str(fifo))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and listing(tmp_path) == {"x.fifo"}


def test_messages_name_the_problem_and_the_file(tmp_path):
    """A link loop and a directory are not 'no such file'; a placement's unknown host
    names the spec file, not only the field."""
    loop = tmp_path / "c.yaml"
    os.symlink(loop, loop)
    out = ["--out", str(tmp_path / "o")]
    for args in (["manage", "--config", str(loop)], ["manage", "--config", str(tmp_path)],
                 ["run", str(loop), *out], ["testbed", "check", str(loop)]):
        line = refused(args, root=tmp_path)
        assert "no such file" not in line and ("loop of symbolic links" in line
                                               or "is a directory" in line), line
    spec = tiny_spec()
    spec["placements"]["TP1"]["map"]["A"] = "S9"
    path = spec_file(tmp_path, spec)
    refused(["run", path, "--out", str(tmp_path / "o")], path, "placements.TP1",
            "unknown host 'S9'", "expected one of", root=tmp_path)
    refused(["run", str(tmp_path / "missing.yaml"), *out], "no such file", root=tmp_path)


# -- output paths ----------------------------------------------------------------------------
@pytest.fixture
def sinks(tmp_path: Path) -> dict[str, Path]:
    """Paths that are not regular files: a FIFO, a character device, a link to nothing,
    a link loop, a socket; and an output directory whose results.json is a directory,
    whose report.html is a FIFO, whose results.json links to the device."""
    d = tmp_path / "sinks"
    d.mkdir()
    out = {"fifo": d / "x.fifo", "dangling": d / "dangling.json", "loop": d / "loop.json",
           "sock": d / "x.sock", "device": Path("/dev/null")}
    os.mkfifo(out["fifo"])
    os.symlink(d / "nowhere" / "x.json", out["dangling"])
    os.symlink(out["loop"], out["loop"])
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(out["sock"]))
    s.close()
    if os.geteuid() == 0:
        # as root, a device made for the purpose (the same as /dev/null): code that
        # replaces what it writes would replace this one, never the machine's /dev/null
        # (main's `coflow sim --json /dev/null` did, as root)
        out["device"] = d / "null.dev"
        os.mknod(out["device"], 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    for name, inside, make in (("res-dir", "results.json", lambda p: p.mkdir()),
                               ("html-fifo", "report.html", os.mkfifo),
                               ("res-dev", "results.json",
                                lambda p: p.symlink_to(out["device"]))):
        (d / name).mkdir()
        make(d / name / inside)
        out[name] = d / name
    return out


def kinds(p: Path) -> dict[str, int]:
    """Each entry under ``p`` and its file type: what the refusal must leave as it was."""
    return {str(x): stat.S_IFMT(os.lstat(x).st_mode) for x in [p, *p.rglob("*")]}


OUT_WORDS = {"fifo": "is a FIFO", "dangling": "a symbolic link to nothing",
             "loop": "Too many levels of symbolic links", "sock": "is a socket",
             "device": "is a character device"}
FILE_CMDS = {
    "locality": ["locality", "bench", "--parallelism", "2", "--json", "{}"],
    "testbed-status": ["testbed", "status", "--json", "{}"],
    "selftest": ["testbed", "selftest", "--json", "{}"],
    "coflow-json": ["coflow", "sim", "--trace", "TRACE", "--policy", "fs", "--json", "{}"],
    "coflow-csv": ["coflow", "sim", "--trace", "TRACE", "--policy", "fs", "--per-coflow", "{}"],
}


@pytest.mark.parametrize("kind", list(OUT_WORDS))
@pytest.mark.parametrize("cmd", list(FILE_CMDS))
def test_output_files_that_are_not_files(tmp_path, sinks, cmd, kind):
    """``--json``/``--per-coflow`` naming a FIFO, a device, a socket or a link to
    nothing: refused before anything runs, the path left as it was (before, a FIFO
    blocked the write or was replaced, and a device was replaced: as root, /dev/null)."""
    trace = tmp_path / "t.txt"
    trace.write_text("6 1\n1 0 1 0 1 2:1.0\n")
    target = sinks[kind]
    before = kinds(tmp_path)
    null_mode = os.stat("/dev/null").st_mode
    args = [a.replace("TRACE", str(trace)).format(target) for a in FILE_CMDS[cmd]]
    one_line(invoke(args), "--json" if "--json" in args else "--per-coflow",
             OUT_WORDS[kind], str(target))
    assert kinds(tmp_path) == before
    assert os.stat("/dev/null").st_mode == null_mode


@pytest.mark.parametrize("kind", [*OUT_WORDS, "res-dir", "html-fifo", "res-dev"])
@pytest.mark.parametrize("cmd", [["run", "SPEC", "--out", "{}"],
                                 ["bench", "paper-003", "--out", "{}"]], ids=["run", "bench"])
def test_output_directories_that_are_not_directories(tmp_path, sinks, cmd, kind):
    """``--out`` naming something that is not a directory, or a directory whose
    results.json or report.html is not a regular file: refused before the run (no
    traceback after it), everything left as it was."""
    spec = spec_file(tmp_path, BASE)
    before = kinds(tmp_path)
    target = sinks[kind]
    inside = {"res-dir": ("results.json", "is a directory, expected a file path"),
              "html-fifo": ("report.html", "is a FIFO"),
              "res-dev": ("results.json", "is a character device")}
    name, word = inside[kind] if kind in inside else ("", OUT_WORDS[kind])
    r = invoke([a.replace("SPEC", spec).format(target) for a in cmd])
    one_line(r, "--out", word, str(target / name) if name else str(target))
    assert kinds(tmp_path) == before


@pytest.mark.parametrize("args", [
    ["run", "SPEC", "--out", ""], ["bench", "paper-003", "--out", ""],
    ["locality", "bench", "--json", ""], ["testbed", "status", "--json", ""],
    ["coflow", "sim", "--trace", "TRACE", "--policy", "fs", "--json", ""],
    ["coflow", "sim", "--trace", "TRACE", "--policy", "fs", "--per-coflow", " "],
], ids=["run", "bench", "locality", "status", "coflow-json", "coflow-csv"])
def test_an_empty_output_path_is_not_the_current_directory(tmp_path, monkeypatch, args):
    trace = tmp_path / "t.txt"
    trace.write_text("6 1\n1 0 1 0 1 2:1.0\n")
    spec = spec_file(tmp_path, BASE)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    r = invoke([a.replace("SPEC", spec).replace("TRACE", str(trace)) for a in args])
    one_line(r, "an empty path, expected")
    assert list(cwd.iterdir()) == []


# -- identifiers in traces -------------------------------------------------------------------
TRACE_CASES = [
    ("1_0 0 1 0 1 2:1.0", "coflow id: expected an integer in decimal digits, got '1_0'"),
    ("+1 0 1 0 1 2:1.0", "coflow id: expected an integer in decimal digits, got '+1'"),
    ("\u0661 0 1 0 1 2:1.0", "coflow id: expected an integer in decimal digits"),
    ("\uff11 0 1 0 1 2:1.0", "coflow id: expected an integer in decimal digits"),
    ("1 1_000 1 0 1 2:1.0", "arrival (ms): expected an integer in decimal digits"),
    ("1 0 0_1 0 1 2:1.0", "number of mappers: expected an integer in decimal digits"),
    ("1 0 1 0_0 1 2:1.0", "mapper port: expected an integer in decimal digits"),
    ("1 0 1 0 0_1 2:1.0", "number of reducers: expected an integer in decimal digits"),
    ("1 0 1 0 1 2_0:1.0", "port: expected an integer in decimal digits"),
    ("1 0 1 0 1 2:1_0", "MiB is not a decimal number"),
    ("1 0 1 0 1 2:infinity", "MiB is not a decimal number"),
    ("1 0 1 0 1 2:+1.0", "MiB is not a decimal number"),
    ("1 0 1 0 1 2:0x10", "MiB is not a decimal number"),
    ("1 0 1 0 1 2:\u0661.0", "MiB is not a decimal number"),
    ("1" * 5000 + " 0 1 0 1 2:1.0", "coflow id: expected 0..9223372036854775807, got a "
     "number of 5000 digits"),
]


@pytest.mark.parametrize(("line", "words"), TRACE_CASES, ids=[str(i) for i in range(len(
    TRACE_CASES))])
def test_trace_identifiers_parse_strictly(tmp_path, line, words):
    """A coflow id (or any field) that int() or float() would read loosely: '1_0' is
    not 10, '+1' is not 1, other scripts' digits are not digits."""
    trace = tmp_path / "t.txt"
    trace.write_text(f"6 2\n{line}\n2 5 1 1 1 3:1.0\n")
    out = tmp_path / "s.json"
    line_ = refused(["coflow", "sim", "--trace", str(trace), "--policy", "fs", "--json",
                     str(out)], f"{trace}:2", words, root=tmp_path)
    assert "\n" not in line_


def test_trace_with_underscored_ids_is_not_two_equal_ids(tmp_path):
    """'1_0' next to '10': before, the two read as the same id (and 'repeats line')."""
    trace = tmp_path / "t.txt"
    trace.write_text("6 2\n10 0 1 0 1 2:1.0\n1_0 5 1 1 1 3:1.0\n")
    line = refused(["coflow", "sim", "--trace", str(trace), "--policy", "fs"],
                   f"{trace}:3", "'1_0'", root=tmp_path)
    assert "repeats" not in line


# -- streamband manage --check ------------------------------------------------------------
def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster(tmp_path: Path) -> dict:
    """README's cluster.yaml on loopback ports of this test's own (Storm's and Flink's
    reports on one), with a second switch (s2: a third host and a trunk from s1)."""
    readme = (ROOT / "README.md").read_text().split("`cluster.yaml`, every field")[1]
    cfg = yaml.safe_load(readme.split("```yaml\n", 1)[1].split("```", 1)[0])
    cfg["storm"].update(nimbus=f"127.0.0.1:{free_port()}",
                        profiler=f"127.0.0.1:{free_port(socket.SOCK_DGRAM)}")
    cfg["flink"].update(rest=f"127.0.0.1:{free_port()}", profiler=cfg["storm"]["profiler"])
    cfg["controller"]["api"] = f"127.0.0.1:{free_port()}"
    cfg["manager"].update(state_dir=str(tmp_path / "state"),
                          listen=f"127.0.0.1:{free_port()}")
    net = cfg["network"]
    net["switches"].append({"name": "s2", "dpid": 2})
    net["hosts"].append({**net["hosts"][0], "ip": "10.0.0.4", "switch": "s2"})
    net["trunks"] = [{"a": "s1", "b": "s2", "a_port": "t1", "b_port": "t2", "mbps": 10}]
    cfg["topologies"][0]["tuple_bytes"] = {"A->B": 8192}
    return cfg


def put(cfg: dict, dotted: str, value: object) -> dict:
    *path, last = dotted.split(".")
    node = cfg
    for p in path:
        node = node[int(p)] if isinstance(node, list) else node[p]
    node[int(last) if isinstance(node, list) else last] = value
    return cfg


AFILE = "AFILE"
CONFIG_CASES = [
    ("network.hosts.0.ip", "not-an-ip", "network.hosts.0.ip: expected an IPv4 address"),
    ("network.hosts.0.ip", "10.0.0.300", "network.hosts.0.ip: expected an IPv4 address"),
    ("network.hosts.0.ip", "10.0.0.2/24", "network.hosts.0.ip: expected an IPv4 address"),
    ("network.hosts.0.ip", "", "network.hosts.0.ip: expected an IPv4 address"),
    ("network.hosts.0.ip", "fe80::1", "network.hosts.0.ip: expected an IPv4 address"),
    ("network.hosts.0.ip", 167772162, "network.hosts.0.ip"),
    ("network.switches.1.dpid", 1, "network.switches.1.dpid: 1 is switch 0's too"),
    ("network.switches.1.name", "s1", "network.switches.1.name: 's1' is switch 0's too"),
    ("network.switches.0.dpid", 0, "network.switches.0.dpid"),
    ("network.switches.0.dpid", 2**64, "network.switches.0.dpid"),
    ("network.switches.0.name", "", "network.switches.0.name"),
    ("network.trunks.0.b", "s1", "a trunk joins two switches, got 's1' at both ends"),
    ("network.hosts.1.port", "eth2", "port 'eth2' of s1 is network.hosts.0.port already"),
    ("network.trunks.0.a_port", "eth3", "port 'eth3' of s1 is network.hosts.1.port already"),
    ("network.hosts.0.port", "", "network.hosts.0.port"),
    ("network.hosts.0.link_mbps", 1e300, "network.hosts.0.link_mbps"),
    ("network.hosts.0.link_mbps", True, "network.hosts.0.link_mbps: expected a number, "
     "not a boolean"),
    ("network.trunks.0.mbps", float("nan"), "network.trunks.0.mbps"),
    ("manager.listen", "nowhere.invalid:18480", "manager.listen: 'nowhere.invalid' is not an "
     "IPv4 address"),
    ("manager.listen", "999.1.1.1:18480", "manager.listen: '999.1.1.1' is not an IPv4"),
    ("manager.listen", "127.0.0.1:\u0661\u0668\u0664\u0668\u0660", "manager.listen: expected "
     "HOST:PORT"),
    ("storm.profiler", "nowhere.invalid:17071", "storm.profiler: 'nowhere.invalid' is not an "
     "IPv4 address"),
    ("storm.profiler", "127.0.0.1:0", "storm.profiler: expected HOST:PORT"),
    ("topologies.0.tuple_bytes", {"A->B": -5}, "topologies.0.tuple_bytes: 'A->B': expected "
     "bytes per tuple in (0, 1.07374e+09], got -5"),
    ("topologies.0.tuple_bytes", {"A->B": float("nan")}, "got nan"),
    ("topologies.0.tuple_bytes", {"A->B": float("inf")}, "got inf"),
    ("topologies.0.tuple_bytes", {"A->B": 1e300}, "got 1e+300"),
    ("topologies.0.tuple_bytes", {"A->B": 0}, "got 0"),
    ("topologies.0.tuple_bytes", {"A->B": "8192"}, "'A->B': expected a number, not a string"),
    ("manager.state_dir", AFILE, "manager.state_dir: AFILE is a file, expected a directory"),
    ("manager.state_dir", AFILE + "/state", "AFILE is a file, expected a directory on the way"),
    ("manager.state_dir", "/proc/streamband-state", "/proc is not writable"),
    ("manager.dt_s", True, "manager.dt_s: expected a number, not a boolean"),
    ("manager.keep_allocations", 10**12, "manager.keep_allocations"),
    ("enforce", "police", "enforce: Input should be 'meter' or 'shaper' (got 'police')"),
    ("enforce", None, "enforce: Input should be 'meter' or 'shaper'"),
]


@pytest.mark.parametrize(("field", "value", "words"), CONFIG_CASES,
                         ids=[f"{c[0]}={str(c[1])[:12]}" for c in CONFIG_CASES])
def test_check_refuses_configs_that_cannot_work(tmp_path, field, value, words):
    afile = tmp_path / "afile"
    afile.write_text("keep")
    if isinstance(value, str):
        value = value.replace(AFILE, str(afile))
    cfg = put(cluster(tmp_path), field, value)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(cfg))
    before = listing(tmp_path)
    one_line(invoke(["manage", "--config", str(path), "--check"]), str(path),
             words.replace(AFILE, str(afile)))
    assert listing(tmp_path) == before and afile.read_text() == "keep"


def finished(procs: list[subprocess.Popen[str]], timeout: float = 180
             ) -> list[subprocess.CompletedProcess[str]]:
    """Wait for processes started together (a start costs seconds on a busy machine:
    they share the wait); one still running after ``timeout`` is killed, and fails."""
    deadline = time.monotonic() + timeout
    out = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            _, err = p.communicate()
            err = "still running: " + (err or "")
        out.append(subprocess.CompletedProcess(p.args, p.returncode, "", err))
    return out


def spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``streamband ARGS`` started as its own process group, unmarked (the testbed's
    clean-up is not its owner)."""
    return subprocess.Popen([sys.executable, "-m", "streamband.cli", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={k: v for k, v in {**os.environ, **(env or {})}.items()
                                 if k != "STREAMBAND_TESTBED"}, start_new_session=True)


def test_check_refuses_what_a_start_refuses(tmp_path):
    """Busy ports, a state file that is a directory, a token no header can carry: the
    real start (its own process) refuses each with the very line ``--check`` gives, and
    leaves nothing running (the process ends, its ports are free again)."""
    cases = []
    held: list[socket.socket] = []
    for i, (env, words) in enumerate((
            ({}, "manager.listen: cannot listen on"), ({}, "storm.profiler: cannot listen on"),
            ({"STREAMBAND_MANAGE_TOKEN": "t\u00f6ken"}, "$STREAMBAND_MANAGE_TOKEN"),
            ({"STREAMBAND_API_TOKEN": "a b"}, "$STREAMBAND_API_TOKEN"),
            ({}, "state.db is a directory"))):
        (tmp_path / str(i)).mkdir()
        cfg = cluster(tmp_path / str(i))
        path = tmp_path / str(i) / "cluster.yaml"
        path.write_text(yaml.safe_dump(cfg))
        ok = invoke(["manage", "--config", str(path), "--check"])
        assert ok.returncode == 0, ok.stderr
        if i == 0:
            held.append(socket.socket())
            held[-1].bind(("127.0.0.1", int(cfg["manager"]["listen"].rpartition(":")[2])))
            held[-1].listen(1)
        elif i == 1:
            held.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
            held[-1].bind(("127.0.0.1", int(cfg["storm"]["profiler"].rpartition(":")[2])))
        elif i == 4:
            (tmp_path / str(i) / "state" / "state.db").mkdir(parents=True)
        cases.append((cfg, path, env, words))
    try:
        checked = [one_line(invoke(["manage", "--config", str(path), "--check"], env=env),
                            words) for _, path, env, words in cases]
        started = finished([spawn(["manage", "--config", str(path)], env)
                            for _, path, env, _ in cases])
    finally:
        for s in held:
            s.close()
    for line, run, (cfg, _, _, words) in zip(checked, started, cases, strict=True):
        assert one_line(run, words) == line
        for addr, kind in ((cfg["manager"]["listen"], socket.SOCK_STREAM),
                           (cfg["storm"]["profiler"], socket.SOCK_DGRAM)):
            with socket.socket(socket.AF_INET, kind) as s:  # free: nothing left holding it
                s.bind(("127.0.0.1", int(addr.rpartition(":")[2])))


# -- the controller's HTTP API ---------------------------------------------------------------
TOKEN = "s3cret-token"


def start_controller(env: dict[str, str] | None = None, *args: str
                     ) -> tuple[subprocess.Popen[str], str]:
    api, of = free_port(), free_port()
    proc = spawn(["controller", "--listen", f"127.0.0.1:{api}", "--openflow",
                  f"127.0.0.1:{of}", *args], env)
    return proc, f"http://127.0.0.1:{api}"


@pytest.fixture(scope="module")
def controller():
    """``streamband controller`` on loopback ports of its own, with a token; stopped,
    and checked gone, at the end."""
    proc, base = start_controller(None, "--token", TOKEN)
    ctl = ControllerClient(base.removeprefix("http://"), TOKEN)
    try:
        ctl.wait_ready(0, timeout=120)
    except ControllerError:
        stop(proc)
        raise
    yield ctl.http
    ctl.close()
    stop(proc)
    proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode is not None
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{base}/v1/health", timeout=2)


FLOW = '{"src_ip": "10.0.0.1", "dst_ip": "10.0.0.2"}'


def meters(m: str = "", lease: str = "", flow: str = FLOW) -> bytes:
    body = f'{{"meters": [{{"flow": {flow}{", " + m if m else ""}}}]'
    return (body + (f', "lease_s": {lease}' if lease else "") + "}").encode()


API_CASES = [
    # non-finite numbers: the 422's own body failed to render (500)
    ("PUT", "/v1/meters", meters('"rate_bps": NaN'), "rate_bps"),
    ("PUT", "/v1/meters", meters('"rate_bps": -Infinity'), "rate_bps"),
    ("PUT", "/v1/meters", meters(lease="NaN"), "lease_s"),
    ("PUT", "/v1/meters", meters(lease="Infinity"), "lease_s"),
    ("PUT", "/v1/meters", meters(lease="-Infinity"), "lease_s"),
    ("POST", "/v1/lease", b'{"lease_s": NaN}', "lease_s"),
    ("POST", "/v1/lease", b'{"lease_s": Infinity}', "lease_s"),
    ("PUT", "/v1/classes", b'{"classes": [], "lease_s": NaN}', "lease_s"),
    ("PUT", "/v1/classes", f'{{"classes": [{{"flow": {FLOW}, "cls": 1, "port": "s1-eth1", '
     f'"link_rate_bps": NaN}}]}}'.encode(), "link_rate_bps"),
    ("PUT", "/v1/classes", b'{"classes": [], "shapes": {"p": {"reserve_bps": NaN}}}',
     "reserve_bps"),
    ("PUT", "/v1/rates", f'{{"rates": [{{"flow": {FLOW}, "rate_bps": NaN, "port": "p"}}]}}'
     .encode(), "rate_bps"),
    ("PUT", "/v1/rates", b'{"rates": [], "lease_s": Infinity}', "lease_s"),
    # values that are not what they look like, or absurd
    ("PUT", "/v1/rates", f'{{"rates": [{{"flow": {FLOW}, "rate_bps": 0, "port": "p"}}]}}'
     .encode(), "rate_bps"),
    ("PUT", "/v1/rates", f'{{"rates": [{{"flow": {FLOW}, "rate_bps": 1e300, "port": "p"}}]}}'
     .encode(), "rate_bps"),
    ("PUT", "/v1/rates", f'{{"rates": [{{"flow": {FLOW}, "rate_bps": 1e6}}]}}'.encode(),
     "port"),
    ("PUT", "/v1/meters", meters('"rate_bps": -5'), "rate_bps"),
    ("PUT", "/v1/meters", meters('"rate_bps": 0'), "rate_bps"),
    ("PUT", "/v1/meters", meters('"rate_bps": true'), "rate_bps"),
    ("PUT", "/v1/meters", meters('"rate_bps": "5e6"'), "rate_bps"),
    ("PUT", "/v1/meters", meters('"rate_bps": 1e300'), "rate_bps"),
    ("PUT", "/v1/meters", meters(lease="-1"), "lease_s"),
    ("PUT", "/v1/meters", meters(lease="true"), "lease_s"),
    ("PUT", "/v1/meters", meters('"dpid": -1'), "dpid"),
    ("PUT", "/v1/meters", meters('"dpid": 0'), "dpid"),
    ("PUT", "/v1/meters", meters('"dpid": 1180591620717411303424'), "dpid"),
    ("POST", "/v1/lease", b'{"lease_s": "x"}', "lease_s"),
    ("POST", "/v1/lease", b'{"lease_s": 1e9}', "lease_s"),
    ("PUT", "/v1/classes", b'{"classes": [], "shapes": {"p": {"leaf_pkts": [-1, 1, 1, 1, '
     b'1, 1, 1, 1]}}}', "leaf_pkts"),
    ("PUT", "/v1/classes", f'{{"classes": [{{"flow": {FLOW}, "cls": 9, "port": "p"}}]}}'
     .encode(), "cls"),
    # addresses that are not IPv4 addresses
    ("PUT", "/v1/meters", meters(flow='{"src_ip": "not-an-ip", "dst_ip": "10.0.0.2"}'),
     "src_ip"),
    ("PUT", "/v1/meters", meters(flow='{"src_ip": "10.0.0.1", "dst_ip": "10.0.0.300"}'),
     "dst_ip"),
    ("PUT", "/v1/meters", meters(flow='{"src_ip": "::1", "dst_ip": "10.0.0.2"}'), "src_ip"),
    ("PUT", "/v1/meters", meters(flow='{"src_ip": "", "dst_ip": "10.0.0.2"}'), "src_ip"),
    ("PUT", "/v1/meters", meters(flow='{"src_ip": "10.0.0.1", "dst_ip": 167772162}'),
     "dst_ip"),
    ("PUT", "/v1/meters", meters(flow='{"src_ip": "10.0.0.1", "dst_ip": "10.0.0.2", '
                                      '"dst_port": 70000}'), "dst_port"),
    ("PUT", "/v1/meters", meters(flow='{"src_ip": "10.0.0.1", "dst_ip": "10.0.0.2", '
                                      '"proto": "icmp"}'), "proto"),
    # PUT /v1/hosts: negative, zero, absurd dpids; keys that are not addresses
    ("PUT", "/v1/hosts", b'{"hosts": {"10.0.0.1": -1}}', "hosts"),
    ("PUT", "/v1/hosts", b'{"hosts": {"10.0.0.1": 0}}', "hosts"),
    ("PUT", "/v1/hosts", b'{"hosts": {"10.0.0.1": 1180591620717411303424}}', "hosts"),
    ("PUT", "/v1/hosts", b'{"hosts": {"10.0.0.1": 1.5}}', "hosts"),
    ("PUT", "/v1/hosts", b'{"hosts": {"10.0.0.1": true}}', "hosts"),
    ("PUT", "/v1/hosts", b'{"hosts": {"10.0.0.1": "1"}}', "hosts"),
    ("PUT", "/v1/hosts", b'{"hosts": {"bad": 1}}', "hosts"),
    ("PUT", "/v1/hosts", b'{"hosts": {"10.0.0.999": 1}}', "hosts"),
    ("PUT", "/v1/hosts", b'{"hosts": {"10.0.0.1/8": 1}}', "hosts"),
    # bodies that are not JSON of this shape
    ("PUT", "/v1/meters", b"[" * 100_000 + b"]" * 100_000, ""),
    ("POST", "/v1/lease", b'{"lease_s": ' + b"1" * 5000 + b"}", ""),
    ("PUT", "/v1/meters", b"\xff\xfe", ""),
    ("PUT", "/v1/meters", b'{"meters": 5}', "meters"),
    ("GET", "/v1/ports?fresh=maybe", None, "fresh"),
    ("DELETE", "/v1/meters/" + "9" * 40, None, ""),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), API_CASES,
                         ids=[f"{c[0]} {c[1][:20]} {i}" for i, c in enumerate(API_CASES)])
def test_api_refuses_with_4xx(controller, method, path, body, field):
    """Each request is refused (4xx, the field named when the body did not validate,
    never 500) and nothing of it is kept; the controller answers the next request."""
    r = controller.request(method, path, content=body,
                           headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    if field:
        assert r.status_code == 422 and field in json.dumps(r.json()["detail"]), r.text[:300]
    assert controller.get("/v1/hosts").json() == {}
    assert controller.get("/v1/meters").json() == []
    assert controller.get("/v1/rates").json() == []
    assert controller.get("/v1/health").status_code == 200


@pytest.mark.parametrize("header", [b"Bearer t\xf6ken", "Bearer tök".encode(),
                                    b"Bearer " + TOKEN.encode() + b"\xa0", b"Bearer",
                                    b"Bearer " + TOKEN.encode()[:-1], None],
                         ids=lambda h: repr(h)[:24])
def test_api_bad_authorization_is_401(controller, header):
    r = httpx.get(str(controller.base_url.join("/v1/health")), timeout=10,
                  headers={} if header is None else {"authorization": header})
    assert r.status_code == 401, (r.status_code, r.text[:200])
    assert controller.get("/v1/health").status_code == 200


def test_controller_refuses_a_token_no_header_can_carry():
    """A token in the environment or on the command line that is not printable ASCII:
    the controller does not start (before, it started and every request was a 500)."""
    cases = [({"STREAMBAND_API_TOKEN": "t\u00f6ken"}, [], "$STREAMBAND_API_TOKEN"),
             ({"STREAMBAND_API_TOKEN": "tok en"}, [], "$STREAMBAND_API_TOKEN"),
             ({"STREAMBAND_API_TOKEN": "tok\x7fen"}, [], "$STREAMBAND_API_TOKEN"),
             ({}, ["--token", "t\u00f6ken"], "--token"),
             ({}, ["--token", "a\tb"], "--token")]
    started = [start_controller(env, *args) for env, args, _ in cases]
    try:
        runs = finished([p for p, _ in started])
    finally:
        for p, _ in started:
            stop(p)
            p.stderr.close()  # type: ignore[union-attr]
    for run, (_, base), (_, _, words) in zip(runs, started, cases, strict=True):
        one_line(run, words, "printable ASCII")
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{base}/v1/health", timeout=2)


def test_the_client_tells_a_refusal_from_an_outage(controller):
    """The manage service alerts "controller refused", not "unreachable", when the
    controller answers: the client's error carries the answer's status, and none when
    nothing answers."""
    ctl = ControllerClient(str(controller.base_url).removeprefix("http://"), TOKEN)
    with pytest.raises(ControllerError) as refused:  # no such device to shape: 409
        ctl.put_rates([{"flow": json.loads(FLOW), "port": "sb-no-such-dev", "rate_bps": 1e6}])
    assert refused.value.status == 409
    ctl.close()
    dead = ControllerClient(f"127.0.0.1:{free_port()}", TOKEN, timeout=2.0)
    with pytest.raises(ControllerError) as down:
        dead.health()
    assert down.value.status is None
    dead.close()

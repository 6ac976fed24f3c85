"""Bad input to ``streamband coflow sim`` through the real entry point
(``streamband.cli:app``): malformed traces and random option values end with exit
code 2, one line on stderr and no traceback, and nothing is written; what runs writes
whole files."""

from __future__ import annotations

import json
import math
import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from streamband.cli import app

#: a valid 3-coflow trace on 6 ports (runs in milliseconds)
GOOD = ["6 3", "1 0 2 0 1 2 2:1.5 3:2.0", "2 10 1 4 1 5:0.5", "3 25 3 0 1 2 1 3:4.0"]
FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def invoke(args: list[str]):
    return CliRunner().invoke(app, ["coflow", "sim", *args])


def assert_refused(r, out: Path) -> None:
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert not any(out.iterdir()), list(out.iterdir())  # nothing written


def _int_field(v: int) -> st.SearchStrategy[str]:
    """A field that is not the valid integer it replaces."""
    return st.one_of(st.sampled_from(["-1", "x", "1.5", "nan", "", "9" * 30, "0x10"]),
                     st.text(string.ascii_letters, min_size=1, max_size=5))


@st.composite
def bad_trace(draw) -> bytes:
    """A trace that breaks one rule of the format."""
    lines = list(GOOD)
    kind = draw(st.sampled_from(["binary", "utf8", "empty", "header", "count", "dup",
                                 "field", "mib", "mappers", "reducers", "ports"]))
    if kind == "binary":
        return draw(st.binary(min_size=1, max_size=40)) + b"\0"
    if kind == "utf8":
        i = draw(st.integers(0, len(lines) - 1))
        raw = "\n".join(lines).encode()
        pos = sum(len(ln) + 1 for ln in lines[:i])
        return raw[:pos] + draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xa0"])) + raw[pos:]
    if kind == "empty":
        return draw(st.sampled_from([b"", b"\n\n", b"   \n"]))
    if kind == "header":
        lines[0] = draw(st.sampled_from(["6", "6 3 1", "x 3", "6 -1", "0 3"]))
    elif kind == "count":
        n = draw(st.integers(0, 10).filter(lambda n: n != 3))
        lines[0] = f"6 {n}"
    elif kind == "dup":
        lines.append(lines[1])
        lines[0] = "6 4"
    elif kind == "field":  # id, arrival, or a mapper port replaced by a non-integer
        i = draw(st.integers(1, 3))
        tok = lines[i].split()
        j = draw(st.sampled_from([0, 1, 3]))
        tok[j] = draw(_int_field(0))
        lines[i] = " ".join(t for t in tok if t) or "?"
    elif kind == "mib":
        bad = draw(st.sampled_from(["-1", "nan", "inf", "x", "1e999", ""]))
        lines[2] = f"2 10 1 4 1 5:{bad}"
    elif kind == "mappers":  # the announced count disagrees with the ports listed
        m = draw(st.integers(0, 9).filter(lambda m: m != 2))
        lines[1] = f"1 0 {m} 0 1 2 2:1.5 3:2.0"
    elif kind == "reducers":
        r = draw(st.integers(0, 9).filter(lambda r: r != 2))
        lines[1] = f"1 0 2 0 1 {r} 2:1.5 3:2.0"
    else:  # a port outside 0..5, or a huge port count
        lines[draw(st.sampled_from([0, 2]))] = draw(st.sampled_from(
            ["99999999 3", "2 10 1 6 1 5:0.5", "2 10 1 4 1 -2:0.5"]))
    return ("\n".join(lines) + "\n").encode()


@FUZZ
@given(data=bad_trace())
def test_malformed_traces_exit_2_with_one_line(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("t")
    trace = d / "trace.txt"
    trace.write_bytes(data)
    out = d / "out"
    out.mkdir()
    r = invoke(["--trace", str(trace), "--policy", "fs", "--json", str(out / "s.json"),
                "--per-coflow", str(out / "c.csv")])
    assert_refused(r, out)


NUM = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                st.sampled_from(["nan", "inf", "-inf", "x", "", "1e999", "-0"]))
OPTIONS = {
    "--link-gbps": NUM, "--queues": st.one_of(st.integers(-10, 20), st.just("two")),
    "--waves": st.one_of(st.integers(-5, 9), st.just("1.5")),
    "--starvation-s": NUM, "--info-delay-s": NUM,
    "--topology": st.one_of(st.text(max_size=12),
                            st.sampled_from(["fattree:8", "fat_tree:k=3", "fat_tree",
                                             "big_switch:k=4", "fat_tree:k=8,x=1",
                                             "fat_tree:k=nan", "fat_tree:k=4"])),
    "--policy": st.one_of(st.text(max_size=10), st.sampled_from(["stream", "fs", "aalo"])),
    "--weight": st.one_of(st.text(max_size=8), st.just("literal")),
}


@FUZZ
@given(opts=st.dictionaries(st.sampled_from(sorted(OPTIONS)), st.just(None), min_size=1,
                            max_size=3).flatmap(
    lambda d: st.fixed_dictionaries({k: OPTIONS[k] for k in d})))
def test_random_option_values_exit_0_or_2(tmp_path_factory, opts):
    """Either the run is valid (exit 0, whole files) or it is refused before it
    starts (exit 2, one line, nothing written); never a traceback."""
    d = tmp_path_factory.mktemp("o")
    trace = d / "trace.txt"
    trace.write_text("\n".join(GOOD) + "\n")
    out = d / "out"
    out.mkdir()
    args = ["--trace", str(trace), "--json", str(out / "s.json"),
            "--per-coflow", str(out / "c.csv")]
    opts.setdefault("--policy", "stream")
    for k, v in opts.items():
        args += [k, str(v)]
    r = invoke(args)
    assert "Traceback" not in r.stdout + r.stderr
    if r.exit_code == 0:
        s = json.loads((out / "s.json").read_text())
        assert s["coflows"] == 3 and math.isfinite(s["avg_cct_s"])
        assert "2^30" in s["units"]
        assert len((out / "c.csv").read_text().splitlines()) == 4
    else:
        assert_refused(r, out)


def test_bad_output_paths_refused_before_the_run(tmp_path):
    """A directory, an unwritable place, a missing parent: refused before simulating."""
    trace = tmp_path / "trace.txt"
    trace.write_text("\n".join(GOOD) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    for bad in (out, Path("/proc/streamband.json"), out / "missing" / "s.json"):
        r = invoke(["--trace", str(trace), "--policy", "fs", "--json", str(bad)])
        assert_refused(r, out)
        r = invoke(["--trace", str(trace), "--policy", "fs", "--per-coflow", str(bad)])
        assert_refused(r, out)


def test_units_in_help_and_output(tmp_path):
    trace = tmp_path / "trace.txt"
    trace.write_text("\n".join(GOOD) + "\n")
    assert "2^30 bit/s" in " ".join(invoke(["--help"]).stdout.split())
    r = invoke(["--trace", str(trace), "--policy", "stream", "--topology", "fat_tree:k=4"])
    assert r.exit_code == 0, r.stderr
    assert "2^30 bit/s" in " ".join(r.stdout.split())

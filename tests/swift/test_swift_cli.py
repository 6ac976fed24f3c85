"""``streamband swift up | status`` for real, and ``streamband testbed clean``
stopping the store (every process of it carries the testbed's mark)."""

from __future__ import annotations

import json
import os

import pytest
import yaml
from typer.testing import CliRunner

from streamband.cli import app
from streamband.experiments import paper002
from streamband.procs import clean, leftovers, marked_processes
from streamband.swift.layout import STATE

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the testbed needs root")


def _running(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_up_status_and_testbed_clean_stops_the_store(tmp_path):
    clean()
    data = yaml.safe_load(paper002.SPEC.read_text())
    data["testbed"].update(api="127.0.0.1:8191", openflow="127.0.0.1:6663")
    path = tmp_path / "store.yaml"
    path.write_text(yaml.safe_dump(data))
    try:
        r = CliRunner().invoke(app, ["swift", "up", str(path), "--no-populate"])
        assert r.exit_code == 0, r.output
        assert r.output.startswith("up") and "proxy http://10.0.0.2:8080" in r.output
        st = json.loads(STATE.read_text())
        pids = [st["pid"], *st["processes"].values()]
        assert all(_running(p) for p in pids)
        r = CliRunner().invoke(app, ["swift", "status"])
        assert r.output.startswith("up"), r.output
        r = CliRunner().invoke(app, ["swift", "up", str(path)])
        assert r.exit_code == 2 and "already up" in r.output
        r = CliRunner().invoke(app, ["testbed", "clean"])
        assert r.exit_code == 0, r.output
        assert not any(_running(p) for p in pids)
        assert CliRunner().invoke(app, ["swift", "status"]).output.strip() == "down"
        assert marked_processes() == [] and leftovers() == []
    finally:
        clean()

"""Prometheus (Debian's) scrapes the running manager with its bearer token, and the
series come back through Prometheus's HTTP API with conventional names and units."""

from __future__ import annotations

import shutil
import subprocess

import httpx
import pytest
import yaml

from streamband.manage.stage import MANAGE_PORT, MASTER, wait_for
from streamband.procs import marked_env
from streamband.storm.cluster import free_port


@pytest.fixture
def prometheus(stage, tmp_path):
    """Prometheus scraping the manager every second; stopped after the test."""
    exe = shutil.which("prometheus")
    assert exe, "Debian's prometheus is needed (apt-get install prometheus)"
    port = free_port()
    conf = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [{
                "job_name": "streamband", "static_configs": [
                    {"targets": [f"{MASTER}:{MANAGE_PORT}"]}],
                "authorization": {"type": "Bearer",
                                  "credentials": stage.tokens["STREAMBAND_MANAGE_TOKEN"]}}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(conf))
    log = open(tmp_path / "prometheus.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([exe, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT, env=marked_env())
    log.close()
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5)
        wait_for(lambda: client.get("/-/ready").status_code == 200, 30, "prometheus ready")
        yield client
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    assert proc.poll() is not None


def query(client: httpx.Client, q: str) -> list[dict]:
    r = client.get("/api/v1/query", params={"query": q})
    r.raise_for_status()
    return r.json()["data"]["result"]


def test_prometheus_scrapes_the_manager(stage, prometheus):
    flows = {f["name"] for f in stage.topology("fj")["flows"]}
    got = wait_for(lambda: len(r := query(prometheus, 'streamband_flow_rate_bits_per_second'
                                          '{topology="fj"}')) == len(flows) and r, 30,
                   "the flows' rates in Prometheus")
    assert {s["metric"]["flow"] for s in got} == flows
    assert all(s["metric"]["job"] == "streamband" for s in got)
    up = query(prometheus, 'up{job="streamband"}')
    assert up and up[0]["value"][1] == "1"
    n = query(prometheus, "streamband_allocation_latency_seconds_count")
    assert n and float(n[0]["value"][1]) > 0
    assert query(prometheus, 'streamband_allocations_total{topology="fj",decision="policy"}')
    assert query(prometheus, 'streamband_leases{state="capped"}')
    assert query(prometheus, 'streamband_link_used_bits_per_second')
    # a range query: the series has history, not a single sample
    wait_for(lambda: len(prometheus.get("/api/v1/query", params={
        "query": 'streamband_flow_measured_bits_per_second{topology="fj"}[10s]'}).json()[
        "data"]["result"][0]["values"]) >= 3, 20, "several samples scraped")

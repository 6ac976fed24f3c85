"""``streamband manage`` against the testbed's Storm cluster as if it were remote: it maps
the running topology's flows from Nimbus, allocates every Δt, installs meters with leases
through the controller's API, switches policies live, picks up a topology submitted,
rebalanced and killed while it runs, and refuses a request without its token."""

from __future__ import annotations

import time

from streamband.manage.stage import wait_for


def capped(stage, names: set[str]) -> dict[str, float | None]:
    """The controller's meters of the manager's flows ``names``: name -> rate."""
    return {n: r for n, r in stage.meters().items() if n in names}


def test_flows_mapped_and_allocated(stage):
    tb, cluster = stage.tb, stage.cluster
    info = cluster.info("fj")
    ports = {e["component"]: e["port"] for e in info["executors"]}
    w1, w2 = tb.ip("w1"), tb.ip("w2")
    fj = stage.topology("fj")
    # TP1: A, B on w1; C, D on w2: A->C and B->D cross w1's uplink, matched by the
    # receiving workers' slot ports as Nimbus placed them
    assert sorted(f["name"] for f in fj["flows"]) == sorted(
        f"{w1}->{w2}:{ports[c]}" for c in "CD")
    assert all(f["path"] == [f"{w1}->s1", f"s1->{w2}"] for f in fj["flows"])
    assert fj["policy"] == "appaware" and fj["id"] == info["id"]
    names = {f["name"] for f in fj["flows"]}
    # the policy decides once the workers report (their JVMs start on 2 cores, slower on
    # a busy machine: it failed open for 24 s beside stress-ng)
    wait_for(lambda: stage.topology("fj")["decision"] == "policy", 90, "fj's flow reports")
    # 300 tuples/s of 4 + 6 KiB need 24.6 Mbit/s of w1's 20 while the workers keep up with
    # the spout: appaware caps both flows at each step that finds the link bottlenecked,
    # and leaves both uncapped at the others (beside a busy process the workers fell
    # behind and the link ran below it for up to 33 s at a time: the wait is the workers'
    # start-up bound above)
    rates = wait_for(lambda: (r := capped(stage, names)) and len(r) == 2
                     and all(r.values()) and r, 90, "both flows capped")
    assert sum(rates.values()) <= 20e6 * 1.01

    def decided() -> list[list[float | None]]:
        steps = stage.api().get("/api/v1/allocations",
                                params={"topology": "fj", "limit": 10_000}).json()
        return [a["rates_bps"] for a in steps if a["decision"] == "policy"]

    # a step logs its allocation after it pushed the meters, within the step: the lease
    # outlasts any step whose meters are still in force
    wait_for(lambda: any(None not in r for r in decided()), stage.status()["lease_s"],
             "the capping step in the allocation log")
    for r in decided():  # both or neither, and never more than the link
        assert r.count(None) in (0, 2) and sum(x or 0.0 for x in r) <= 20e6 * 1.01, r
    before = stage.status()["lease_s"]  # 3 x the longer of Δt and the recent step gaps
    leases = {m["lease_left_s"] for m in stage.controller().meters()}
    granted = max(before, stage.status()["lease_s"])  # a push may fall between the reads
    assert before >= 3.0 and max(leases) <= granted
    log = stage.api().get("/api/v1/allocations", params={"topology": "fj"}).json()
    assert log and log[0]["policy"] == "appaware" and log[0]["step_ms"] > 0
    events = [e["message"] for e in stage.status()["events"]]
    assert any("placement read: 2 flows" in m for m in events), events


def test_policy_switch_and_token(stage):
    api = stage.api()
    names = {f["name"] for f in stage.topology("fj")["flows"]}
    assert stage.api(token=False).get("/api/v1/status").status_code == 401
    assert stage.api(token=False).put("/api/v1/topologies/fj/policy",
                                      json={"policy": "tcp"}).status_code == 401
    r = api.put("/api/v1/topologies/fj/policy", json={"policy": "appawre"})
    assert r.status_code == 422 and "did you mean 'appaware'?" in r.text
    assert api.put("/api/v1/topologies/nope/policy", json={"policy": "tcp"}).status_code == 404
    r = api.put("/api/v1/topologies/fj/policy", json={"policy": "tcp"})
    assert r.status_code == 200 and r.json()["previous"] == "appaware"
    t0 = time.monotonic()
    wait_for(lambda: (r := capped(stage, names)) and not any(r.values()), 10,
             "tcp: every flow counted, none capped")
    print(f"policy switch to tcp enforced in {time.monotonic() - t0:.1f} s")
    switched = time.time()
    assert api.put("/api/v1/topologies/fj/policy", json={"policy": "appaware"}).status_code == 200
    assert stage.topology("fj")["policy"] == "appaware"
    # appaware decides again within a few Δt of the switch (what it caps depends on whether
    # w1's link is full, which a loaded machine's CPU-starved workers may not keep it)
    wait_for(lambda: stage.managed("fj", switched), 30, "appaware again", 0.2)


def test_topology_submitted_rebalanced_killed(stage):
    """fj2 is in the config before it exists; submitted, it is mapped; rebalanced, its
    placement is re-read; killed, its flows leave the controller."""
    assert stage.topology("fj2")["status"] == "not submitted"
    stage.submit_fork_join("fj2", rate=40, tp="TP2")
    fj2 = wait_for(lambda: (t := stage.topology("fj2"))["flows"] and t, 60, "fj2 mapped")
    assert fj2["policy"] == "maxmin" and len(fj2["flows"]) >= 2
    names = {f["name"] for f in fj2["flows"]}
    wait_for(lambda: len(capped(stage, names)) == len(names), 20, "fj2's flows counted")
    t0 = time.monotonic()
    stage.cluster.rebalance("fj2", 3)
    wait_for(lambda: stage.topology("fj2")["status"] == "REBALANCING", 20, "rebalancing seen")
    wait_for(lambda: (t := stage.topology("fj2"))["status"] == "ACTIVE" and t["flows"], 60,
             "fj2 placed again")
    print(f"rebalance: flows re-mapped {time.monotonic() - t0:.1f} s after the command")
    t0 = time.monotonic()
    stage.cluster.kill("fj2")
    wait_for(lambda: not stage.topology("fj2")["flows"], 30, "fj2 dropped")
    now = {f["name"] for f in stage.topology("fj2")["flows"]}
    assert now == set()
    wait_for(lambda: not capped(stage, names - {f["name"] for f in stage.topology("fj")[
        "flows"]}), 10, "fj2's meters gone from the controller")
    print(f"kill: fj2's flows unmapped and its meters gone {time.monotonic() - t0:.1f} s "
          "after the command")
    msgs = [e["message"] for e in stage.status()["events"] if e["topology"] == "fj2"]
    assert any("is gone from Nimbus" in m for m in msgs), msgs

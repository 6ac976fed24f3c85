"""The manager's dashboard in a real browser (Debian's headless Chromium driven by
Playwright): the page loads, its charts update from the running manager, the policy
switch changes the policy, and without the token (the API is off loopback) the API
refuses and the page asks for it."""

from __future__ import annotations

from streamband.manage.stage import wait_for


def points(page, chart: str) -> int:
    return int(page.get_attribute(f"#{chart}", "data-points") or 0)


def newest(page, chart: str) -> float:
    """The time of the chart's newest point (0 before the first)."""
    return float(page.get_attribute(f"#{chart}", "data-last") or 0)


def test_dashboard_live(stage, browser, tmp_path):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    token = stage.tokens["STREAMBAND_MANAGE_TOKEN"]
    page.goto(stage.url + f"#token={token}")
    page.wait_for_selector("#rates-fj canvas", timeout=20_000)
    # the charts move on with every allocation of the running manager; their number of
    # points stops growing at the service's SERIES, which a manager running since the
    # stage's first test may have passed, so the newest point's time is what must advance
    dt = stage.status()["dt_s"]
    first = newest(page, "rates-fj")
    wait_for(lambda: newest(page, "rates-fj") >= first + 3 * dt, 5 * dt + 10,
             "the rate chart updates")
    assert points(page, "backlog-fj") > 0 and points(page, "links-chart") > 0
    assert page.locator("#topo-fj table.flows tbody tr").count() == 2
    assert page.locator("#meters tbody tr").count() >= 2
    assert page.locator("#log tbody tr").count() > 0
    assert "tuples/s" in page.inner_text("#topo-fj .tput")
    page.screenshot(path=str(stage.work / "dashboard.png"), full_page=True)
    # the policy switch
    assert page.inner_text("#current-fj") == "appaware"
    page.select_option("#policy-fj", "maxmin")
    page.click("#switch-fj")
    wait_for(lambda: page.inner_text("#current-fj") == "maxmin", 10, "the page shows maxmin")
    assert stage.topology("fj")["policy"] == "maxmin"
    wait_for(lambda: any(r["policy"] == "maxmin" and r["decision"] == "policy" for r in
                         stage.api().get("/api/v1/allocations?topology=fj&limit=5").json()),
             10, "allocations under maxmin")
    page.select_option("#policy-fj", "appaware")
    page.click("#switch-fj")
    wait_for(lambda: stage.topology("fj")["policy"] == "appaware", 10, "back to appaware")
    assert errors == []


def test_dashboard_without_token(stage, browser):
    """Off loopback every API request needs the token: the page asks for it."""
    page = browser.new_page()
    page.goto(stage.url)
    page.wait_for_selector("#login:not([hidden])", timeout=15_000)
    assert page.locator("#topo-fj").count() == 0
    assert stage.api(token=False).get("/metrics").status_code == 401
    r = stage.api(token=False).get("/api/v1/allocations")
    assert r.status_code == 401 and "bearer token required" in r.text
    page.fill("#token", stage.tokens["STREAMBAND_MANAGE_TOKEN"])
    page.click("#login button")
    page.wait_for_selector("#rates-fj canvas", timeout=15_000)

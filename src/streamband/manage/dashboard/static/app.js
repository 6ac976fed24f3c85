// The streamband manager's dashboard: polls /api/v1/status every second and draws it.
"use strict";

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];
const charts = {};          // chart id -> {plot, n}
window.sbCharts = charts;   // for tests and the console

function token() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) sessionStorage.setItem("sbToken", decodeURIComponent(m[1]));
  return sessionStorage.getItem("sbToken");
}

async function api(path, opts = {}) {
  const headers = Object.assign({"content-type": "application/json"}, opts.headers || {});
  const t = token();
  if (t) headers.authorization = "Bearer " + t;
  const r = await fetch(path, Object.assign({}, opts, {headers}));
  if (r.status === 401) {
    document.getElementById("login").hidden = false;
    throw new Error("401");
  }
  if (!r.ok) throw new Error(r.status + " " + (await r.text()));
  return r.json();
}

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
}

const mbps = v => v === null || v === undefined ? "∞" : (v / 1e6).toFixed(2);
const kb = v => (v / 1024).toFixed(1);
const fmtTime = t => new Date(t * 1000).toLocaleTimeString();

// one uPlot per chart id, made again when its number of series changes
function draw(id, target, labels, xs, ys, opts = {}) {
  const data = [xs, ...ys];
  let c = charts[id];
  if (!c || c.n !== ys.length || !document.body.contains(c.plot.root)) {
    if (c) c.plot.destroy();
    target.innerHTML = "";
    const series = [{}].concat(labels.map((l, i) => Object.assign({
      label: l, stroke: COLORS[i % COLORS.length], width: 1.5,
    }, (opts.styles || [])[i] || {})));
    const plot = new uPlot({
      width: opts.width || 460, height: 200, series,
      scales: Object.assign({x: {time: true}}, opts.scales || {}),
      axes: opts.axes || [{}, {label: opts.ylabel || ""}],
    }, data, target);
    c = charts[id] = {plot, n: ys.length};
  } else {
    c.plot.setData(data);
  }
  target.dataset.points = String(xs.length);
  // the newest point's time: it moves on with every allocation, also once the chart holds
  // all the points the service keeps (SERIES)
  target.dataset.last = xs.length ? String(xs[xs.length - 1]) : "";
  target.dataset.updated = String(Date.now());
}

function topologyCard(t, policies, now) {
  let card = document.getElementById("topo-" + t.name);
  if (!card) {
    card = el("section", {class: "card topology", id: "topo-" + t.name});
    const sel = el("select", {id: "policy-" + t.name, "aria-label": "policy of " + t.name});
    for (const p of policies) sel.append(el("option", {value: p}, p));
    const btn = el("button", {id: "switch-" + t.name, type: "button"}, "Switch policy");
    btn.addEventListener("click", async () => {
      btn.disabled = true;
      try {
        await api(`/api/v1/topologies/${encodeURIComponent(t.name)}/policy`,
                  {method: "PUT", body: JSON.stringify({policy: sel.value})});
        sel.dataset.dirty = "";
      } catch (e) { alert("policy switch failed: " + e.message); }
      btn.disabled = false;
      refresh();
    });
    sel.addEventListener("change", () => { sel.dataset.dirty = "1"; });
    card.append(
      el("div", {class: "topo-head"}, el("h2", {}, t.name),
         el("span", {class: "engine", id: "engine-" + t.name}, t.engine === "flink" ? "Flink job" : "Storm topology"),
         el("span", {class: "status"}),
         el("label", {}, "policy ", el("strong", {class: "policy", id: "current-" + t.name}), " → ", sel), btn),
      el("div", {class: "figures"}, el("span", {class: "tput"}), el("span", {class: "lat"}),
         el("span", {class: "reports"}), el("span", {class: "decision"})),
      el("div", {class: "charts"},
         el("div", {}, el("p", {class: "legend"}, "Flow rates, Mbit/s: allocated (solid), measured on the switch (dashed)"),
            el("div", {class: "chart", id: "rates-" + t.name, "data-points": "0"})),
         el("div", {}, el("p", {class: "legend"}, "Sender backlog per flow, KiB (000 §IV-A1)"),
            el("div", {class: "chart", id: "backlog-" + t.name, "data-points": "0"})),
         el("div", {}, el("p", {class: "legend"}, "Throughput at the sinks (tuples/s) and event-time latency (ms)"),
            el("div", {class: "chart", id: "app-" + t.name, "data-points": "0"}))),
      el("table", {class: "flows"}, el("thead", {}, el("tr", {}, ...["flow", t.engine === "flink" ? "TaskManager pairs" : "worker pairs", "path", "allocated Mbit/s", "measured Mbit/s", "sender backlog KiB", "receiver backlog KiB"].map(h => el("th", {}, h)))), el("tbody")));
    document.getElementById("topologies").append(card);
  }
  const sel = document.getElementById("policy-" + t.name);
  if (!sel.dataset.dirty) sel.value = t.policy;
  document.getElementById("current-" + t.name).textContent = t.policy;
  card.querySelector(".status").textContent = `${t.status}${t.id ? " · " + t.id : ""}`;
  const last = t.series.length ? t.series[t.series.length - 1] : null;
  card.querySelector(".tput").textContent = "throughput " + (t.throughput_tps === null ? "n/a" : t.throughput_tps.toFixed(1) + " tuples/s");
  card.querySelector(".lat").textContent = "latency " + (t.latency_s === null ? "n/a" : (t.latency_s * 1e3).toFixed(0) + " ms");
  const newest = t.reporters.reduce((m, r) => Math.max(m, r.recv || 0), 0);
  card.querySelector(".reports").textContent = t.reporters.length
    ? `reports from ${t.reporters.length} ${t.engine === "flink" ? "TaskManagers" : "workers"}, newest ${Math.max(0, now - newest).toFixed(1)} s ago`
    : "no reports yet";
  const dec = card.querySelector(".decision");
  dec.textContent = "last decision: " + (t.decision || "none") + (t.guard ? ` · guard: the allocation moves ${(t.guard.moved * 100).toFixed(1)} % of a bottleneck, ${t.guard.capping ? "capping" : "TCP's split kept"}` : "");
  dec.className = "decision decision-" + (t.decision || "none");
  const tbody = card.querySelector("table.flows tbody");
  tbody.innerHTML = "";
  t.flows.forEach((f, i) => tbody.append(el("tr", {},
    el("td", {}, f.name), el("td", {}, f.pairs.join(", ")), el("td", {}, f.path.join(" → ")),
    el("td", {}, last ? mbps(last.rate[i]) : ""), el("td", {}, last ? mbps(last.measured[i]) : ""),
    el("td", {}, last ? kb(last.ls[i]) : ""), el("td", {}, last ? kb(last.lr[i]) : ""))));
  const xs = t.series.map(s => s.t);
  const names = t.flows.map(f => f.name);
  if (!names.length) return;
  const rate = names.map((_, i) => t.series.map(s => s.rate[i] === null ? null : s.rate[i] / 1e6));
  const meas = names.map((_, i) => t.series.map(s => s.measured[i] / 1e6));
  draw("rates-" + t.name, document.getElementById("rates-" + t.name),
       names.map(n => n + " allocated").concat(names.map(n => n + " measured")), xs, rate.concat(meas),
       {ylabel: "Mbit/s", styles: names.map(() => ({})).concat(names.map((_, i) => ({dash: [5, 4], stroke: COLORS[i % COLORS.length]})))});
  draw("backlog-" + t.name, document.getElementById("backlog-" + t.name), names, xs,
       names.map((_, i) => t.series.map(s => s.ls[i] / 1024)), {ylabel: "KiB"});
  draw("app-" + t.name, document.getElementById("app-" + t.name), ["throughput tuples/s", "latency ms"], xs,
       [t.series.map(s => s.tput), t.series.map(s => s.latency_s === null ? null : s.latency_s * 1e3)],
       {scales: {ms: {}}, styles: [{}, {scale: "ms"}],
        axes: [{}, {label: "tuples/s"}, {scale: "ms", side: 1, label: "ms", grid: {show: false}}]});
}

function render(st) {
  document.getElementById("login").hidden = true;
  const ctl = st.alerts.some(a => a.kind === "controller unreachable") ? "unreachable" : "up";
  document.getElementById("summary").textContent =
    `Δt ${st.dt_s} s · enforced by ${st.enforce === "shaper" ? "the shaper (queues)" : "meters (police)"} · ${st.steps} allocations since start ${st.starts} · controller ${ctl} · ${fmtTime(st.time)}`;
  const alerts = document.getElementById("alerts");
  alerts.innerHTML = "";
  for (const a of st.alerts) {
    alerts.append(el("div", {class: "alert", "data-kind": a.kind},
      `${a.kind}${a.topology ? " (" + a.topology + ")" : ""}: ${a.message} — since ${fmtTime(a.since)}`));
  }
  for (const t of st.topologies) topologyCard(t, st.policies, st.time);
  const L = st.links;
  const lx = L.series.map(s => s.t);
  draw("links", document.getElementById("links-chart"), L.names, lx,
       L.names.map((_, i) => L.series.map(s => s.util[i])), {width: 900, ylabel: "utilisation"});
  const mb = document.querySelector("#meters tbody");
  mb.innerHTML = "";
  for (const m of st.meters) {
    const f = m.flow;
    mb.append(el("tr", {}, el("td", {}, `${f.src_ip}→${f.dst_ip}:${f.dst_port}`), el("td", {}, String(m.dpid)),
      el("td", {}, m.rate_bps ? mbps(m.rate_bps) + " Mbit/s" : "none (counted)"),
      el("td", {}, mbps(m.bps) + " Mbit/s"), el("td", {}, m.lease_left_s.toFixed(1) + " s")));
  }
  document.getElementById("rates-card").hidden = st.enforce !== "shaper";
  const rb = document.querySelector("#rates tbody");
  rb.innerHTML = "";
  for (const r of st.rates) {
    const f = r.flow;
    rb.append(el("tr", {}, el("td", {}, `${f.src_ip}→${f.dst_ip}:${f.dst_port}`), el("td", {}, r.port),
      el("td", {}, r.rate_bps === null ? "none (the link's)" : mbps(r.rate_bps) + " Mbit/s"),
      el("td", {}, r.link_rate_bps ? mbps(r.link_rate_bps) + " Mbit/s" : "")));
  }
  const ev = document.getElementById("events");
  ev.innerHTML = "";
  for (const e of st.events) ev.append(el("li", {}, `${fmtTime(e.time)} ${e.topology ? e.topology + ": " : ""}${e.kind}: ${e.message}`));
}

async function refreshLog() {
  const rows = await api("/api/v1/allocations?limit=15");
  const tb = document.querySelector("#log tbody");
  tb.innerHTML = "";
  for (const r of rows) {
    tb.append(el("tr", {}, el("td", {}, fmtTime(r.time)), el("td", {}, r.topology), el("td", {}, r.policy),
      el("td", {class: "decision-" + r.decision}, r.decision), el("td", {}, r.rates_bps.map(mbps).join(", ")),
      el("td", {}, r.optimizer_ms === null ? "" : r.optimizer_ms.toFixed(3)), el("td", {}, r.step_ms.toFixed(1))));
  }
}

let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    render(await api("/api/v1/status"));
    await refreshLog();
  } catch (e) {
    if (e.message !== "401") document.getElementById("summary").textContent = "manager unreachable: " + e.message;
  }
  busy = false;
}

document.getElementById("login").addEventListener("submit", ev => {
  ev.preventDefault();
  sessionStorage.setItem("sbToken", document.getElementById("token").value);
  refresh();
});
refresh();
setInterval(refresh, 1000);

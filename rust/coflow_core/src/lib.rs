//! The big-switch event loop of streamband's coflow simulator (paper 004 §IV-B), for the
//! coflow-agnostic policies `fs` (max-min water-filling) and `fs-static` (per-end
//! share). Flows between the same (sender, receiver) port pair always get the same
//! rate, so the loop keeps one service counter per pair and a min-heap of the pair's
//! flow thresholds: an event costs O(active pairs), not O(active flows).
//! The Python engine (`streamband.sim.coflow.engine`) is the reference; tests compare.
//!
//! `fabric_run` is the general loop (any link table, strict priority between levels,
//! max-min inside a level) with the priority rules of `stream`, `aalo`, `baraat`
//! behind one enum: see `fabric.rs`.

mod fabric;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use fabric::Key;

fn as_i64(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().unwrap())).collect()
}
fn as_f64(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// Run the flows on a `ports`-port big switch of `port_bytes_per_s` per port.
/// `src`, `dst` (int64), `size`, `release` (float64) are raw native-endian buffers.
/// Returns (finish times as float64 bytes, number of events).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn bigswitch_run<'py>(
    py: Python<'py>,
    ports: usize,
    port_bytes_per_s: f64,
    src: &[u8],
    dst: &[u8],
    size: &[u8],
    release: &[u8],
    policy: &str,
) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let work_conserving = match policy {
        "fs" => true,
        "fs-static" => false,
        _ => return Err(PyValueError::new_err(format!("policy: expected fs or fs-static, got {policy}"))),
    };
    let (src, dst, size, release) = (as_i64(src), as_i64(dst), as_f64(size), as_f64(release));
    let nf = size.len();
    if src.len() != nf || dst.len() != nf || release.len() != nf {
        return Err(PyValueError::new_err("src, dst, size, release: expected equal lengths"));
    }
    for i in 0..nf {
        if src[i] < 0 || dst[i] < 0 || src[i] as usize >= ports || dst[i] as usize >= ports {
            return Err(PyValueError::new_err(format!("flow {i}: port outside 0..{ports}")));
        }
    }
    let (finish, events) = py.allow_threads(|| {
        Loop::new(ports, port_bytes_per_s, work_conserving).run(&src, &dst, &size, &release)
    });
    let bytes: Vec<u8> = finish.iter().flat_map(|x| x.to_ne_bytes()).collect();
    Ok((PyBytes::new_bound(py, &bytes), events))
}

/// Node v < P is ingress port v, node P + d egress port d; pair k = s * P + d.
/// A pair's per-flow rate is min(level[s], level[P + d]): for fs-static the level is
/// cap / flows at the port; for fs it is the share at which progressive filling
/// saturates the port (max-min: a flow is fixed by its first saturated end).
/// Pairs keep their service lazily (service at t_upd, constant rate since), and a
/// global heap holds each pair's next completion; an entry is valid iff it equals
/// `tnext[pair]`. An event touches only the pairs whose rate changed.
struct Loop {
    p: usize,
    cap: f64,
    wc: bool,
    cnt: Vec<f64>,   // flows per pair, row-major s*P+d
    cnt_t: Vec<f64>, // transposed copy, d*P+s
    ncnt: Vec<f64>,  // flows per node
    level: Vec<f64>,
    heaps: Vec<BinaryHeap<Reverse<Key>>>,
    service: Vec<f64>,
    t_upd: Vec<f64>,
    rate: Vec<f64>,
    tnext: Vec<f64>,
    tree: MinTree,
}

/// A tournament tree over pairs: the earliest next completion in O(1), updates O(log).
struct MinTree {
    n: usize,
    val: Vec<f64>,
    idx: Vec<u32>,
}

impl MinTree {
    fn new(len: usize) -> Self {
        let n = len.next_power_of_two();
        let mut idx = vec![0u32; 2 * n];
        for i in 0..n {
            idx[n + i] = i as u32;
        }
        MinTree { n, val: vec![f64::INFINITY; 2 * n], idx }
    }
    fn set(&mut self, k: usize, v: f64) {
        let mut i = self.n + k;
        self.val[i] = v;
        while i > 1 {
            i /= 2;
            let (a, b) = (2 * i, 2 * i + 1);
            let c = if self.val[a] <= self.val[b] { a } else { b };
            self.val[i] = self.val[c];
            self.idx[i] = self.idx[c];
        }
    }
    /// Set many leaves, then repair: per-leaf paths if few, one bottom-up pass if many.
    fn set_many(&mut self, ks: &[usize], vals: &[f64]) {
        if ks.len() * 16 < self.n {
            for (&k, &v) in ks.iter().zip(vals) {
                self.set(k, v);
            }
            return;
        }
        for (&k, &v) in ks.iter().zip(vals) {
            self.val[self.n + k] = v;
        }
        for i in (1..self.n).rev() {
            let (a, b) = (2 * i, 2 * i + 1);
            let c = if self.val[a] <= self.val[b] { a } else { b };
            self.val[i] = self.val[c];
            self.idx[i] = self.idx[c];
        }
    }
    fn min(&self) -> (f64, usize) {
        (self.val[1], self.idx[1] as usize)
    }
}

impl Loop {
    fn new(p: usize, cap: f64, wc: bool) -> Self {
        Loop {
            p,
            cap,
            wc,
            cnt: vec![0.0; p * p],
            cnt_t: vec![0.0; p * p],
            ncnt: vec![0.0; 2 * p],
            level: vec![f64::INFINITY; 2 * p],
            heaps: (0..p * p).map(|_| BinaryHeap::new()).collect(),
            service: vec![0.0; p * p],
            t_upd: vec![0.0; p * p],
            rate: vec![0.0; p * p],
            tnext: vec![f64::INFINITY; p * p],
            tree: MinTree::new(p * p),
        }
    }

    fn sync(&mut self, k: usize, t: f64) {
        self.service[k] += self.rate[k] * (t - self.t_upd[k]);
        self.t_upd[k] = t;
    }

    fn add_count(&mut self, k: usize, c: f64) {
        let p = self.p;
        self.cnt[k] += c;
        self.cnt_t[(k % p) * p + k / p] += c;
        self.ncnt[k / p] += c;
        self.ncnt[p + k % p] += c;
    }

    /// Progressive filling over the 2P ports (dense P x P counts): O(P^2) per call.
    fn fill_levels(&mut self) {
        let p = self.p;
        let n = 2 * p;
        let mut load = vec![0.0f64; n];
        let mut ucnt = self.ncnt.clone();
        let mut done = vec![false; n];
        let mut share = vec![f64::INFINITY; n];
        for v in 0..n {
            self.level[v] = f64::INFINITY;
            if ucnt[v] > 0.5 {
                share[v] = self.cap / ucnt[v];
            } else {
                done[v] = true;
            }
        }
        let mut live: Vec<usize> = (0..n).filter(|&v| !done[v]).collect();
        loop {
            let mut best = usize::MAX;
            let mut bs = f64::INFINITY;
            let mut bi = 0usize;
            let mut i = 0;
            while i < live.len() {
                let v = live[i];
                if done[v] {
                    live.swap_remove(i);
                    continue;
                }
                if share[v] < bs {
                    bs = share[v];
                    best = v;
                    bi = i;
                }
                i += 1;
            }
            if best == usize::MAX {
                break;
            }
            live.swap_remove(bi);
            let v = best;
            done[v] = true;
            share[v] = f64::INFINITY;
            self.level[v] = bs;
            let (row, off) = if v < p {
                (&self.cnt[v * p..v * p + p], p)
            } else {
                (&self.cnt_t[(v - p) * p..(v - p) * p + p], 0)
            };
            for (j, &c) in row.iter().enumerate() {
                if c > 0.5 {
                    let u = off + j;
                    if !done[u] {
                        load[u] += c * bs;
                        ucnt[u] -= c;
                        if ucnt[u] > 0.5 {
                            share[u] = (self.cap - load[u]).max(0.0) / ucnt[u];
                        } else {
                            done[u] = true;
                            share[u] = f64::INFINITY;
                        }
                    }
                }
            }
        }
    }

    fn repush(&mut self, k: usize, t: f64) {
        let p = self.p;
        self.sync(k, t);
        let tc = if let Some(&Reverse(Key(thr, _))) = self.heaps[k].peek() {
            let r = self.level[k / p].min(self.level[p + k % p]);
            self.rate[k] = r;
            if r > 0.0 && r.is_finite() {
                t + (thr - self.service[k]).max(0.0) / r
            } else {
                f64::INFINITY
            }
        } else {
            self.rate[k] = 0.0;
            f64::INFINITY
        };
        self.tnext[k] = tc;
    }

    fn run(mut self, src: &[i64], dst: &[i64], size: &[f64], release: &[f64]) -> (Vec<f64>, u64) {
        let p = self.p;
        let nf = size.len();
        let mut order: Vec<usize> = (0..nf).collect();
        order.sort_by(|&a, &b| release[a].total_cmp(&release[b]).then(a.cmp(&b)));
        let mut finish = vec![f64::NAN; nf];
        let mut next = 0usize;
        let mut t;
        let mut n_events = 0u64;
        let mut left = nf;
        let mut dirty_pairs: Vec<usize> = Vec::new();
        let mut is_dirty = vec![false; p * p];
        let mut dirty_nodes = vec![false; 2 * p];
        let old_level_buf = vec![f64::INFINITY; 2 * p];
        let mut old_level = old_level_buf;
        while left > 0 {
            // the next event: a valid pair completion or a release
            let (t_c, _) = self.tree.min();
            let t_rel = if next < nf { release[order[next]] } else { f64::INFINITY };
            t = t_c.min(t_rel);
            if !t.is_finite() {
                break;
            }
            n_events += 1;
            // completions (all pairs due within a relative 1e-12 of t)
            let lim = t + 1e-12 * (1.0 + t.abs());
            loop {
                let (tc, k) = self.tree.min();
                if tc > lim {
                    break;
                }
                self.tnext[k] = f64::INFINITY;
                self.tree.set(k, f64::INFINITY);
                self.sync(k, t);
                let tol = 1e-3 + 1e-12 * self.service[k].abs();
                let r = self.rate[k];
                while let Some(&Reverse(Key(thr, f))) = self.heaps[k].peek() {
                    let gap = thr - self.service[k];
                    if gap <= tol || (r > 0.0 && gap / r <= 1e-12 * (1.0 + t)) {
                        self.heaps[k].pop();
                        finish[f as usize] = t;
                        left -= 1;
                        self.add_count(k, -1.0);
                        dirty_nodes[k / p] = true;
                        dirty_nodes[p + k % p] = true;
                    } else {
                        break;
                    }
                }
                if !is_dirty[k] {
                    is_dirty[k] = true;
                    dirty_pairs.push(k);
                }
            }
            // releases due now
            while next < nf && release[order[next]] <= t {
                let f = order[next];
                next += 1;
                if size[f] <= 1e-3 {
                    finish[f] = t;
                    left -= 1;
                    continue;
                }
                let k = src[f] as usize * p + dst[f] as usize;
                self.sync(k, t);
                self.heaps[k].push(Reverse(Key(self.service[k] + size[f], f as u32)));
                self.add_count(k, 1.0);
                dirty_nodes[k / p] = true;
                dirty_nodes[p + k % p] = true;
                if !is_dirty[k] {
                    is_dirty[k] = true;
                    dirty_pairs.push(k);
                }
            }
            // new levels; pairs at ports whose level changed are re-timed
            old_level.copy_from_slice(&self.level);
            if self.wc {
                self.fill_levels();
            } else {
                for v in 0..2 * p {
                    if dirty_nodes[v] {
                        self.level[v] =
                            if self.ncnt[v] > 0.5 { self.cap / self.ncnt[v] } else { f64::INFINITY };
                    }
                }
            }
            for v in 0..2 * p {
                let changed = self.level[v] != old_level[v];
                dirty_nodes[v] = false;
                if !changed {
                    continue;
                }
                for j in 0..p {
                    let k = if v < p { v * p + j } else { j * p + (v - p) };
                    if self.cnt[k] > 0.5
                        && !is_dirty[k]
                        && self.level[k / p].min(self.level[p + k % p]) != self.rate[k]
                    {
                        is_dirty[k] = true;
                        dirty_pairs.push(k);
                    }
                }
            }
            for &k in &dirty_pairs {
                is_dirty[k] = false;
            }
            let mut vals = Vec::with_capacity(dirty_pairs.len());
            for i in 0..dirty_pairs.len() {
                let k = dirty_pairs[i];
                self.repush(k, t);
                vals.push(self.tnext[k]);
            }
            self.tree.set_many(&dirty_pairs, &vals);
            dirty_pairs.clear();
        }
        (finish, n_events)
    }
}

fn as_u32(b: &[u8], what: &str, bound: usize) -> PyResult<Vec<u32>> {
    let v = as_i64(b);
    for (i, &x) in v.iter().enumerate() {
        if x < 0 || x as usize >= bound {
            return Err(PyValueError::new_err(format!("{what}[{i}] = {x}: outside 0..{bound}")));
        }
    }
    Ok(v.into_iter().map(|x| x as u32).collect())
}

/// Run flows on a fabric given as a link table under `policy` (fs, fs-static, stream,
/// aalo, baraat). Integer arrays are int64 buffers, real ones float64. `plinks` is
/// n_paths x `width` link ids, -1 = padding. `params`: alpha, beta, starve_s, relay,
/// heavy; `tau` the K queue thresholds (last inf). Returns (finish times, events).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn fabric_run<'py>(
    py: Python<'py>,
    policy: &str,
    cap: &[u8],
    plinks: &[u8],
    width: usize,
    flows: (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>),
    units: (Vec<u8>, Vec<u8>, Vec<u8>),
    c_rank: &[u8],
    groups: (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>),
    tau: Vec<f64>,
    params: std::collections::HashMap<String, f64>,
) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let pol = match policy {
        "fs" => fabric::Policy::Fs,
        "fs-static" => fabric::Policy::FsStatic,
        "stream" => fabric::Policy::Stream,
        "aalo" => fabric::Policy::Aalo,
        "baraat" => fabric::Policy::Baraat,
        _ => {
            return Err(PyValueError::new_err(format!(
                "policy: expected fs, fs-static, stream, aalo or baraat, got {policy}"
            )))
        }
    };
    let get = |k: &str| -> PyResult<f64> {
        params.get(k).copied().ok_or_else(|| PyValueError::new_err(format!("params: missing {k}")))
    };
    let capv = as_f64(cap);
    let nl = capv.len();
    if width == 0 || plinks.len() % (8 * width) != 0 {
        return Err(PyValueError::new_err("plinks: expected n_paths x width int64"));
    }
    let pl: Vec<u32> = as_i64(plinks)
        .into_iter()
        .map(|x| if x < 0 || x as usize >= nl { u32::MAX } else { x as u32 })
        .collect();
    let n_paths = pl.len() / width;
    let size = as_f64(&flows.4);
    let u_w = as_f64(&units.2);
    let nu = u_w.len();
    let c_rank_v = as_i64(c_rank);
    let nc = c_rank_v.len();
    let g_arrival = as_f64(&groups.0);
    let ng = g_arrival.len();
    let par_ptr: Vec<usize> = as_i64(&groups.2).into_iter().map(|x| x.max(0) as usize).collect();
    let g_par = as_u32(&groups.3, "group parents", ng)?;
    if par_ptr.len() != ng + 1 || par_ptr[ng] != g_par.len() {
        return Err(PyValueError::new_err("group parents: bad CSR pointer"));
    }
    let inp = fabric::Input {
        cap: capv,
        plinks: pl,
        width,
        f_path: as_u32(&flows.0, "flow path", n_paths)?,
        f_unit: as_u32(&flows.1, "flow unit", nu)?,
        f_cof: as_u32(&flows.2, "flow coflow", nc)?,
        f_group: as_u32(&flows.3, "flow group", ng)?,
        f_size: size,
        u_cof: as_u32(&units.0, "unit coflow", nc)?,
        u_group: as_u32(&units.1, "unit group", ng)?,
        u_w,
        c_rank: as_u32(c_rank, "coflow rank", nc.max(1))?,
        g_arrival,
        g_deps: as_u32(&groups.1, "group deps", usize::MAX >> 1)?,
        g_par_ptr: par_ptr,
        g_par,
    };
    let nf = inp.f_size.len();
    if inp.f_path.len() != nf || inp.f_unit.len() != nf || inp.f_cof.len() != nf
        || inp.f_group.len() != nf || inp.u_cof.len() != nu || inp.u_group.len() != nu
        || inp.g_deps.len() != ng
    {
        return Err(PyValueError::new_err("flow / unit / group arrays: unequal lengths"));
    }
    if tau.is_empty() {
        return Err(PyValueError::new_err("tau: expected at least one queue"));
    }
    let par = fabric::Params {
        tau,
        alpha: get("alpha")?,
        beta: get("beta")?,
        starve_s: get("starve_s")?,
        relay: get("relay")? != 0.0,
        heavy: get("heavy")?,
    };
    let out = py.allow_threads(|| {
        let mut sim = fabric::Sim::new(inp, pol, par);
        sim.run().map(|_| (sim.finish, sim.events))
    });
    let (finish, events) = out.map_err(PyValueError::new_err)?;
    let bytes: Vec<u8> = finish.iter().flat_map(|x| x.to_ne_bytes()).collect();
    Ok((PyBytes::new_bound(py, &bytes), events))
}

#[pymodule]
fn streamband_coflow_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(bigswitch_run, m)?)?;
    m.add_function(wrap_pyfunction!(fabric_run, m)?)?;
    Ok(())
}

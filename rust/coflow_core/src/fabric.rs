//! The general event loop (paper 004 §IV-B) on any fabric given as a link table:
//! strict priority between levels, max-min fair sharing inside a level (004 §III-B),
//! with the four priority rules of streamband's schedulers behind one enum. It mirrors
//! `streamband.sim.coflow.engine.Simulation` with the Python scheduler classes step by
//! step (same events, same tolerances); tests compare the two to 1e-9 relative.
//!
//! Flows that share an *owner* (the entity whose priority they inherit: the unit for
//! `stream`, the coflow for `aalo`/`baraat`, nobody for `fs`) and a path always get the
//! same rate, so they live in one *bucket* with a service counter and a min-heap of
//! their completion thresholds: an event costs O(active buckets), not O(active flows).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

const MIB: f64 = 1048576.0;
/// Residual capacity below this (bytes/s) is treated as none (both engines).
pub const SNAP: f64 = 1e-3;
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq)]
pub struct Key(pub f64, pub u32);
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Fs,
    FsStatic,
    Stream,
    Aalo,
    Baraat,
}

/// Scheduler parameters (the Python scheduler object's attributes).
pub struct Params {
    pub tau: Vec<f64>, // K thresholds, the last one inf
    pub alpha: f64,
    pub beta: f64,
    pub starve_s: f64,
    pub relay: bool,
    pub heavy: f64,
}

/// Inputs, all indices already dense.
pub struct Input {
    pub cap: Vec<f64>,        // bytes/s per link
    pub plinks: Vec<u32>,     // n_paths * width, NONE = padding
    pub width: usize,
    pub f_path: Vec<u32>,
    pub f_unit: Vec<u32>,
    pub f_cof: Vec<u32>,
    pub f_group: Vec<u32>,
    pub f_size: Vec<f64>,
    pub u_cof: Vec<u32>,
    pub u_group: Vec<u32>,
    pub u_w: Vec<f64>,
    pub c_rank: Vec<u32>,      // FIFO rank by arrival
    pub g_arrival: Vec<f64>,
    pub g_deps: Vec<u32>,      // number of groups to wait for
    pub g_par_ptr: Vec<usize>, // CSR: parents of each group
    pub g_par: Vec<u32>,
}

/// Cold part of a bucket (the hot fields live in `Sim`'s parallel arrays `b_*`).
struct Bucket {
    sub: u32,
    in_list: bool,
    heap: BinaryHeap<Reverse<Key>>,
}

pub struct Sim {
    inp: Input,
    pol: Policy,
    par: Params,
    k: usize,
    // buckets
    bk: Vec<Bucket>,
    b_owner: Vec<u32>,
    b_path: Vec<u32>,
    b_count: Vec<f64>,
    b_service: Vec<f64>,
    b_sprev: Vec<f64>,
    b_rate: Vec<f64>,
    b_top: Vec<f64>, // smallest threshold (inf if empty)
    bmap: HashMap<u64, u32>,
    owner_s: Vec<Vec<u32>>, // per owner: its sub-lists
    sub_b: Vec<Vec<u32>>,   // per sub-list: buckets (owner, path) ending at one link
    sub_link: Vec<u32>,
    sub_cnt: Vec<u32>,
    smap: HashMap<u64, u32>,
    path_last: Vec<u32>,
    owner_cnt: Vec<u32>,
    act_o: Vec<u32>,
    o_pos: Vec<u32>,
    live: Vec<u32>,
    r_o: Vec<f64>,
    // groups, coflows
    g_flows_ptr: Vec<usize>,
    g_flows: Vec<u32>,
    g_left: Vec<u32>,
    g_deps_left: Vec<u32>,
    g_bytes: Vec<f64>,
    c_left: Vec<u32>,
    c_units_ptr: Vec<usize>,
    c_units: Vec<u32>,
    c_started: Vec<bool>,
    act_c: Vec<u32>,
    c_pos: Vec<u32>,
    // stream state (per unit / coflow / group)
    x: Vec<f64>,
    q: Vec<usize>,
    n_seen: Vec<f64>,
    n_fin: Vec<f64>,
    cof_bytes: Vec<f64>,
    cp: Vec<f64>,
    starve_since: Vec<f64>,
    hold_until: Vec<f64>,
    starving: Vec<u32>,
    // aalo / baraat
    sent: Vec<f64>,
    // output
    pub finish: Vec<f64>,
    pub events: u64,
    // scratch for the water-filling
    resid: Vec<f64>,
    wsum: Vec<f64>,
    deg: Vec<u32>,
    start: Vec<u32>,
    cur: Vec<u32>,
    touched: Vec<u32>,
    adj: Vec<u32>,
    cand: Vec<u32>,
    fixed: Vec<bool>,
    // aalo's weighted sharing between queues (scratch)
    qmask: Vec<u32>,
    used: Vec<f64>,
    rate1: Vec<f64>,
    lheap: BinaryHeap<Reverse<Key>>,
    bott: Vec<u32>,
}

/// Remove `x` from `list` in O(1) (swap with the last), keeping `pos[x]` = index in
/// `list` (NONE when absent) for every listed id.
fn unlist(list: &mut Vec<u32>, pos: &mut [u32], x: usize) {
    let i = pos[x] as usize;
    let last = *list.last().unwrap();
    list.swap_remove(i);
    if i < list.len() {
        pos[last as usize] = i as u32;
    }
    pos[x] = NONE;
}

fn csr(n: usize, keys: &[u32]) -> (Vec<usize>, Vec<u32>) {
    let mut ptr = vec![0usize; n + 1];
    for &k in keys {
        ptr[k as usize + 1] += 1;
    }
    for i in 0..n {
        ptr[i + 1] += ptr[i];
    }
    let mut cur = ptr.clone();
    let mut out = vec![0u32; keys.len()];
    for (i, &k) in keys.iter().enumerate() {
        out[cur[k as usize]] = i as u32;
        cur[k as usize] += 1;
    }
    (ptr, out)
}

impl Sim {
    pub fn new(inp: Input, pol: Policy, par: Params) -> Self {
        let nf = inp.f_size.len();
        let nu = inp.u_cof.len();
        let nc = inp.c_rank.len();
        let ng = inp.g_arrival.len();
        let nl = inp.cap.len();
        let n_owner = match pol {
            Policy::Fs | Policy::FsStatic => 1,
            Policy::Stream => nu,
            Policy::Aalo | Policy::Baraat => nc,
        };
        let (g_flows_ptr, g_flows) = csr(ng, &inp.f_group);
        let (c_units_ptr, c_units) = csr(nc, &inp.u_cof);
        let mut g_left = vec![0u32; ng];
        let mut g_bytes = vec![0.0; ng];
        let mut c_left = vec![0u32; nc];
        for f in 0..nf {
            g_left[inp.f_group[f] as usize] += 1;
            g_bytes[inp.f_group[f] as usize] += inp.f_size[f];
            c_left[inp.f_cof[f] as usize] += 1;
        }
        let k = par.tau.len();
        let w = inp.width;
        let path_last: Vec<u32> = inp
            .plinks
            .chunks(w)
            .map(|r| r.iter().rev().copied().find(|&l| l != NONE).unwrap_or(NONE))
            .collect();
        Sim {
            g_deps_left: inp.g_deps.clone(),
            pol,
            k,
            bk: Vec::new(),
            b_owner: Vec::new(),
            b_path: Vec::new(),
            b_count: Vec::new(),
            b_service: Vec::new(),
            b_sprev: Vec::new(),
            b_rate: Vec::new(),
            b_top: Vec::new(),
            bmap: HashMap::new(),
            owner_s: vec![Vec::new(); n_owner],
            sub_b: Vec::new(),
            sub_link: Vec::new(),
            sub_cnt: Vec::new(),
            smap: HashMap::new(),
            path_last,
            owner_cnt: vec![0; n_owner],
            act_o: Vec::new(),
            o_pos: vec![NONE; n_owner],
            live: Vec::new(),
            r_o: vec![0.0; n_owner],
            g_flows_ptr,
            g_flows,
            g_left,
            g_bytes,
            c_left,
            c_units_ptr,
            c_units,
            c_started: vec![false; nc],
            act_c: Vec::new(),
            c_pos: vec![NONE; nc],
            x: vec![0.0; nu],
            q: vec![0; nu],
            n_seen: vec![0.0; nu],
            n_fin: vec![0.0; nu],
            cof_bytes: vec![0.0; nc],
            cp: vec![0.0; ng],
            starve_since: vec![f64::NAN; nu],
            hold_until: vec![f64::NEG_INFINITY; nu],
            starving: Vec::new(),
            sent: vec![0.0; nc],
            finish: vec![f64::NAN; nf],
            events: 0,
            resid: vec![0.0; nl],
            wsum: vec![0.0; nl],
            deg: vec![0; nl],
            start: vec![0; nl],
            cur: vec![0; nl],
            touched: Vec::new(),
            adj: Vec::new(),
            cand: Vec::new(),
            fixed: Vec::new(),
            qmask: vec![0; nl],
            used: vec![0.0; nl],
            rate1: Vec::new(),
            lheap: BinaryHeap::new(),
            bott: Vec::new(),
            par,
            inp,
        }
    }

    fn owner(&self, f: usize) -> usize {
        match self.pol {
            Policy::Fs | Policy::FsStatic => 0,
            Policy::Stream => self.inp.f_unit[f] as usize,
            Policy::Aalo | Policy::Baraat => self.inp.f_cof[f] as usize,
        }
    }

    fn tol(&self, f: u32) -> f64 {
        1e-9 * self.inp.f_size[f as usize] + 1e-3
    }

    fn links(&self, path: u32) -> &[u32] {
        let w = self.inp.width;
        &self.inp.plinks[path as usize * w..path as usize * w + w]
    }

    // -- releases and completions --------------------------------------------------
    fn release(&mut self, g: usize, t: f64, rel: &mut BinaryHeap<Reverse<Key>>) {
        let mut zero: Vec<u32> = Vec::new();
        for i in self.g_flows_ptr[g]..self.g_flows_ptr[g + 1] {
            let f = self.g_flows[i] as usize;
            let u = self.inp.f_unit[f] as usize;
            self.n_seen[u] += 1.0;
            let c = self.inp.f_cof[f] as usize;
            if !self.c_started[c] {
                self.c_started[c] = true;
                self.c_pos[c] = self.act_c.len() as u32;
                self.act_c.push(c as u32);
            }
            let size = self.inp.f_size[f];
            if size <= self.tol(f as u32) {
                zero.push(f as u32);
                continue;
            }
            let o = self.owner(f);
            let p = self.inp.f_path[f];
            let key = o as u64 * (u32::MAX as u64 + 1) + p as u64;
            let b = match self.bmap.get(&key) {
                Some(&b) => b as usize,
                None => {
                    let b = self.bk.len();
                    let last = self.path_last[p as usize];
                    let skey = o as u64 * (u32::MAX as u64 + 1) + last as u64;
                    let sub = match self.smap.get(&skey) {
                        Some(&s) => s,
                        None => {
                            let s = self.sub_b.len() as u32;
                            self.sub_b.push(Vec::new());
                            self.sub_link.push(last);
                            self.sub_cnt.push(0);
                            self.smap.insert(skey, s);
                            self.owner_s[o].push(s);
                            s
                        }
                    };
                    self.bk.push(Bucket { sub, in_list: false, heap: BinaryHeap::new() });
                    self.b_owner.push(o as u32);
                    self.b_path.push(p);
                    self.b_count.push(0.0);
                    self.b_service.push(0.0);
                    self.b_sprev.push(0.0);
                    self.b_rate.push(0.0);
                    self.b_top.push(f64::INFINITY);
                    self.bmap.insert(key, b as u32);
                    b
                }
            };
            let thr = self.b_service[b] + size;
            let bb = &mut self.bk[b];
            bb.heap.push(Reverse(Key(thr, f as u32)));
            self.b_top[b] = bb.heap.peek().unwrap().0 .0;
            self.b_count[b] += 1.0;
            self.sub_cnt[bb.sub as usize] += 1;
            if !bb.in_list {
                bb.in_list = true;
                self.sub_b[bb.sub as usize].push(b as u32);
            }
            if self.owner_cnt[o] == 0 {
                self.o_pos[o] = self.act_o.len() as u32;
                self.act_o.push(o as u32);
            }
            self.owner_cnt[o] += 1;
        }
        if !zero.is_empty() {
            self.complete(&zero, t, rel);
        }
    }

    /// Flows already removed from their buckets.
    fn complete(&mut self, fl: &[u32], t: f64, rel: &mut BinaryHeap<Reverse<Key>>) {
        let mut done_groups: Vec<usize> = Vec::new();
        for &f in fl {
            let f = f as usize;
            self.finish[f] = t;
            let u = self.inp.f_unit[f] as usize;
            self.n_fin[u] += 1.0;
            let g = self.inp.f_group[f] as usize;
            self.g_left[g] -= 1;
            if self.g_left[g] == 0 {
                done_groups.push(g);
            }
            let c = self.inp.f_cof[f] as usize;
            self.c_left[c] -= 1;
            if self.c_left[c] == 0 {
                unlist(&mut self.act_c, &mut self.c_pos, c);
            }
        }
        done_groups.sort_unstable();
        for g in done_groups {
            for i in self.inp.g_par_ptr[g]..self.inp.g_par_ptr[g + 1] {
                let p = self.inp.g_par[i] as usize;
                self.cp[p] += self.g_bytes[g]; // Child-to-Parent (004 §III-C)
                self.g_deps_left[p] -= 1;
                if self.g_deps_left[p] == 0 {
                    rel.push(Reverse(Key(t.max(self.inp.g_arrival[p]), p as u32)));
                }
            }
        }
    }

    fn drop_owner_flow(&mut self, o: usize) {
        self.owner_cnt[o] -= 1;
        if self.owner_cnt[o] == 0 {
            unlist(&mut self.act_o, &mut self.o_pos, o);
        }
    }

    // -- priority rules ----------------------------------------------------------
    fn aalo_queue(&self, c: usize) -> usize {
        // searchsorted(tau, sent * (1 + 1e-12), side="right"), capped at K-1
        let s = self.sent[c] * (1.0 + 1e-12);
        let n = self.par.tau.iter().take_while(|&&v| v <= s).count();
        n.min(self.k - 1)
    }

    fn seen(&self, u: usize) -> f64 {
        let c = self.inp.u_cof[u] as usize;
        let peers = if self.par.relay { self.cof_bytes[c] - self.x[u] } else { 0.0 };
        self.x[u] + self.par.beta * (peers + self.cp[self.inp.u_group[u] as usize])
    }

    fn limit(&self, u: usize, q: usize, y: f64) -> f64 {
        let tau = self.par.tau[q];
        let n = self.n_seen[u].max(1.0);
        let inv = if y > 0.0 { n * MIB / y.max(1e-300) } else { 1e300 };
        let h = tau * (self.n_fin[u] / n + inv);
        tau + self.par.alpha * h
    }

    /// Eq. (2)-(5): demote while W * y exceeds the limit; never rise back.
    fn stream_decide(&mut self, t: f64) {
        for ci in 0..self.act_c.len() {
            let c = self.act_c[ci] as usize;
            for i in self.c_units_ptr[c]..self.c_units_ptr[c + 1] {
                let u = self.c_units[i] as usize;
                if self.hold_until[u] > t {
                    continue;
                }
                let y = self.seen(u);
                for _ in 0..self.k - 1 {
                    if self.q[u] < self.k - 1 && self.inp.u_w[u] * y > self.limit(u, self.q[u], y) {
                        self.q[u] += 1;
                    } else {
                        break;
                    }
                }
            }
        }
    }

    fn starvation_event(&mut self, t: f64) {
        let lim = t * (1.0 + 1e-12) + 1e-12;
        let s = self.par.starve_s;
        let mut keep = Vec::with_capacity(self.starving.len());
        for &u in &self.starving {
            let u = u as usize;
            if self.starve_since[u] + s <= lim {
                self.q[u] = self.q[u].saturating_sub(1);
                self.hold_until[u] = t + s;
                self.starve_since[u] = f64::NAN;
            } else {
                keep.push(u as u32);
            }
        }
        self.starving = keep;
    }

    fn levels(&self) -> Vec<(u64, u32)> {
        let nc = self.inp.c_rank.len() as u64;
        let mut ol: Vec<(u64, u32)> = match self.pol {
            Policy::Fs | Policy::FsStatic => self.act_o.iter().map(|&o| (0, o)).collect(),
            Policy::Stream => self.act_o.iter().map(|&o| (self.q[o as usize] as u64, o)).collect(),
            Policy::Aalo => self
                .act_o
                .iter()
                .map(|&o| {
                    let c = o as usize;
                    (self.aalo_queue(c) as u64 * nc + self.inp.c_rank[c] as u64, o)
                })
                .collect(),
            Policy::Baraat => {
                // FIFO; a heavy coflow lets the next one share its level
                let mut v: Vec<(u32, u32)> =
                    self.act_o.iter().map(|&o| (self.inp.c_rank[o as usize], o)).collect();
                v.sort_unstable();
                let mut lv = 0u64;
                let mut out = Vec::with_capacity(v.len());
                for &(_, o) in &v {
                    out.push((lv, o));
                    if self.sent[o as usize] * (1.0 + 1e-12) < self.par.heavy {
                        lv += 1;
                    }
                }
                out
            }
        };
        ol.sort_unstable();
        ol
    }

    // -- sharing -----------------------------------------------------------------
    /// Append owner `o`'s non-empty buckets to `live` (dropping emptied ones from their
    /// sub-lists); with `skip_full`, a sub-list whose last link has no residual
    /// capacity is left out whole.
    fn collect_owner(&mut self, o: usize, skip_full: bool) {
        for si in 0..self.owner_s[o].len() {
            let sb = self.owner_s[o][si] as usize;
            if self.sub_cnt[sb] == 0 {
                continue;
            }
            let ll = self.sub_link[sb];
            if skip_full && ll != NONE && self.resid[ll as usize] <= 0.0 {
                continue;
            }
            let mut list = std::mem::take(&mut self.sub_b[sb]);
            list.retain(|&b| {
                let keep = self.b_count[b as usize] > 0.5;
                if !keep {
                    self.bk[b as usize].in_list = false;
                    self.b_rate[b as usize] = 0.0;
                }
                keep
            });
            self.live.extend_from_slice(&list);
            self.sub_b[sb] = list;
        }
    }

    /// Strict priority between levels, max-min inside (progressive filling with the
    /// Python engine's 1e-9 bottleneck tie rule). Fills `live` and bucket rates.
    fn fill(&mut self) {
        if self.pol == Policy::Aalo {
            self.fill_aalo();
            return;
        }
        let ol = self.levels();
        self.live.clear();
        self.resid.copy_from_slice(&self.inp.cap);
        let mut i = 0;
        while i < ol.len() {
            let lv = ol[i].0;
            let first = self.live.len();
            while i < ol.len() && ol[i].0 == lv {
                // a sub-list whose last link is already full gets nothing: its
                // buckets stay out of `live` (rate 0) without being touched
                self.collect_owner(ol[i].1 as usize, self.pol != Policy::FsStatic);
                i += 1;
            }
            if self.pol == Policy::FsStatic {
                continue;
            }
            let end = self.live.len();
            self.water_fill(first, end);
        }
        if self.pol == Policy::FsStatic {
            self.static_share();
        }
        self.owner_rates();
    }

    /// D-CLAS (Aalo §4, as 004 §IV-B compares it): K queues by coflow bytes sent, FIFO
    /// (strict by arrival rank) inside a queue, *weighted* sharing between queues.
    /// Pass 1: on every link each queue present gets `cap * w_q / sum(w present)`,
    /// `w_q = K - q`, and fills its coflows FIFO inside that share. Pass 2 (work
    /// conservation): what pass 1 left on each link is filled again in (queue, rank)
    /// order. Mirrors `schedulers/aalo.py` `Aalo.rates`.
    fn fill_aalo(&mut self) {
        let ol = self.levels();
        let nc = self.inp.c_rank.len() as u64;
        let kk = self.k as u64;
        self.live.clear();
        // (start, end, queue) of every level's buckets in `live`
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        let mut i = 0;
        while i < ol.len() {
            let lv = ol[i].0;
            let first = self.live.len();
            while i < ol.len() && ol[i].0 == lv {
                self.collect_owner(ol[i].1 as usize, false);
                i += 1;
            }
            let q = (lv / nc).min(kk - 1) as usize;
            spans.push((first, self.live.len(), q));
        }
        if self.rate1.len() < self.bk.len() {
            self.rate1.resize(self.bk.len(), 0.0);
        }
        let w = self.inp.width;
        let nl = self.inp.cap.len();
        for l in 0..nl {
            self.qmask[l] = 0;
            self.used[l] = 0.0;
        }
        for &(s, e, q) in &spans {
            for idx in s..e {
                let p = self.b_path[self.live[idx] as usize] as usize;
                for j in 0..w {
                    let l = self.inp.plinks[p * w + j];
                    if l != NONE {
                        self.qmask[l as usize] |= 1 << q;
                    }
                }
            }
        }
        let wq = |q: usize, k: usize| (k - q) as f64;
        // pass 1: each queue inside its weighted share of every link
        let mut si = 0;
        while si < spans.len() {
            let q = spans[si].2;
            for l in 0..nl {
                let m = self.qmask[l];
                if m & (1 << q) == 0 {
                    self.resid[l] = 0.0;
                    continue;
                }
                let mut tot = 0.0;
                for qq in 0..self.k {
                    if m & (1 << qq) != 0 {
                        tot += wq(qq, self.k);
                    }
                }
                self.resid[l] = self.inp.cap[l] * wq(q, self.k) / tot;
            }
            while si < spans.len() && spans[si].2 == q {
                let (s, e, _) = spans[si];
                self.water_fill(s, e);
                si += 1;
            }
        }
        for idx in 0..self.live.len() {
            let b = self.live[idx] as usize;
            let r = self.b_rate[b];
            self.rate1[b] = r;
            let c = self.b_count[b];
            let p = self.b_path[b] as usize;
            for j in 0..w {
                let l = self.inp.plinks[p * w + j];
                if l != NONE {
                    self.used[l as usize] += r * c;
                }
            }
        }
        // pass 2: the leftovers, strict (queue, rank) order
        for l in 0..nl {
            let r = self.inp.cap[l] - self.used[l];
            self.resid[l] = if r < SNAP { 0.0 } else { r };
        }
        for &(s, e, _) in &spans {
            self.water_fill(s, e);
        }
        for idx in 0..self.live.len() {
            let b = self.live[idx] as usize;
            self.b_rate[b] += self.rate1[b];
        }
        self.owner_rates();
    }

    /// Per-owner rate: the sum over its live buckets of rate x flows.
    fn owner_rates(&mut self) {
        for &o in &self.act_o {
            self.r_o[o as usize] = 0.0;
        }
        for &b in &self.live {
            let b = b as usize;
            self.r_o[self.b_owner[b] as usize] += self.b_rate[b] * self.b_count[b];
        }
    }

    fn static_share(&mut self) {
        for idx in 0..self.live.len() {
            let b = self.live[idx] as usize;
            let (p, c) = (self.b_path[b], self.b_count[b]);
            let w = self.inp.width;
            for j in 0..w {
                let l = self.inp.plinks[p as usize * w + j];
                if l != NONE {
                    self.wsum[l as usize] += c;
                }
            }
        }
        for idx in 0..self.live.len() {
            let b = self.live[idx] as usize;
            let mut r = f64::INFINITY;
            for &l in self.links(self.b_path[b]) {
                if l != NONE {
                    r = r.min(self.inp.cap[l as usize] / self.wsum[l as usize]);
                }
            }
            self.b_rate[b] = r;
        }
        for idx in 0..self.live.len() {
            let b = self.live[idx] as usize;
            let p = self.b_path[b];
            let w = self.inp.width;
            for j in 0..w {
                let l = self.inp.plinks[p as usize * w + j];
                if l != NONE {
                    self.wsum[l as usize] = 0.0;
                }
            }
        }
    }

    fn water_fill(&mut self, first: usize, end: usize) {
        let w = self.inp.width;
        self.touched.clear();
        self.cand.clear();
        for idx in first..end {
            let b = self.live[idx] as usize;
            let p = self.b_path[b] as usize;
            let ls = &self.inp.plinks[p * w..p * w + w];
            if ls.iter().any(|&l| l != NONE && self.resid[l as usize] <= 0.0) {
                self.b_rate[b] = 0.0;
                continue;
            }
            let c = self.b_count[b];
            for &l in ls {
                if l == NONE {
                    continue;
                }
                let l = l as usize;
                if self.deg[l] == 0 {
                    self.touched.push(l as u32);
                }
                self.wsum[l] += c;
                self.deg[l] += 1;
            }
            self.cand.push(b as u32);
        }
        if self.cand.is_empty() {
            return;
        }
        let mut pos = 0u32;
        for &l in &self.touched {
            self.start[l as usize] = pos;
            self.cur[l as usize] = pos;
            pos += self.deg[l as usize];
        }
        self.adj.resize(pos as usize, 0);
        if self.fixed.len() < self.bk.len() {
            self.fixed.resize(self.bk.len(), false);
        }
        for ci in 0..self.cand.len() {
            let b = self.cand[ci];
            let p = self.b_path[b as usize] as usize;
            self.fixed[b as usize] = false;
            for j in 0..w {
                let l = self.inp.plinks[p * w + j];
                if l != NONE {
                    let cu = &mut self.cur[l as usize];
                    self.adj[*cu as usize] = b;
                    *cu += 1;
                }
            }
        }
        self.lheap.clear();
        for &l in &self.touched {
            let l = l as usize;
            self.lheap.push(Reverse(Key(self.resid[l] / self.wsum[l], l as u32)));
        }
        while let Some(Reverse(Key(key, l))) = self.lheap.pop() {
            let l = l as usize;
            if self.wsum[l] <= 0.5 {
                continue;
            }
            let m = self.resid[l] / self.wsum[l];
            if m > key {
                self.lheap.push(Reverse(Key(m, l as u32)));
                continue;
            }
            let thr = m * (1.0 + 1e-9) + 1e-12;
            self.bott.clear();
            self.bott.push(l as u32);
            while let Some(&Reverse(Key(k2, l2))) = self.lheap.peek() {
                if k2 > thr {
                    break;
                }
                self.lheap.pop();
                let l2 = l2 as usize;
                if self.wsum[l2] <= 0.5 {
                    continue;
                }
                let a2 = self.resid[l2] / self.wsum[l2];
                if a2 <= thr {
                    self.bott.push(l2 as u32);
                } else {
                    self.lheap.push(Reverse(Key(a2, l2 as u32)));
                }
            }
            for bi in 0..self.bott.len() {
                let lb = self.bott[bi] as usize;
                let s = self.start[lb] as usize;
                for idx in s..s + self.deg[lb] as usize {
                    let b = self.adj[idx] as usize;
                    if self.fixed[b] {
                        continue;
                    }
                    self.fixed[b] = true;
                    self.b_rate[b] = m;
                    let c = self.b_count[b];
                    let p = self.b_path[b] as usize;
                    for j in 0..w {
                        let l3 = self.inp.plinks[p * w + j];
                        if l3 != NONE {
                            let l3 = l3 as usize;
                            self.resid[l3] -= m * c;
                            if self.resid[l3] < SNAP {
                                self.resid[l3] = 0.0;
                            }
                            self.wsum[l3] -= c;
                        }
                    }
                }
            }
        }
        for &l in &self.touched {
            self.wsum[l as usize] = 0.0;
            self.deg[l as usize] = 0;
        }
    }

    // -- scheduler bookkeeping after sharing --------------------------------------
    fn track_starvation(&mut self, t: f64) {
        // units that are not starving any more (or not active) lose their mark
        let mut keep = Vec::with_capacity(self.starving.len());
        for &u in &self.starving {
            let uu = u as usize;
            if self.owner_cnt[uu] > 0 && self.r_o[uu] <= 0.0 {
                keep.push(u);
            } else {
                self.starve_since[uu] = f64::NAN;
            }
        }
        self.starving = keep;
        for &o in &self.act_o {
            let u = o as usize;
            if self.r_o[u] <= 0.0 && self.starve_since[u].is_nan() {
                self.starve_since[u] = t;
                self.starving.push(o);
            }
        }
    }

    fn next_sched_event(&self, t: f64) -> f64 {
        let lim = t * (1.0 + 1e-12) + 1e-12;
        let mut best = f64::INFINITY;
        match self.pol {
            Policy::Fs | Policy::FsStatic => {}
            Policy::Stream => {
                for &o in &self.act_o {
                    let u = o as usize;
                    let r = self.r_o[u];
                    if !(r > 0.0) || self.q[u] >= self.k - 1 {
                        continue;
                    }
                    let y = self.seen(u);
                    let tau = self.par.tau[self.q[u]];
                    let n = self.n_seen[u].max(1.0);
                    let wgt = self.inp.u_w[u];
                    let b = tau * (1.0 + self.par.alpha * self.n_fin[u] / n);
                    let c = self.par.alpha * tau * n * MIB;
                    let ystar = (b + (b * b + 4.0 * wgt * c).sqrt()) / (2.0 * wgt);
                    let mut tc = t + (ystar - y).max(0.0) / r;
                    tc = tc.max(self.hold_until[u]);
                    if tc > lim && tc < best {
                        best = tc;
                    }
                }
                for &u in &self.starving {
                    let s = self.starve_since[u as usize] + self.par.starve_s;
                    if s < best {
                        best = s;
                    }
                }
            }
            Policy::Aalo => {
                for &o in &self.act_o {
                    let c = o as usize;
                    let r = self.r_o[c];
                    if !(r > 0.0) {
                        continue;
                    }
                    let nxt = self.par.tau[self.aalo_queue(c)];
                    let tc = t + (nxt - self.sent[c]) / r;
                    if tc.is_finite() && tc > lim && tc < best {
                        best = tc;
                    }
                }
            }
            Policy::Baraat => {
                for &o in &self.act_o {
                    let c = o as usize;
                    let r = self.r_o[c];
                    if !(r > 0.0) || self.sent[c] * (1.0 + 1e-12) >= self.par.heavy {
                        continue;
                    }
                    let tc = t + (self.par.heavy - self.sent[c]) / r;
                    if tc > lim && tc < best {
                        best = tc;
                    }
                }
            }
        }
        best
    }

    fn min_starve(&self) -> f64 {
        self.starving
            .iter()
            .map(|&u| self.starve_since[u as usize] + self.par.starve_s)
            .fold(f64::INFINITY, f64::min)
    }

    // -- the loop ----------------------------------------------------------------
    pub fn run(&mut self) -> Result<(), String> {
        let ng = self.inp.g_arrival.len();
        let mut rel: BinaryHeap<Reverse<Key>> = BinaryHeap::new();
        for g in 0..ng {
            if self.g_deps_left[g] == 0 {
                rel.push(Reverse(Key(self.inp.g_arrival[g], g as u32)));
            }
        }
        let mut t = 0.0f64;
        let mut fin: Vec<u32> = Vec::new();
        loop {
            while let Some(&Reverse(Key(ta, g))) = rel.peek() {
                if ta > t {
                    break;
                }
                rel.pop();
                self.release(g as usize, t, &mut rel);
            }
            if self.act_o.is_empty() {
                if let Some(&Reverse(Key(ta, _))) = rel.peek() {
                    t = ta;
                    continue;
                }
                break;
            }
            if self.pol == Policy::Stream {
                if self.min_starve() <= t {
                    self.starvation_event(t);
                }
                self.stream_decide(t);
            }
            self.fill();
            if self.pol == Policy::Stream {
                self.track_starvation(t);
            }
            let t_s = self.next_sched_event(t);
            let mut dt_f = f64::INFINITY;
            for &b in &self.live {
                let b = b as usize;
                let r = self.b_rate[b];
                if r > 0.0 {
                    let d = (self.b_top[b] - self.b_service[b]) / r;
                    if d < dt_f {
                        dt_f = d;
                    }
                }
            }
            let t_rel = rel.peek().map_or(f64::INFINITY, |r| r.0 .0);
            let t_next = (t + dt_f).min(t_rel).min(t_s);
            if !t_next.is_finite() {
                return Err(format!(
                    "t={t:.6}s: {} active owners get no bandwidth and no event is due",
                    self.act_o.len()
                ));
            }
            let dt = t_next - t;
            for &b in &self.live {
                let b = b as usize;
                let r = self.b_rate[b];
                if r > 0.0 {
                    self.b_sprev[b] = self.b_service[b];
                    self.b_service[b] += r * dt;
                }
            }
            match self.pol {
                Policy::Stream => {
                    for &o in &self.act_o {
                        let u = o as usize;
                        let d = self.r_o[u] * dt;
                        self.x[u] += d;
                        self.cof_bytes[self.inp.u_cof[u] as usize] += d;
                    }
                }
                Policy::Aalo | Policy::Baraat => {
                    for &o in &self.act_o {
                        self.sent[o as usize] += self.r_o[o as usize] * dt;
                    }
                }
                _ => {}
            }
            t = t_next;
            self.events += 1;
            fin.clear();
            let lim_dt = dt * (1.0 + 1e-12);
            for li in 0..self.live.len() {
                let b = self.live[li] as usize;
                let r = self.b_rate[b];
                if !(r > 0.0) {
                    continue; // no service since the last check
                }
                loop {
                    let thr = self.b_top[b];
                    if !thr.is_finite() {
                        break;
                    }
                    let gap = thr - self.b_service[b];
                    let tf = (thr - self.b_sprev[b]) / r;
                    let f = self.bk[b].heap.peek().unwrap().0 .1;
                    if gap <= self.tol(f) || tf <= lim_dt {
                        let heap = &mut self.bk[b].heap;
                        heap.pop();
                        self.b_top[b] = heap.peek().map_or(f64::INFINITY, |k| k.0 .0);
                        self.b_count[b] -= 1.0;
                        self.sub_cnt[self.bk[b].sub as usize] -= 1;
                        self.drop_owner_flow(self.b_owner[b] as usize);
                        fin.push(f);
                    } else {
                        break;
                    }
                }
            }
            if !fin.is_empty() {
                fin.sort_unstable();
                let fl = std::mem::take(&mut fin);
                self.complete(&fl, t, &mut rel);
                fin = fl;
            }
            if t >= t_s && self.pol == Policy::Stream {
                self.starvation_event(t);
            }
        }
        Ok(())
    }
}

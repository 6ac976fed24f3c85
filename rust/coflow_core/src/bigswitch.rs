//! The big-switch loop for the coflow-agnostic policies `fs` (max-min water-filling)
//! and `fs-static` (per-end share) without release dependencies. Flows between the
//! same (sender, receiver) port pair always get the same rate, so the loop keeps one
//! service counter per pair and a min-heap of the pair's flow thresholds: an event
//! costs O(active pairs), not O(active flows).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::model::Key;
use crate::progress::{Progress, Stopped};

/// Node v < P is ingress port v, node P + d egress port d; pair k = s * P + d.
/// A pair's per-flow rate is min(level[s], level[P + d]): for fs-static the level is
/// cap / flows at the port; for fs it is the share at which progressive filling
/// saturates the port (max-min: a flow is fixed by its first saturated end).
/// Pairs keep their service lazily (service at t_upd, constant rate since), and a
/// global heap holds each pair's next completion; an entry is valid iff it equals
/// `tnext[pair]`. An event touches only the pairs whose rate changed.
pub struct Loop {
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
    pub fn new(p: usize, cap: f64, wc: bool) -> Self {
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

    pub fn run(
        mut self,
        src: &[i64],
        dst: &[i64],
        size: &[f64],
        release: &[f64],
        prog: &mut Progress,
    ) -> Result<(Vec<f64>, u64), Stopped> {
        let p = self.p;
        let nf = size.len();
        let mut order: Vec<usize> = (0..nf).collect();
        order.sort_by(|&a, &b| release[a].total_cmp(&release[b]).then(a.cmp(&b)));
        let mut finish = vec![f64::NAN; nf];
        let mut next = 0usize;
        let mut t = 0.0f64;
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
            let t_ev = t_c.min(t_rel);
            if !t_ev.is_finite() {
                break;
            }
            t = t_ev;
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
            prog.tick(t, (nf - left) as u64)?;
        }
        prog.end(t, (nf - left) as u64)?;
        Ok((finish, n_events))
    }
}


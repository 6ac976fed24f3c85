//! `varys`: clairvoyant Smallest-Effective-Bottleneck-First with MADD (Varys,
//! SIGCOMM'14), the upper reference of 004's comparison. At every event the active
//! coflows are ordered by their bottleneck time on the empty fabric
//! (Gamma = max_l remaining bytes on l / capacity of l); each in turn gets, within what
//! the earlier ones left, rate = remaining / Gamma' per flow so that its flows finish
//! together; the leftover is then filled max-min per flow (work-conserving).
//! Mirrors `schedulers/varys.py` with the Python engine's event rule.
//!
//! Every flow's rate changes at every event (remaining / Gamma' moves with the bytes,
//! and nearly every flow gets some backfill: 99 % of flow-events on FB2010), so an
//! event costs one pass over the active flows to advance them, and a pass to find the
//! first finish over the coflows that a bound per coflow does not rule out (the flows
//! are kept per coflow for that); everything else is per coflow and link or per path:
//! - a coflow's remaining bytes per link, which give Gamma and Gamma', are summed in
//!   the advancing pass (one row of links per active coflow);
//! - MADD's use of a link is the coflow's bytes on it / Gamma' (the sum of its flows'
//!   remaining / Gamma');
//! - flows on one path get the same backfill, so the max-min fill runs over the active
//!   paths, each weighted by its number of active flows.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::fill::{next_bottleneck, take};
use crate::model::*;
use crate::progress::Progress;

/// The active flows of one coflow slot, one column per field, read in order by the
/// two passes of an event; the advancing pass computes each rate again from the same
/// inputs (the same value) instead of keeping it between the passes.
#[derive(Default)]
struct Flows {
    f: Vec<u32>,
    rem: Vec<f64>,
    path: Vec<u32>,
    /// per flow, `w` places in `Coflows::load` (its slot's row at each of its links;
    /// NONE for padding)
    at: Vec<u32>,
    /// the least remaining bytes of these flows, for the rating pass's bound
    xmin: f64,
}

impl Flows {
    fn swap_remove(&mut self, i: usize, w: usize) {
        self.f.swap_remove(i);
        self.rem.swap_remove(i);
        self.path.swap_remove(i);
        let n = self.f.len();
        if i < n {
            self.at.copy_within(n * w..n * w + w, i * w);
        }
        self.at.truncate(n * w);
    }
}

/// Active coflows, each in a slot with a row of bytes per link.
struct Coflows {
    nl: usize,
    slot_of: Vec<u32>,
    cof: Vec<u32>,
    n: Vec<u32>,
    /// remaining bytes per (slot, link); the links the slot's flows cross (marked in
    /// `mark`), kept until the slot is freed
    load: Vec<f64>,
    mark: Vec<bool>,
    links: Vec<Vec<u32>>,
    /// 1 / MADD's Gamma' of the slot at this event (0: the coflow gets no MADD share)
    inv_g: Vec<f64>,
    /// the slot's active flows
    fl: Vec<Flows>,
    free: Vec<u32>,
    live: Vec<u32>,
}

impl Coflows {
    fn slot(&mut self, c: u32) -> u32 {
        let s = self.slot_of[c as usize];
        if s != NONE {
            return s;
        }
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                let s = self.cof.len() as u32;
                self.cof.push(0);
                self.n.push(0);
                self.inv_g.push(0.0);
                self.fl.push(Flows { xmin: f64::INFINITY, ..Flows::default() });
                self.links.push(Vec::new());
                self.load.resize(self.load.len() + self.nl, 0.0);
                self.mark.resize(self.mark.len() + self.nl, false);
                s
            }
        };
        self.cof[s as usize] = c;
        self.slot_of[c as usize] = s;
        self.live.push(s);
        s
    }

    /// A flow of slot `s` on `links` joins with `x` bytes.
    fn add_flow(&mut self, s: u32, links: &[u32], x: f64) {
        let row = s as usize * self.nl;
        self.n[s as usize] += 1;
        for &l in links {
            if l != NONE {
                if !self.mark[row + l as usize] {
                    self.mark[row + l as usize] = true;
                    self.links[s as usize].push(l);
                }
                self.load[row + l as usize] += x;
            }
        }
    }

    /// One flow of slot `s` ended; the slot is freed with its last flow.
    fn drop_flow(&mut self, s: u32) {
        let su = s as usize;
        self.n[su] -= 1;
        if self.n[su] == 0 {
            self.slot_of[self.cof[su] as usize] = NONE;
            let row = su * self.nl;
            for &l in &self.links[su] {
                self.mark[row + l as usize] = false;
            }
            self.links[su].clear();
            self.fl[su].xmin = f64::INFINITY;
            self.free.push(s);
            let i = self.live.iter().position(|&x| x == s).unwrap();
            self.live.swap_remove(i);
        }
    }
}

/// The active paths: flows per path and, per link, the paths crossing it (kept as
/// flows come and go, so that a fill needs no set-up pass), and the backfill of an
/// event: max-min per flow over what MADD left, by progressive filling path by path
/// (a path weighs its number of flows), bottlenecks found by `fill::next_bottleneck`.
struct Paths {
    w: usize,
    cnt: Vec<u32>,
    /// per link: the active paths crossing it; per (path, j): the path's place in the
    /// list of its j-th link
    on: Vec<Vec<u32>>,
    at: Vec<u32>,
    /// per link: active flows crossing it, and the links with any
    nflows: Vec<f64>,
    used: Vec<u32>,
    used_at: Vec<u32>,
    /// backfill rate per flow of each path at this event
    rate: Vec<f64>,
    stamp: Vec<u32>,
    epoch: u32,
    wsum: Vec<f64>,
    heap: BinaryHeap<Reverse<Key>>,
    bott: Vec<u32>,
    /// the largest backfill rate per flow of this event (progressive filling fixes the
    /// paths at rising levels, so the last level)
    top: f64,
}

impl Paths {
    fn new(np: usize, nl: usize, w: usize) -> Self {
        Paths { w, cnt: vec![0; np], on: vec![Vec::new(); nl], at: vec![NONE; np * w],
                nflows: vec![0.0; nl], used: Vec::new(), used_at: vec![NONE; nl],
                rate: vec![0.0; np], stamp: vec![0; np], epoch: 0, wsum: vec![0.0; nl],
                heap: BinaryHeap::new(), bott: Vec::new(), top: 0.0 }
    }

    fn add(&mut self, p: u32, links: &[u32]) {
        let pu = p as usize;
        for (j, &l) in links.iter().enumerate() {
            if l == NONE {
                continue;
            }
            let lu = l as usize;
            if self.cnt[pu] == 0 {
                self.at[pu * self.w + j] = self.on[lu].len() as u32;
                self.on[lu].push(p);
            }
            if self.nflows[lu] == 0.0 {
                self.used_at[lu] = self.used.len() as u32;
                self.used.push(l);
            }
            self.nflows[lu] += 1.0;
        }
        self.cnt[pu] += 1;
    }

    fn remove(&mut self, p: u32, links: &[u32], plinks: &[u32]) {
        let pu = p as usize;
        self.cnt[pu] -= 1;
        for (j, &l) in links.iter().enumerate() {
            if l == NONE {
                continue;
            }
            let lu = l as usize;
            if self.cnt[pu] == 0 {
                let i = self.at[pu * self.w + j] as usize;
                self.on[lu].swap_remove(i);
                if i < self.on[lu].len() {
                    let q = self.on[lu][i] as usize;
                    let jq = plinks[q * self.w..q * self.w + self.w].iter()
                        .position(|&x| x == l).unwrap();
                    self.at[q * self.w + jq] = i as u32;
                }
            }
            self.nflows[lu] -= 1.0;
            if self.nflows[lu] == 0.0 {
                let i = self.used_at[lu] as usize;
                self.used.swap_remove(i);
                if i < self.used.len() {
                    self.used_at[self.used[i] as usize] = i as u32;
                }
            }
        }
    }

    /// The backfill within `cap` (reduced in place): `rate[p]` for every active path
    /// (0 for a path crossing a link with nothing left).
    fn fill(&mut self, plinks: &[u32], cap: &mut [f64]) {
        let w = self.w;
        self.epoch += 1;
        self.top = 0.0;
        for &l in &self.used {
            self.wsum[l as usize] = self.nflows[l as usize];
        }
        for ui in 0..self.used.len() {
            let l = self.used[ui] as usize;
            if cap[l] > 0.0 {
                continue;
            }
            for k in 0..self.on[l].len() {
                let p = self.on[l][k] as usize;
                if self.stamp[p] == self.epoch {
                    continue;
                }
                self.stamp[p] = self.epoch;
                self.rate[p] = 0.0;
                let c = self.cnt[p] as f64;
                for &l3 in &plinks[p * w..p * w + w] {
                    if l3 != NONE {
                        self.wsum[l3 as usize] -= c;
                    }
                }
            }
        }
        self.heap.clear();
        for &l in &self.used {
            let lu = l as usize;
            if self.wsum[lu] > 0.5 {
                self.heap.push(Reverse(Key(cap[lu] / self.wsum[lu], l)));
            }
        }
        while let Some(m) = next_bottleneck(&mut self.heap, cap, &self.wsum, &mut self.bott) {
            self.top = self.top.max(m);
            for bi in 0..self.bott.len() {
                let lb = self.bott[bi] as usize;
                let mut b = (cap[lb], self.wsum[lb]);
                for k in 0..self.on[lb].len() {
                    let p = self.on[lb][k] as usize;
                    if self.stamp[p] != self.epoch {
                        // path p is fixed at m per flow: what it takes leaves `cap`
                        self.stamp[p] = self.epoch;
                        self.rate[p] = m;
                        take(&plinks[p * w..p * w + w], lb, m, self.cnt[p] as f64, cap,
                             &mut self.wsum, &mut b);
                    }
                }
                (cap[lb], self.wsum[lb]) = b;
            }
        }
    }
}

pub fn run(inp: &Input, prog: &mut Progress) -> Result<(Vec<f64>, u64), String> {
    let nf = inp.f_size.len();
    let nc = inp.c_rank.len();
    let ng = inp.g_arrival.len();
    let nl = inp.cap.len();
    let w = inp.width;
    let np = inp.plinks.len() / w.max(1);
    let links = |p: u32| &inp.plinks[p as usize * w..p as usize * w + w];
    let (g_ptr, g_flows) = csr(ng, &inp.f_group);
    let mut g_left = vec![0u32; ng];
    for &g in &inp.f_group {
        g_left[g as usize] += 1;
    }
    let mut deps_left = inp.g_deps.clone();
    let tol = |f: usize| TOL_REL * inp.f_size[f] + TOL_BYTES;
    let max_tol = inp.f_size.iter().fold(0.0f64, |m, &x| m.max(x)) * TOL_REL + TOL_BYTES;
    let mut finish = vec![f64::NAN; nf];
    let mut n_act = 0usize;
    let mut cf = Coflows { nl, slot_of: vec![NONE; nc], cof: Vec::new(), n: Vec::new(),
                           load: Vec::new(), mark: Vec::new(), links: Vec::new(),
                           inv_g: Vec::new(), fl: Vec::new(),
                           free: Vec::new(), live: Vec::new() };
    // active paths, each with its number of active flows and its backfill rate
    let mut paths = Paths::new(np, nl, w);
    let mut rel: BinaryHeap<Reverse<Key>> = BinaryHeap::new();
    for g in 0..ng {
        if deps_left[g] == 0 {
            rel.push(Reverse(Key(inp.g_arrival[g], g as u32)));
        }
    }
    let mut resid = vec![0.0; nl];
    let mut order: Vec<(f64, u32)> = Vec::new();
    let mut done: Vec<u32> = Vec::new();
    let mut gone: Vec<(u32, u32)> = Vec::new();
    let mut bound: Vec<(f64, u32)> = Vec::new();
    let mut t = 0.0f64;
    let mut events = 0u64;
    let mut n_done = 0u64;
    let complete = |fl: &[u32],
                    t: f64,
                    finish: &mut [f64],
                    g_left: &mut [u32],
                    deps_left: &mut [u32],
                    rel: &mut BinaryHeap<Reverse<Key>>| {
        let mut gs: Vec<usize> = Vec::new();
        for &f in fl {
            finish[f as usize] = t;
            let g = inp.f_group[f as usize] as usize;
            g_left[g] -= 1;
            if g_left[g] == 0 {
                gs.push(g);
            }
        }
        gs.sort_unstable();
        for g in gs {
            for i in inp.g_par_ptr[g]..inp.g_par_ptr[g + 1] {
                let p = inp.g_par[i] as usize;
                deps_left[p] -= 1;
                if deps_left[p] == 0 {
                    rel.push(Reverse(Key(t.max(inp.g_arrival[p]), p as u32)));
                }
            }
        }
    };
    loop {
        while let Some(&Reverse(Key(ta, g))) = rel.peek() {
            if ta > t {
                break;
            }
            rel.pop();
            let mut zero: Vec<u32> = Vec::new();
            for &f in &g_flows[g_ptr[g as usize]..g_ptr[g as usize + 1]] {
                let fu = f as usize;
                if inp.f_size[fu] <= tol(fu) {
                    zero.push(f);
                    continue;
                }
                let s = cf.slot(inp.f_cof[fu]);
                let p = inp.f_path[fu];
                paths.add(p, links(p));
                cf.add_flow(s, links(p), inp.f_size[fu]);
                let row = s as usize * nl;
                let fs = &mut cf.fl[s as usize];
                fs.f.push(f);
                fs.rem.push(inp.f_size[fu]);
                fs.path.push(p);
                fs.xmin = fs.xmin.min(inp.f_size[fu]);
                n_act += 1;
                fs.at.extend(links(p).iter().map(|&l| if l == NONE { NONE } else {
                    (row + l as usize) as u32 }));
            }
            if !zero.is_empty() {
                n_done += zero.len() as u64;
                complete(&zero, t, &mut finish, &mut g_left, &mut deps_left, &mut rel);
            }
        }
        if n_act == 0 {
            if let Some(&Reverse(Key(ta, _))) = rel.peek() {
                t = ta;
                continue;
            }
            break;
        }
        // SEBF order: Gamma per active coflow on the empty fabric, ties by coflow id
        order.clear();
        for &s in &cf.live {
            let row = s as usize * nl;
            let mut g = 0.0f64;
            for &l in &cf.links[s as usize] {
                g = g.max(cf.load[row + l as usize] / inp.cap[l as usize]);
            }
            order.push((g, s));
        }
        order.sort_by(|a, b| a.0.total_cmp(&b.0)
            .then(cf.cof[a.1 as usize].cmp(&cf.cof[b.1 as usize])));
        // MADD within what the earlier coflows left
        resid.copy_from_slice(&inp.cap);
        for &(_, s) in &order {
            let su = s as usize;
            let row = su * nl;
            let mut g = 0.0f64;
            for &l in &cf.links[su] {
                let l = l as usize;
                g = g.max(cf.load[row + l] / resid[l].max(0.0));
            }
            if !g.is_finite() || g <= 0.0 {
                cf.inv_g[su] = 0.0;
                continue;
            }
            cf.inv_g[su] = 1.0 / g;
            for &l in &cf.links[su] {
                let l = l as usize;
                resid[l] -= cf.load[row + l] / g;
                if resid[l] < 0.0 {
                    resid[l] = 0.0;
                }
            }
        }
        for &s in &cf.live {
            let row = s as usize * nl;
            for &l in &cf.links[s as usize] {
                cf.load[row + l as usize] = 0.0;
            }
        }
        // backfill: max-min per flow over the leftover, path by path
        paths.fill(&inp.plinks, &mut resid);
        // a flow's finish x / (b + x / Gamma') is at least xmin / (top + xmin / Gamma')
        // for its slot's least bytes xmin and the largest backfill top, so the slots are
        // scanned by that bound, and the scan stops at the first above the least finish
        // found (the same least finish as a scan of every flow)
        bound.clear();
        for &s in &cf.live {
            let su = s as usize;
            let x = cf.fl[su].xmin;
            bound.push((x / (paths.top + x * cf.inv_g[su]), s));
        }
        bound.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut dt_f = f64::INFINITY;
        for &(lb, s) in &bound {
            if lb > dt_f * (1.0 + 1e-9) {
                break;
            }
            let fs = &cf.fl[s as usize];
            let a = cf.inv_g[s as usize];
            for (&x, &p) in fs.rem.iter().zip(&fs.path) {
                let r = paths.rate[p as usize] + x * a;
                // the division only for a flow that may finish first
                if r > 0.0 && x <= dt_f * r * (1.0 + 1e-9) {
                    dt_f = dt_f.min(x / r);
                }
            }
        }
        let t_rel = rel.peek().map_or(f64::INFINITY, |r| r.0 .0);
        let t_next = (t + dt_f).min(t_rel);
        if !t_next.is_finite() {
            return Err(format!("t={t:.6}s: {} active flows get no bandwidth and no event is due",
                               n_act));
        }
        let dt = t_next - t;
        let t_prev = t;
        t = t_next;
        events += 1;
        // due by `model::due`; a flow with more than rate x `wide` left is due by
        // none of its time rules (tf is then above dt (1 + 1e-12) and above t - t_prev
        // plus one ulp of t) and one with more than `max_tol` left not by its bytes, so
        // tf is worked out only for the others. The survivors' bytes are summed per
        // coflow and link for the next event.
        let wide = dt * (1.0 + 1e-9) + t * 1e-15;
        done.clear();
        gone.clear();
        // zipped columns, so that the flow columns are read without bounds checks
        // (`width` is at least 1: `Workload::input` refuses 0)
        for &s in &cf.live {
            let su = s as usize;
            let a = cf.inv_g[su];
            let fs = &mut cf.fl[su];
            let mut xmin = f64::INFINITY;
            let cols = fs.rem.iter_mut().zip(&fs.path).zip(fs.at.chunks_exact(w)).zip(&fs.f);
            for (i, (((x, &p), at), &f)) in cols.enumerate() {
                let old = *x;
                let r = paths.rate[p as usize] + old * a;
                let rem = old - r * dt;
                *x = rem;
                let is_due = (rem <= max_tol || old <= r * wide) && {
                    let tf = if r > 0.0 { old / r } else { f64::INFINITY };
                    due(rem, tol(f as usize), tf, t_prev + tf, t_prev, t)
                };
                if is_due {
                    gone.push((s, i as u32));
                } else {
                    xmin = xmin.min(rem);
                    for &k in at {
                        if k != NONE {
                            cf.load[k as usize] += rem;
                        }
                    }
                }
            }
            fs.xmin = xmin;
        }
        for &(s, i) in gone.iter().rev() {
            let fs = &mut cf.fl[s as usize];
            let i = i as usize;
            let p = fs.path[i];
            done.push(fs.f[i]);
            fs.swap_remove(i, w);
            n_act -= 1;
            cf.drop_flow(s);
            paths.remove(p, links(p), &inp.plinks);
        }
        if !done.is_empty() {
            done.sort_unstable();
            n_done += done.len() as u64;
            complete(&done, t, &mut finish, &mut g_left, &mut deps_left, &mut rel);
        }
        prog.tick(t, n_done)?;
    }
    prog.end(t, n_done)?;
    Ok((finish, events))
}

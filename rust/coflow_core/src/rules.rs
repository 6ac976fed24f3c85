//! The priority rules: `stream` (004 eq. 2-5 with Information-Relay, Child-to-Parent,
//! Weighted-Priority and starvation mitigation, §III-C/D), `aalo` (D-CLAS) and
//! `baraat` (FIFO with limited multiplexing). Each sets its owners' level keys at an
//! event; the engine moves the flows of an owner whose key changed. Mirrors the Python
//! scheduler classes in `streamband.sim.coflow.schedulers`.

use crate::engine::{Sim, MAX_QUEUES};
use crate::model::*;
use crate::util::{Hist, IdMap};

/// A unit is demoted once W y exceeds the limit less 1e-9 relative (the Python
/// engine's `DUE`), so that the event scheduled at a crossing demotes it.
const DUE: f64 = 1.0 - 1e-9;

/// `stream`'s queues are keys 0..K-1; a level that gives up its key while its units
/// move out takes `TEMP_KEY` + its slot (`relabel_levels`).
const TEMP_KEY: u64 = 1 << 40;

/// The latest time that counts as `t` (the engines' event resolution).
#[inline]
fn now(t: f64) -> f64 {
    t * (1.0 + 1e-12) + 1e-12
}

impl Sim {
    /// The level key a newly active owner starts in.
    pub fn initial_key(&self, o: usize) -> u64 {
        match self.pol {
            Policy::Fs | Policy::FsStatic | Policy::Varys => 0,
            Policy::Stream => self.q[o] as u64,
            Policy::Aalo => self.aalo_key(o, 0.0),
            Policy::Baraat => self.inp.c_rank[o] as u64,
        }
    }

    fn aalo_queue(&self, c: usize, t: f64) -> usize {
        // searchsorted(tau, sent * (1 + 1e-12), side="right"), capped at K-1
        let s = self.o_bytes(c, t) * (1.0 + 1e-12);
        let n = self.par.tau.iter().take_while(|&&v| v <= s).count();
        n.min(self.k - 1)
    }

    /// Past every threshold its bytes reached, one past the queue it is in when its
    /// planned crossing is due now (so the event planned at a crossing demotes it
    /// whatever the rounding of the bytes; `schedulers/crossing.py`); never back up.
    fn aalo_key(&self, c: usize, t: f64) -> u64 {
        let nc = self.inp.c_rank.len() as u64;
        let mut q = self.aalo_queue(c, t);
        if self.o_key[c] != u64::MAX {
            let cur = (self.o_key[c] / nc) as usize;
            q = q.max(if self.x_at[c] <= now(t) { cur + 1 } else { cur }).min(self.k - 1);
        }
        q as u64 * nc + self.inp.c_rank[c] as u64
    }

    fn heavy(&self, c: usize, t: f64) -> bool {
        self.x_mark[c] || self.o_bytes(c, t) * (1.0 + 1e-12) >= self.par.heavy_bytes
    }

    /// Plan each served coflow's crossing of `thr(coflow)` from its bytes and rate at
    /// `t`; the earliest, or `t` itself (a zero-length event) if one is due already.
    fn plan_crossings(&mut self, t: f64, thr: impl Fn(&Self, usize) -> Option<f64>) -> f64 {
        for &c in &self.x_list {
            self.x_at[c as usize] = f64::INFINITY;
        }
        self.x_list.clear();
        let mut best = f64::INFINITY;
        for i in 0..self.act_o.len() {
            let c = self.act_o[i] as usize;
            let r = self.o_rate[c];
            if self.o_acc[c].npos == 0 || !(r > 0.0) {
                continue;
            }
            let Some(x) = thr(self, c) else { continue };
            let tc = t + (x - self.o_bytes(c, t)) / r;
            if tc.is_finite() {
                self.x_at[c] = tc;
                self.x_list.push(c as u32);
                best = best.min(tc);
            }
        }
        if best <= now(t) {
            t
        } else {
            best
        }
    }

    /// Priority decisions at `t`, before the fill.
    #[inline(never)]
    pub fn decide(&mut self, t: f64) {
        match self.pol {
            Policy::Fs | Policy::FsStatic | Policy::Varys => {}
            Policy::Stream => {
                if self.min_starve() <= t {
                    self.starvation_event(t);
                }
                if self.par.relay == Relay::Decentralized {
                    self.relay(t);
                }
                self.stream_decide(t);
                self.relabel_levels();
                for i in 0..self.act_o.len() {
                    let u = self.act_o[i] as usize;
                    let key = self.q[u] as u64;
                    self.move_owner(u, key, t);
                }
            }
            Policy::Aalo => {
                for i in 0..self.act_o.len() {
                    let c = self.act_o[i] as usize;
                    let key = self.aalo_key(c, t);
                    self.move_owner(c, key, t);
                }
            }
            Policy::Baraat => {
                for i in 0..self.act_o.len() {
                    let c = self.act_o[i] as usize;
                    if self.x_at[c] <= now(t) {
                        self.x_mark[c] = true;
                    }
                }
                // FIFO; a heavy coflow lets the next one share its level. A level's key
                // stays what it was while the level does (its first coflow may be gone),
                // so that only coflows whose level really changes move.
                let mut v: Vec<(u32, u32)> =
                    self.act_o.iter().map(|&o| (self.inp.c_rank[o as usize], o)).collect();
                v.sort_unstable();
                let mut last: Option<u64> = None;
                let mut prev_heavy = false;
                for &(rank, o) in &v {
                    let o = o as usize;
                    let key = match last {
                        Some(k) if prev_heavy => k,
                        _ => {
                            let k = self.o_key[o];
                            if k <= rank as u64 && last.is_none_or(|l| k > l) { k } else { rank as u64 }
                        }
                    };
                    self.move_owner(o, key, t);
                    last = Some(key);
                    prev_heavy = self.heavy(o, t);
                }
            }
        }
    }

    // -- stream ---------------------------------------------------------------------
    /// S of eq. (5): what unit `u` knows of its peers' bytes, children (CP) excluded.
    fn peers(&self, u: usize, t: f64) -> f64 {
        let s = match self.par.relay {
            Relay::None => return 0.0,
            Relay::Oracle => {
                let c = self.inp.u_cof[u] as usize;
                self.c_bytes(c, t) - self.o_bytes(u, t)
            }
            Relay::Decentralized => {
                if self.u_fast[u] {
                    self.view_u[u]
                } else {
                    let mut m = f64::NEG_INFINITY;
                    for i in self.u_pairs_ptr[u]..self.u_pairs_ptr[u + 1] {
                        m = m.max(self.p_view[self.u_pairs[i] as usize]);
                    }
                    m
                }
            }
        };
        (s - self.cp[self.inp.u_group[u] as usize]).max(0.0)
    }

    pub fn seen(&self, u: usize, t: f64) -> f64 {
        let x = self.o_bytes(u, t);
        x + self.par.beta * (self.peers(u, t) + self.cp[self.inp.u_group[u] as usize])
    }

    fn limit(&self, u: usize, q: usize, y: f64) -> f64 {
        let tau = self.par.tau[q];
        let n = self.n_seen[u].max(1.0);
        let inv = if y > 0.0 { n * MIB / y.max(1e-300) } else { 1e300 };
        let h = tau * (self.n_fin[u] / n + inv);
        tau + self.par.alpha * h
    }

    /// Eq. (2)-(5): demote while W * y exceeds the limit; never rise back.
    #[inline(never)]
    fn stream_decide(&mut self, t: f64) {
        for ci in 0..self.act_c.len() {
            let c = self.act_c[ci] as usize;
            for i in self.c_units_ptr[c]..self.c_units_ptr[c + 1] {
                let u = self.c_units[i] as usize;
                if self.hold_until[u] > t {
                    continue;
                }
                let y = self.seen(u, t);
                for _ in 0..self.k - 1 {
                    if self.q[u] < self.k - 1
                        && self.inp.u_w[u] * y > self.limit(u, self.q[u], y) * DUE
                    {
                        self.q[u] += 1;
                    } else {
                        break;
                    }
                }
            }
        }
    }

    /// Before the units move to their new queues: when most of a level's flows go
    /// to the same queue (starvation mitigation raises every starving unit of a
    /// level at once; they fall back together when their hold ends), the level
    /// itself takes that queue's key (`relabel`) and the few units that do not follow
    /// move instead. A level holding the target key first takes a key of its own
    /// (`TEMP_KEY` + slot), which its units all leave. Each relabel lowers the number
    /// of flows left to move; the moves that remain are made by `move_owner`. The
    /// rates are those of the same levels, groups and flows as moving every unit.
    #[inline(never)]
    fn relabel_levels(&mut self) {
        let k = self.k;
        let nl = self.lv.len();
        self.rl_rows.clear();
        self.rl_rows.resize(nl, [0u64; MAX_QUEUES]);
        self.rl_slot.clear();
        let mut moving = false;
        for i in 0..self.act_o.len() {
            let u = self.act_o[i] as usize;
            let l = match self.lmap.get(&self.o_key[u]) {
                Some(&l) => l,
                None => NONE,
            };
            self.rl_slot.push(l);
            if l != NONE {
                self.rl_rows[l as usize][self.q[u]] += self.o_flows[u].len() as u64;
            }
            moving |= self.o_key[u] != self.q[u] as u64;
        }
        if !moving {
            return;
        }
        let mut relabelled = false;
        for _ in 0..2 * k {
            let mut best = (0i64, 0usize, 0usize);
            for i in 0..self.lorder.len() {
                let l = self.lorder[i] as usize;
                let kx = self.lv[l].key;
                let row = self.rl_rows[l];
                let stay = if kx < k as u64 { row[kx as usize] } else { 0 };
                for q in 0..k {
                    if q as u64 == kx || row[q] == 0 {
                        continue;
                    }
                    let held = self.lmap.get(&(q as u64)).map_or(0, |&y| self.rl_rows[y as usize][q]);
                    let gain = row[q] as i64 - stay as i64 - held as i64;
                    if gain > best.0 {
                        best = (gain, l, q);
                    }
                }
            }
            if best.0 <= 0 {
                break;
            }
            let (_, l, q) = best;
            if let Some(&y) = self.lmap.get(&(q as u64)) {
                self.relabel(y as usize, TEMP_KEY + y as u64);
            }
            self.relabel(l, q as u64);
            relabelled = true;
        }
        if relabelled {
            for i in 0..self.act_o.len() {
                let l = self.rl_slot[i];
                if l != NONE {
                    self.o_key[self.act_o[i] as usize] = self.lv[l as usize].key;
                }
            }
        }
    }

    #[inline(never)]
    pub(crate) fn min_starve(&self) -> f64 {
        self.starving
            .iter()
            .map(|&u| self.starve_since[u as usize] + self.par.starve_s)
            .fold(f64::INFINITY, f64::min)
    }

    /// Starvation mitigation (004 §III-D): raise one queue, hold it for `starve_s`.
    #[inline(never)]
    fn starvation_event(&mut self, t: f64) {
        let lim = t * (1.0 + 1e-12) + 1e-12;
        let s = self.par.starve_s;
        let mut keep = Vec::with_capacity(self.starving.len());
        for &u in &self.starving {
            let u = u as usize;
            if self.starve_since[u] + s <= lim {
                crate::count!(crate::counts::RAISES, 1);
                self.q[u] = self.q[u].saturating_sub(1);
                self.hold_until[u] = t + s;
                self.starve_since[u] = f64::NAN;
            } else {
                keep.push(u as u32);
            }
        }
        self.starving = keep;
    }

    /// The scheduler's own event at `t` (after the completions).
    pub fn sched_event(&mut self, t: f64) {
        if self.pol == Policy::Stream {
            self.starvation_event(t);
        }
    }

    /// Bookkeeping after the fill: who starves, who is being served (the relay's
    /// contacts for the next event).
    #[inline(never)]
    pub fn after_fill(&mut self, t: f64) {
        if self.pol != Policy::Stream {
            return;
        }
        let mut keep = Vec::with_capacity(self.starving.len());
        for &u in &self.starving {
            let uu = u as usize;
            if !self.o_flows[uu].is_empty() && self.o_acc[uu].npos == 0 {
                keep.push(u);
            } else {
                self.starve_since[uu] = f64::NAN;
            }
        }
        self.starving = keep;
        for &o in &self.act_o {
            let u = o as usize;
            if self.o_acc[u].npos == 0 && self.starve_since[u].is_nan() {
                self.starve_since[u] = t;
                self.starving.push(o);
            }
        }
        if self.par.relay == Relay::Decentralized {
            self.contact.clear();
            for &p in &self.p_contact {
                self.p_mark[p as usize] = false;
            }
            self.p_contact.clear();
            for i in 0..self.act_o.len() {
                let u = self.act_o[i] as usize;
                if self.o_acc[u].npos == 0 {
                    continue;
                }
                if self.u_fast[u] {
                    self.contact.push(u as u32);
                } else {
                    for &f in &self.o_flows[u] {
                        let f = f as usize;
                        let p = self.f_pair[f] as usize;
                        if self.flow_rate(f) > 0.0 && !self.p_mark[p] {
                            self.p_mark[p] = true;
                            self.p_contact.push(p as u32);
                        }
                    }
                }
            }
        }
    }

    #[inline(never)]
    pub fn next_sched_event(&mut self, t: f64) -> f64 {
        let lim = t * (1.0 + 1e-12) + 1e-12;
        let mut best = f64::INFINITY;
        match self.pol {
            Policy::Fs | Policy::FsStatic | Policy::Varys => {}
            Policy::Stream => {
                for &o in &self.act_o {
                    let u = o as usize;
                    let r = self.o_rate[u];
                    if self.o_acc[u].npos == 0 || !(r > 0.0) || self.q[u] >= self.k - 1 {
                        continue;
                    }
                    let y = self.seen(u, t);
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
                best = best.min(self.min_starve());
            }
            Policy::Aalo => {
                let nc = self.inp.c_rank.len() as u64;
                best = self.plan_crossings(t, |s, c| Some(s.par.tau[(s.o_key[c] / nc) as usize]));
            }
            Policy::Baraat => {
                best = self.plan_crossings(t, |s, c| {
                    if s.heavy(c, t) { None } else { Some(s.par.heavy_bytes) }
                });
            }
        }
        best
    }

    // -- Information-Relay (decentralized) -------------------------------------------
    /// Hubs (coflow, sender) and the (hub, unit) pairs of coflows where some sender
    /// does not serve every receiver; the others take the one-number path.
    pub fn build_relay(&mut self) {
        let nu = self.inp.u_cof.len();
        let nc = self.inp.c_rank.len();
        let nf = self.inp.f_size.len();
        let mut hub_of = IdMap::<u32>::default();
        let mut pair_of = IdMap::<u32>::default();
        let mut f_hub = vec![0u32; nf];
        let mut c_hubs = vec![0u64; nc];
        let mut c_pairs = vec![0u64; nc];
        let mut u_has = vec![false; nu];
        let mut c_units = vec![0u64; nc];
        self.f_pair = vec![0; nf];
        for f in 0..nf {
            let c = self.inp.f_cof[f] as usize;
            let hk = c as u64 * (u32::MAX as u64 + 1) + self.inp.f_src[f] as u64;
            let h = match hub_of.get(&hk) {
                Some(&h) => h,
                None => {
                    let h = hub_of.len() as u32;
                    hub_of.insert(hk, h);
                    c_hubs[c] += 1;
                    h
                }
            };
            f_hub[f] = h;
            let u = self.inp.f_unit[f] as usize;
            if !u_has[u] {
                u_has[u] = true;
                c_units[c] += 1;
            }
            let pk = h as u64 * (u32::MAX as u64 + 1) + u as u64;
            let p = match pair_of.get(&pk) {
                Some(&p) => p,
                None => {
                    let p = self.p_hub.len() as u32;
                    pair_of.insert(pk, p);
                    self.p_hub.push(h);
                    self.p_unit.push(u as u32);
                    c_pairs[c] += 1;
                    p
                }
            };
            self.f_pair[f] = p;
        }
        for u in 0..nu {
            let c = self.inp.u_cof[u] as usize;
            self.u_fast[u] = c_pairs[c] == c_hubs[c] * c_units[c];
        }
        self.p_view = vec![0.0; self.p_hub.len()];
        self.p_mark = vec![false; self.p_hub.len()];
        let (up, ups) = csr(nu, &self.p_unit);
        self.u_pairs_ptr = up;
        self.u_pairs = ups;
        let (hp, hps) = csr(hub_of.len(), &self.p_hub);
        self.h_units_ptr = hp;
        self.h_units = hps.iter().map(|&p| self.p_unit[p as usize]).collect();
        if self.delay > 0.0 {
            self.u_hist = vec![Hist::default(); nu];
            self.c_hist = vec![Hist::default(); nc];
        }
    }

    fn x_at(&self, u: usize, tau: f64, t: f64) -> f64 {
        if self.delay > 0.0 {
            self.u_hist[u].at(tau)
        } else {
            self.o_bytes(u, t)
        }
    }

    /// Deliver at `t` what the senders that served a unit since the last event relay:
    /// the bytes of the other receivers they serve, as of `t - delay`.
    #[inline(never)]
    fn relay(&mut self, t: f64) {
        let tau = t - self.delay;
        for i in 0..self.contact.len() {
            let u = self.contact[i] as usize;
            let c = self.inp.u_cof[u] as usize;
            let xc = if self.delay > 0.0 { self.c_hist[c].at(tau) } else { self.c_bytes(c, t) };
            self.view_u[u] = xc - self.x_at(u, tau, t);
        }
        for i in 0..self.p_contact.len() {
            let p = self.p_contact[i] as usize;
            let h = self.p_hub[p] as usize;
            let mut s = 0.0;
            for j in self.h_units_ptr[h]..self.h_units_ptr[h + 1] {
                s += self.x_at(self.h_units[j] as usize, tau, t);
            }
            self.p_view[p] = s - self.x_at(self.p_unit[p] as usize, tau, t);
        }
    }
}

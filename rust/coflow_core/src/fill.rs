//! Bandwidth sharing at an event: strict priority between levels, max-min fair
//! inside a level (004 §III-B), Aalo's weighted sharing between queues, and the
//! per-end static share of `fs-static`.
//!
//! A level's fill is a function of its groups (in order) and of the capacity the
//! levels above left on its links; it is skipped when neither changed (SimGrid's
//! selective update, at the granularity of a priority level).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::engine::{add_compensated, prefetch, Level, Sim, AHEAD};
use crate::model::*;

impl Sim {
    /// New rates for every group at `t`; groups whose rate changed are re-timed.
    pub fn fill(&mut self, t: f64) {
        if self.lorder_dirty {
            let lv = &self.lv;
            self.lorder.sort_unstable_by_key(|&l| lv[l as usize].key);
            self.lorder_dirty = false;
        }
        match self.pol {
            Policy::Aalo => self.fill_aalo(t),
            Policy::FsStatic => self.fill_static(t),
            _ => self.fill_strict(t),
        }
        for &l in &self.chg_list {
            self.chg_key[l as usize] = u64::MAX;
        }
        self.chg_list.clear();
    }

    /// Strict priority between levels: each level is filled within what the levels
    /// above left, and only when its groups changed or what it was left changed.
    fn fill_strict(&mut self, t: f64) {
        self.resid.copy_from_slice(&self.inp.cap);
        let mut changed: Vec<u32> = Vec::new();
        for i in 0..self.lorder.len() {
            let l = self.lorder[i] as usize;
            let key = self.lv[l].key;
            let need = self.lv[l].dirty
                || self.lv[l].links.iter().any(|&lk| self.chg_key[lk as usize] < key);
            if need {
                self.fill_level(l, &mut changed);
                self.lv[l].dirty = false;
            }
            let lvl = &self.lv[l];
            for (slot, &lk) in lvl.links.iter().enumerate() {
                let r = self.resid[lk as usize] - lvl.used(slot);
                self.resid[lk as usize] = if r < SNAP { 0.0 } else { r };
            }
        }
        for (i, &g) in changed.iter().enumerate() {
            if let Some(&h) = changed.get(i + AHEAD) {
                self.prefetch_group(h as usize);
            }
            let g = g as usize;
            self.set_rate(g, self.gh[g].new, t);
        }
    }

    /// Group `g`'s rate at this fill is `r`: its level's use follows now (for the
    /// levels below), its own rate after every level is filled. The use of link
    /// `held` (a bottleneck whose groups are being fixed, NONE: none) is added to `u`,
    /// which the caller keeps in registers and stores after its last group (the same
    /// operations in the same order as through the level's slot).
    #[inline]
    fn fix(&mut self, g: usize, r: f64, changed: &mut Vec<u32>, held: u32, u: &mut (f64, f64)) {
        self.gh[g].epoch = self.epoch;
        self.gh[g].new = r;
        let old = self.gh[g].rate;
        if r == old {
            return;
        }
        changed.push(g as u32);
        let w = self.inp.width;
        let p = self.gh[g].path as usize;
        let l = self.gh[g].lvl as usize;
        let key = self.lv[l].key;
        let d = (r - old) * self.gh[g].n as f64;
        for j in 0..w {
            let lk = self.inp.plinks[p * w + j];
            if lk == NONE {
                continue;
            }
            if lk == held {
                add_compensated(&mut u.0, &mut u.1, d);
            } else {
                let lvl = &mut self.lv[l];
                let slot = lvl.lslot[lk as usize] as usize;
                lvl.add_usage(slot, d);
            }
            self.mark_link(lk, key);
        }
    }

    /// Max-min fair rates of level `l`'s groups (progressive filling, 004 "FS", with
    /// the Python engine's 1e-9 bottleneck tie rule) within `self.resid`; groups that
    /// cross a link with nothing left get 0.
    fn fill_level(&mut self, l: usize, changed: &mut Vec<u32>) {
        self.epoch = self.epoch.wrapping_add(1);
        let w = self.inp.width;
        let lvl = std::mem::replace(&mut self.lv[l], Level::placeholder());
        for (slot, &lk) in lvl.links.iter().enumerate() {
            self.work[lk as usize] = self.resid[lk as usize];
            self.wsum[lk as usize] = lvl.lw[slot];
        }
        self.lv[l] = lvl;
        // the per-link group lists, out of the level while it is filled (`fix` reads
        // the level's slots and use, not these)
        let lgroups = std::mem::take(&mut self.lv[l].lgroups);
        // groups crossing a link with nothing left
        for slot in 0..self.lv[l].links.len() {
            let lk = self.lv[l].links[slot] as usize;
            if self.work[lk] > 0.0 {
                continue;
            }
            for &g in &lgroups[slot] {
                let g = g as usize;
                if self.gh[g].epoch == self.epoch {
                    continue;
                }
                let c = self.gh[g].n as f64;
                let p = self.gh[g].path as usize;
                for &l2 in &self.inp.plinks[p * w..p * w + w] {
                    if l2 != NONE {
                        self.wsum[l2 as usize] -= c;
                    }
                }
                self.fix(g, 0.0, changed, NONE, &mut (0.0, 0.0));
            }
        }
        self.lheap.clear();
        for &lk in &self.lv[l].links {
            let lk = lk as usize;
            if self.wsum[lk] > 0.5 {
                self.lheap.push(Reverse(Key(self.work[lk] / self.wsum[lk], lk as u32)));
            }
        }
        while let Some(Reverse(Key(key, lk))) = self.lheap.pop() {
            let lk = lk as usize;
            if self.wsum[lk] <= 0.5 {
                continue;
            }
            let m = self.work[lk] / self.wsum[lk];
            if m > key {
                self.lheap.push(Reverse(Key(m, lk as u32)));
                continue;
            }
            let thr = m * (1.0 + 1e-9) + 1e-12;
            self.bott.clear();
            self.bott.push(lk as u32);
            while let Some(&Reverse(Key(k2, l2))) = self.lheap.peek() {
                if k2 > thr {
                    break;
                }
                self.lheap.pop();
                let l2 = l2 as usize;
                if self.wsum[l2] <= 0.5 {
                    continue;
                }
                let a2 = self.work[l2] / self.wsum[l2];
                if a2 <= thr {
                    self.bott.push(l2 as u32);
                } else {
                    self.lheap.push(Reverse(Key(a2, l2 as u32)));
                }
            }
            for bi in 0..self.bott.len() {
                let lb = self.bott[bi] as usize;
                let slot = self.lv[l].lslot[lb] as usize;
                let mut b = (self.work[lb], self.wsum[lb]);
                let mut u = (self.lv[l].usage[slot], self.lv[l].usage_lo[slot]);
                let list = &lgroups[slot];
                for (i, &g) in list.iter().enumerate() {
                    if let Some(&h) = list.get(i + 2 * AHEAD) {
                        prefetch(&self.gh, h as usize);
                    }
                    if let Some(&h) = list.get(i + AHEAD) {
                        let p = self.gh[h as usize].path as usize;
                        prefetch(&self.inp.plinks, p * w);
                    }
                    let g = g as usize;
                    if self.gh[g].epoch == self.epoch {
                        continue;
                    }
                    let c = self.gh[g].n as f64;
                    let p = self.gh[g].path as usize;
                    take(&self.inp.plinks[p * w..p * w + w], lb, m, c, &mut self.work,
                         &mut self.wsum, &mut b);
                    self.fix(g, m, changed, lb as u32, &mut u);
                }
                (self.work[lb], self.wsum[lb]) = b;
                (self.lv[l].usage[slot], self.lv[l].usage_lo[slot]) = u;
            }
        }
        self.lv[l].lgroups = lgroups;
        for &lk in &self.lv[l].links {
            self.wsum[lk as usize] = 0.0;
        }
    }

    /// `fs-static`: each group gets the smallest `cap_l / flows on l` over its links.
    fn fill_static(&mut self, t: f64) {
        let w = self.inp.width;
        let mut all: Vec<u32> = Vec::new();
        for &l in &self.lorder {
            all.extend_from_slice(&self.lv[l as usize].groups);
            self.lv[l as usize].dirty = false;
        }
        for &g in &all {
            let p = self.gh[g as usize].path as usize;
            let c = self.gh[g as usize].n as f64;
            for &l in &self.inp.plinks[p * w..p * w + w] {
                if l != NONE {
                    self.wsum[l as usize] += c;
                }
            }
        }
        for &g in &all {
            let p = self.gh[g as usize].path as usize;
            let mut r = f64::INFINITY;
            for &l in &self.inp.plinks[p * w..p * w + w] {
                if l != NONE {
                    r = r.min(self.inp.cap[l as usize] / self.wsum[l as usize]);
                }
            }
            self.gh[g as usize].new = r;
        }
        for &g in &all {
            let p = self.gh[g as usize].path as usize;
            for &l in &self.inp.plinks[p * w..p * w + w] {
                if l != NONE {
                    self.wsum[l as usize] = 0.0;
                }
            }
        }
        for &g in &all {
            let g = g as usize;
            self.set_rate(g, self.gh[g].new, t);
        }
    }

    /// D-CLAS (Aalo §4, as 004 §IV-B compares it): K queues by coflow bytes sent, FIFO
    /// (strict by arrival rank) inside a queue, *weighted* sharing between queues.
    /// Pass 1: on every link each queue present gets `cap * w_q / sum(w present)`,
    /// `w_q = K - q`, and fills its coflows FIFO inside that share. Pass 2 (work
    /// conservation): what pass 1 left on each link is filled again in (queue, rank)
    /// order. Mirrors `schedulers/aalo.py` `Aalo.rates`.
    fn fill_aalo(&mut self, t: f64) {
        let nc = self.inp.c_rank.len() as u64;
        let kk = self.k as u64;
        let nl = self.inp.cap.len();
        let order = std::mem::take(&mut self.lorder);
        for l in 0..nl {
            self.qmask[l] = 0;
        }
        for &lv in &order {
            let q = (self.lv[lv as usize].key / nc).min(kk - 1) as usize;
            for &lk in &self.lv[lv as usize].links {
                self.qmask[lk as usize] |= 1 << q;
            }
        }
        for &lv in &order {
            let lvl = &mut self.lv[lv as usize];
            if lvl.dirty {
                lvl.dirty = false;
                lvl.memo[0].valid = false;
                lvl.memo[1].valid = false;
            }
        }
        self.epoch = self.epoch.wrapping_add(1);
        let ep = self.epoch;
        let wq = |q: usize, k: usize| (k - q) as f64;
        let mut hit = vec![false; self.lv.len()];
        // pass 1: each queue inside its weighted share of every link
        let mut i = 0;
        while i < order.len() {
            let q = (self.lv[order[i] as usize].key / nc).min(kk - 1) as usize;
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
            while i < order.len()
                && (self.lv[order[i] as usize].key / nc).min(kk - 1) as usize == q
            {
                let l = order[i] as usize;
                hit[l] = self.fill_memo(l, 0);
                i += 1;
            }
        }
        for l in 0..nl {
            self.used[l] = 0.0;
        }
        for &lv in &order {
            // each level's use, summed when its pass-1 fill was made (a replayed fill
            // uses what it used then)
            let lvl = &self.lv[lv as usize];
            for (&lk, &x) in lvl.links.iter().zip(&lvl.memo[0].usage) {
                self.used[lk as usize] += x;
            }
        }
        // pass 2: the leftovers, strict (queue, rank) order
        for l in 0..nl {
            let r = self.inp.cap[l] - self.used[l];
            self.resid[l] = if r < SNAP { 0.0 } else { r };
        }
        for &lv in &order {
            let h = self.fill_memo(lv as usize, 1);
            hit[lv as usize] &= h;
        }
        // new rates: pass 1 + pass 2 for the groups served now, 0 for the others; a
        // level whose two fills were replayed keeps its rates (one owner per level:
        // each owner's rate changes are applied in the same order as a full pass)
        for &lv in &order {
            let l = lv as usize;
            if hit[l] {
                continue;
            }
            let mut pos = std::mem::take(&mut self.lv[l].pos);
            let old = pos.clone();
            pos.clear();
            for &(g, r) in &self.lv[l].memo[0].served {
                self.rate1[g as usize] = r;
                self.gh[g as usize].epoch = ep;
                pos.push(g);
            }
            for &(g, r) in &self.lv[l].memo[1].served {
                let gu = g as usize;
                if self.gh[gu].epoch != ep {
                    self.gh[gu].epoch = ep;
                    self.rate1[gu] = 0.0;
                    pos.push(g);
                }
                self.rate1[gu] += r;
            }
            for &g in &old {
                let gu = g as usize;
                if self.gh[gu].epoch != ep && self.g_lpos[gu] != NONE {
                    self.set_rate(gu, 0.0, t);
                }
            }
            for &g in &pos {
                let gu = g as usize;
                self.set_rate(gu, self.rate1[gu], t);
            }
            self.lv[l].pos = pos;
        }
        self.lorder = order;
    }

    /// Fill level `l` in pass `k` within `self.resid` (reduced in place), or replay its
    /// last fill in that pass when its groups are the same and so is the capacity left
    /// on its bottleneck links (bit for bit), while every other link of the level
    /// still has more than the fill took of it (`Memo::need`). A progressive filling
    /// is decided by its bottlenecks: a link that stays slack by more than the 1e-9 tie
    /// rule is never picked, so the replay gives the rates a fill would (SimGrid's
    /// selective update, per level).
    fn fill_memo(&mut self, l: usize, k: usize) -> bool {
        let lvl = &self.lv[l];
        let m = &lvl.memo[k];
        if m.valid
            && lvl.links.iter().zip(&m.inp).zip(&m.need).all(|((&lk, &x), &need)| {
                let y = self.resid[lk as usize];
                if need.is_nan() { y.to_bits() == x.to_bits() } else { y > need }
            })
        {
            for (s, &lk) in lvl.links.iter().enumerate() {
                let y = self.resid[lk as usize];
                // a slack link keeps what it had left, less what the level takes
                self.resid[lk as usize] =
                    if y.to_bits() == m.inp[s].to_bits() { m.out[s] } else { y - (m.inp[s] - m.out[s]) };
            }
            return true;
        }
        let mut m = std::mem::take(&mut self.lv[l].memo[k]);
        // the same groups with nothing left on the same links: the same items, so
        // the kept set-up serves again (only the capacities differ, and groups that
        // went are taken out of it)
        let same = m.setup_ok
            && self.lv[l].links.iter().zip(&m.inp).all(|(&lk, &x)| (self.resid[lk as usize] > 0.0) == (x > 0.0));
        m.inp.clear();
        m.inp.extend(self.lv[l].links.iter().map(|&lk| self.resid[lk as usize]));
        let (pl, w, gh) = (&self.inp.plinks, self.inp.width, &self.gh);
        let path = |g: u32| gh[g as usize].path;
        let weight = |g: u32| gh[g as usize].n as f64;
        if same {
            self.filler.load(&mut m.setup);
        } else {
            let cand = self.served_groups(l);
            self.filler.prepare(pl, w, &cand, path, weight, &self.resid, &mut self.fill_out);
            self.filler.index_slots(&self.lv[l].links);
            for (j, &g) in self.filler.items().iter().enumerate() {
                self.g_sj[2 * g as usize + k] = j as u32;
            }
        }
        self.filler.solve(w, &mut self.resid, &mut self.fill_out);
        m.served.clear();
        for &g in self.filler.items() {
            if g != NONE {
                let r = self.fill_out[g as usize];
                if r > 0.0 {
                    m.served.push((g, r));
                }
            }
        }
        self.filler.keep(&mut m.setup);
        m.setup_ok = true;
        m.out.clear();
        m.out.extend(self.lv[l].links.iter().map(|&lk| self.resid[lk as usize]));
        // what each link may bring next time for the replay to hold: a bottleneck of
        // this fill (or a link with nothing left) the same capacity, bit for bit; a
        // slack link more than the level takes of it by a margin above the 1e-9
        // bottleneck tie rule and the snap to zero, so that it never becomes a
        // bottleneck (the fill is decided by its bottlenecks alone)
        m.need.clear();
        for &lk in &self.filler.bott_all {
            self.mark[lk as usize] = true;
        }
        for (s, &lk) in self.lv[l].links.iter().enumerate() {
            let x = m.inp[s];
            if self.mark[lk as usize] || !(x > 0.0) {
                m.need.push(f64::NAN);
            } else {
                let used = x - m.out[s];
                m.need.push(used + 2.0 * SNAP + 1e-8 * used + 1e-10 * self.lv[l].lw[s]);
            }
        }
        for &lk in &self.filler.bott_all {
            self.mark[lk as usize] = false;
        }
        if k == 0 {
            // what pass 1 takes of each link, for the capacity pass 2 starts from
            m.usage.clear();
            m.usage.extend(m.inp.iter().zip(&m.out).map(|(&x, &y)| x - y));
        }
        m.valid = true;
        self.lv[l].memo[k] = m;
        false
    }

    /// Level `l`'s groups whose last link (their receiver's) has capacity left: the
    /// others get nothing, and are not looked at.
    fn served_groups(&self, l: usize) -> Vec<u32> {
        let lvl = &self.lv[l];
        let mut out = Vec::new();
        for (slot, &lk) in lvl.links.iter().enumerate() {
            if self.is_last[lk as usize] && self.resid[lk as usize] > 0.0 {
                for &g in &lvl.lgroups[slot] {
                    let p = self.gh[g as usize].path as usize;
                    if self.path_last[p] == lk {
                        out.push(g);
                    }
                }
            }
        }
        out
    }
}

/// One step of a progressive filling for an item fixed at `m` per unit of its weight
/// `c` at bottleneck `lb`: each of its `links` (NONE: padding) gives up `m * c` of its
/// capacity (below `SNAP`: none left) and `c` of its weight. Every item fixed at `lb`
/// crosses it, so the caller keeps `lb`'s (capacity, weight) in `b`, in registers, and
/// stores it after the last item: the same operations in the same order as through
/// `cap` and `wsum`, without a store and a reload per item on one address.
#[inline(always)]
pub fn take(links: &[u32], lb: usize, m: f64, c: f64, cap: &mut [f64], wsum: &mut [f64],
            b: &mut (f64, f64)) {
    for &l in links {
        if l == NONE {
            continue;
        }
        let l = l as usize;
        if l == lb {
            b.0 -= m * c;
            if b.0 < SNAP {
                b.0 = 0.0;
            }
            b.1 -= c;
        } else {
            cap[l] -= m * c;
            if cap[l] < SNAP {
                cap[l] = 0.0;
            }
            wsum[l] -= c;
        }
    }
}

/// The next bottleneck of a progressive filling: from `heap` (per link, its fair share
/// cap / wsum when pushed, possibly stale) the link with the smallest share m, and every
/// link within the Python engine's 1e-9 tie rule of m, into `bott`. Returns m, or None
/// when no link with weight is left. Links with no weight left (<= 0.5) are dropped.
pub fn next_bottleneck(heap: &mut BinaryHeap<Reverse<Key>>, cap: &[f64], wsum: &[f64],
                       bott: &mut Vec<u32>) -> Option<f64> {
    while let Some(Reverse(Key(key, l))) = heap.pop() {
        let l = l as usize;
        if wsum[l] <= 0.5 {
            continue;
        }
        let m = cap[l] / wsum[l];
        if m > key {
            heap.push(Reverse(Key(m, l as u32)));
            continue;
        }
        let thr = m * (1.0 + 1e-9) + 1e-12;
        bott.clear();
        bott.push(l as u32);
        while let Some(&Reverse(Key(k2, l2))) = heap.peek() {
            if k2 > thr {
                break;
            }
            heap.pop();
            let l2 = l2 as usize;
            if wsum[l2] <= 0.5 {
                continue;
            }
            let a2 = cap[l2] / wsum[l2];
            if a2 <= thr {
                bott.push(l2 as u32);
            } else {
                heap.push(Reverse(Key(a2, l2 as u32)));
            }
        }
        return Some(m);
    }
    None
}

/// Max-min fair rate per unit of weight of every item (progressive filling, 004 "FS",
/// with the Python engine's 1e-9 bottleneck tie rule), in two steps: `prepare` (or
/// `load`, a `Setup` kept by `keep`) and `solve`. `plinks`: link ids per path, `width`
/// per row, NONE = padding; item `i` takes path `path(i)` with weight `weight(i)`;
/// `cap` is the capacity left per link, reduced in place by what the items take; the
/// rate of item `i` is written to `out[i]` (0 for an item crossing a link with
/// nothing left). The struct is the scratch space, sized to the links.
pub struct Filler {
    wsum: Vec<f64>,
    deg: Vec<u32>,
    start: Vec<u32>,
    cur: Vec<u32>,
    s: Setup,
    /// per item of the set-up, whether its rate is fixed
    fixed: Vec<bool>,
    lheap: BinaryHeap<Reverse<Key>>,
    bott: Vec<u32>,
    /// every link that was a bottleneck in the last fill
    pub bott_all: Vec<u32>,
}

/// A fill's set-up, kept between fills of the same items under other capacities: the
/// items filled with their links (`width` per item) and weights, the links they touch
/// with the weight and number of items on each, and per touched link (in that order)
/// the items crossing it, as indices into the items.
#[derive(Default)]
pub struct Setup {
    cand: Vec<u32>,
    links: Vec<u32>,
    w: Vec<f64>,
    touched: Vec<u32>,
    twsum: Vec<f64>,
    tdeg: Vec<u32>,
    adj: Vec<u32>,
    /// per slot of the level (`Level::links`), the link's index in `touched` or NONE
    tpos: Vec<u32>,
}

impl Setup {
    /// Take group `g` (item `j`, crossing the level's `slots`) out of the set-up:
    /// it is skipped, and its weight leaves its links. Nothing if `g` is not item `j`
    /// (not filled: it crosses a link with nothing left, or is not served). Weights
    /// are whole flows, so the sums are those a new set-up would make, and the other
    /// items keep their order.
    pub fn remove(&mut self, j: usize, g: u32, slots: impl Iterator<Item = usize>) {
        if self.cand.get(j) != Some(&g) {
            return;
        }
        self.cand[j] = NONE;
        for s in slots {
            let i = self.tpos[s];
            if i != NONE {
                self.twsum[i as usize] -= self.w[j];
            }
        }
    }
}

impl Filler {
    pub fn new(n_links: usize) -> Self {
        Filler {
            wsum: vec![0.0; n_links],
            deg: vec![0; n_links],
            start: vec![0; n_links],
            cur: vec![0; n_links],
            s: Setup::default(),
            fixed: Vec::new(),
            lheap: BinaryHeap::new(),
            bott: Vec::new(),
            bott_all: Vec::new(),
        }
    }

    /// Set up a fill of `items`: those that cross no link with nothing left (the
    /// others get 0 in `out`), the weight on each link they cross and, per link, the
    /// items crossing it.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare(
        &mut self,
        plinks: &[u32],
        width: usize,
        items: &[u32],
        path: impl Fn(u32) -> u32,
        weight: impl Fn(u32) -> f64,
        cap: &[f64],
        out: &mut [f64],
    ) {
        let w = width;
        let s = &mut self.s;
        s.cand.clear();
        s.links.clear();
        s.w.clear();
        s.touched.clear();
        for &i in items {
            let p = path(i) as usize;
            let ls = &plinks[p * w..p * w + w];
            if ls.iter().any(|&l| l != NONE && cap[l as usize] <= 0.0) {
                out[i as usize] = 0.0;
                continue;
            }
            let c = weight(i);
            for &l in ls {
                if l == NONE {
                    continue;
                }
                let l = l as usize;
                if self.deg[l] == 0 {
                    s.touched.push(l as u32);
                }
                self.wsum[l] += c;
                self.deg[l] += 1;
            }
            s.cand.push(i);
            s.links.extend_from_slice(ls);
            s.w.push(c);
        }
        let mut pos = 0u32;
        s.twsum.clear();
        s.tdeg.clear();
        for &l in &s.touched {
            let l = l as usize;
            self.start[l] = pos;
            self.cur[l] = pos;
            pos += self.deg[l];
            s.twsum.push(self.wsum[l]);
            s.tdeg.push(self.deg[l]);
        }
        s.adj.resize(pos as usize, 0);
        for (j, ls) in s.links.chunks_exact(w).enumerate() {
            for &l in ls {
                if l != NONE {
                    let cu = &mut self.cur[l as usize];
                    s.adj[*cu as usize] = j as u32;
                    *cu += 1;
                }
            }
        }
    }

    /// Note, per slot of the level (`links`: its links by slot), where the link is
    /// among the touched ones (for `Setup::remove`); after `prepare`.
    pub fn index_slots(&mut self, links: &[u32]) {
        for (i, &l) in self.s.touched.iter().enumerate() {
            self.cur[l as usize] = i as u32;
        }
        self.s.tpos.clear();
        for &l in links {
            self.s.tpos.push(if self.deg[l as usize] > 0 { self.cur[l as usize] } else { NONE });
        }
    }

    /// The items of the current set-up (NONE: taken out).
    pub fn items(&self) -> &[u32] {
        &self.s.cand
    }

    /// Take a kept set-up (`keep`) for `solve` under other capacities; these must have
    /// nothing left on the same links as when it was made (the same items excluded).
    pub fn load(&mut self, s: &mut Setup) {
        std::mem::swap(&mut self.s, s);
        let mut pos = 0u32;
        for (j, &l) in self.s.touched.iter().enumerate() {
            let l = l as usize;
            self.wsum[l] = self.s.twsum[j];
            self.deg[l] = self.s.tdeg[j];
            self.start[l] = pos;
            pos += self.s.tdeg[j];
        }
    }

    /// Give the set-up of the last fill to `s` (for `load`), taking `s`'s buffers.
    pub fn keep(&mut self, s: &mut Setup) {
        std::mem::swap(&mut self.s, s);
    }

    /// The progressive filling over the prepared items; clears the per-link weights.
    pub fn solve(&mut self, width: usize, cap: &mut [f64], out: &mut [f64]) {
        let w = width;
        let s = &self.s;
        self.bott_all.clear();
        if s.cand.is_empty() {
            return;
        }
        self.fixed.clear();
        self.fixed.extend(s.cand.iter().map(|&i| i == NONE));
        self.lheap.clear();
        for &l in &s.touched {
            let l = l as usize;
            self.lheap.push(Reverse(Key(cap[l] / self.wsum[l], l as u32)));
        }
        while let Some(m) = next_bottleneck(&mut self.lheap, cap, &self.wsum, &mut self.bott) {
            self.bott_all.extend_from_slice(&self.bott);
            for &lb in &self.bott {
                let lb = lb as usize;
                let st = self.start[lb] as usize;
                let mut b = (cap[lb], self.wsum[lb]);
                for &j in &s.adj[st..st + self.deg[lb] as usize] {
                    let j = j as usize;
                    if self.fixed[j] {
                        continue;
                    }
                    self.fixed[j] = true;
                    out[s.cand[j] as usize] = m;
                    take(&s.links[j * w..j * w + w], lb, m, s.w[j], cap, &mut self.wsum, &mut b);
                }
                (cap[lb], self.wsum[lb]) = b;
            }
        }
        for &l in &s.touched {
            self.wsum[l as usize] = 0.0;
            self.deg[l as usize] = 0;
        }
    }
}

//! Bandwidth sharing at an event: strict priority between levels, max-min fair
//! inside a level (004 §III-B), Aalo's weighted sharing between queues, and the
//! per-end static share of `fs-static`. A fill fixes every group of a level in a class
//! (`engine.rs`): the link it was fixed at, in a round of the progressive filling or
//! for having nothing left; the classes' rates are applied after all the fills.
//!
//! A level's fill is a function of its groups and of the capacity the levels above
//! left on its links; it is skipped when neither changed (bit for bit), and then the
//! level keeps its classes and leaves what it left before.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::count;
use crate::counts as n;
use crate::engine::{glinks, LinkList, RoundLog, Sim, GONE, NEW_GROUP};
use crate::model::*;
use crate::util::{prefetch, AHEAD};

impl Sim {
    /// New classes for the groups of every level whose groups or capacity changed.
    pub fn fill(&mut self, _t: f64) {
        if self.lorder_dirty {
            let lv = &self.lv;
            self.lorder.sort_unstable_by_key(|&l| lv[l as usize].key);
            self.lorder_dirty = false;
        }
        match self.pol {
            Policy::Aalo => self.fill_aalo(),
            Policy::FsStatic => self.fill_static(),
            _ => self.fill_strict(),
        }
    }

    /// The class of level `l`'s slot `slot` (made if none).
    #[inline]
    fn slot_class(&mut self, l: usize, slot: usize) -> u32 {
        let k = self.lv[l].lcls[slot];
        if k != NONE {
            return k;
        }
        let lk = self.lv[l].links[slot];
        let k = self.new_class(l, lk);
        self.lv[l].lcls[slot] = k;
        k
    }

    /// Replay level `l`'s last fill in pass `x` if it still holds: no group changed,
    /// every link that was a bottleneck or had nothing left has the same capacity in
    /// `self.resid`, bit for bit, and every other link more than its `need`; then the
    /// level leaves on each link what it left (less the same use where the capacity
    /// differs) in `self.resid`, and keeps its classes. A progressive filling is decided
    /// by its bottlenecks: a link whose capacity exceeds what the level takes of it by
    /// more than the 1e-9 tie rule's margin has a larger share than every round's at
    /// every round, so it is never picked (SimGrid's selective update, per level).
    #[inline(never)]
    fn replay(&mut self, l: usize, x: usize) -> bool {
        let lvl = &self.lv[l];
        let m = &lvl.memo[x];
        if lvl.dirty
            || !lvl.links.iter().zip(m.inp.iter().zip(&m.need)).all(|(&lk, (&v, &need))| {
                let y = self.resid[lk as usize];
                if need.is_nan() { y.to_bits() == v.to_bits() } else { y > need }
            })
        {
            return false;
        }
        for (s, &lk) in lvl.links.iter().enumerate() {
            let y = self.resid[lk as usize];
            self.resid[lk as usize] =
                if y.to_bits() == m.inp[s].to_bits() { m.out[s] } else { y - (m.inp[s] - m.out[s]) };
        }
        true
    }

    /// Strict priority between levels: each level is filled within what the levels
    /// above left, and only when its groups or what it was left changed.
    #[inline(never)]
    fn fill_strict(&mut self) {
        self.resid.copy_from_slice(&self.inp.cap);
        for i in 0..self.lorder.len() {
            let l = self.lorder[i] as usize;
            if self.replay(l, 0) {
                count!(n::FILL_SKIPS, 1);
            } else {
                self.fill_level(l, 0, true);
            }
            self.lv[l].dirty = false;
        }
    }

    /// Max-min fair rates of level `l`'s groups (progressive filling, 004 "FS", with
    /// the Python engine's 1e-9 bottleneck tie rule) within `self.resid`, reduced to
    /// what the level leaves; the fill is kept in the level's `memo[x]`. Groups crossing a link with
    /// nothing left get 0. With `classes`, each group is fixed in the class of the link
    /// it was fixed at (strict levels); otherwise (aalo's two passes) the link and rate
    /// are noted per group for pass `x` (`note_pass`), and `fill_aalo` makes the classes.
    #[inline(never)]
    fn fill_level(&mut self, l: usize, x: usize, classes: bool) {
        self.epoch = self.epoch.wrapping_add(1);
        count!(n::FILLS, 1);
        let w = self.width;
        let jb = self.jbits;
        let ep = self.epoch;
        let nslot = self.lv[l].links.len();
        // strict levels: the last fill's rounds are replayed as far as they still hold
        let resume = classes && self.mark_changed(l, ep);
        if classes && !resume {
            count!(n::FILL_VISITS, self.lv[l].groups.len());
            count!(n::SCRATCH, 1);
            count!(n::SCRATCH_G, self.lv[l].groups.len());
        }
        if resume {
            count!(n::RES_ROUNDS, self.lv[l].rlog.rounds.len());
            count!(n::RES_G, self.lv[l].groups.len());
        }
        // and, when no link went to nothing left or back, the groups at rate 0 are
        // those of the last fill (their weights followed in `zsub`) and the groups made
        // since that cross a link with nothing left: they keep their classes, and their
        // weights are taken off their links at once
        let zkept = resume && self.lv[l].memo[0].zok;
        if resume {
            self.zero_made(l, ep, zkept);
        }
        // why the rate-0 groups are fixed again, if they are (counts)
        let zp_why = if resume && self.lv[l].memo[0].zok {
            n::ZP_LINK
        } else if resume {
            n::ZP_NONE
        } else if self.lv[l].rlog.ok {
            n::ZP_FLIP
        } else {
            n::ZP_NEW
        };
        // aalo: the same groups with nothing left on the same links make the same items
        // (less the groups that went, skipped, and with the weights kept by `resize`)
        let same = !classes && self.lv[l].memo[x].setup_ok && {
            let lvl = &self.lv[l];
            lvl.links.iter().zip(&lvl.memo[x].inp)
                .all(|(&lk, &y)| (self.resid[lk as usize] > 0.0) == (y > 0.0))
        };
        for slot in 0..nslot {
            let lk = self.lv[l].links[slot] as usize;
            self.work[lk] = self.resid[lk];
            self.wsum[lk] = if zkept {
                self.lv[l].lw[slot] - self.lv[l].memo[0].zsub[slot]
            } else if classes {
                self.lv[l].lw[slot]
            } else {
                0.0
            };
            self.lv[l].memo[x].inp[slot] = self.resid[lk];
            if zkept && !(self.resid[lk] > 0.0) {
                self.bmark[lk] = ep;
            }
        }
        let mut fixed = std::mem::take(&mut self.lv[l].memo[x].fixed);
        fixed.clear();
        let mut log = std::mem::take(&mut self.lv[l].rlog);
        // the per-link group lists, out of the level while it is filled
        let lgroups = std::mem::take(&mut self.lv[l].lgroups);
        // aalo: the per-link lists of the fill's items (`aalo_items`)
        let mut items = std::mem::take(&mut self.lv[l].memo[x].items);
        // strict levels: the groups not fixed yet; the filling stops when none is left, for
        // every link still in the heap then has no weight (on a fat-tree most links are
        // never a bottleneck, and popping them was 8 % of stream's time on k=16)
        let mut left = if classes { self.lv[l].groups.len() } else { usize::MAX };
        if zkept {
            // the rate-0 groups keep their classes (their weights are off `wsum` already)
            left -= self.lv[l].memo[0].zn;
        } else if classes {
            // ids above NEW_GROUP, below NONE (a level never filled)
            self.zpass = if self.zpass >= NONE - 1 { NEW_GROUP + 1 } else { self.zpass + 1 };
            self.lv[l].zid = self.zpass;
            // groups crossing a link with nothing left: rate 0, in the class of that link
            // (the one they were in if it is still such a link, else the last on their
            // path: a receiver's flows stay in one class, and so in one bundle)
            for slot in 0..nslot {
                let lk = self.lv[l].links[slot] as usize;
                if self.work[lk] > 0.0 {
                    continue;
                }
                self.bmark[lk] = ep;
                let list = &lgroups[slot].e;
                for (i, &e) in list.iter().enumerate() {
                    if let Some(&h) = list.get(i + AHEAD) {
                        prefetch(&self.gh, (h >> jb) as usize);
                    }
                    let g = (e >> jb) as usize;
                    if e == GONE || self.gh[g].ep == ep {
                        continue;
                    }
                    count!(n::ZERO_VISITS, 1);
                    let c = self.gh[g].w;
                    let mut at = NONE;
                    for &l2 in glinks(&self.gh, &self.inp.plinks, w, g) {
                        if l2 != NONE {
                            self.wsum[l2 as usize] -= c;
                            if !(self.work[l2 as usize] > 0.0) {
                                at = l2;
                            }
                        }
                    }
                    let kg = self.gh[g].cls;
                    if kg != NONE {
                        let lg = self.cl_link[kg as usize] as usize;
                        if self.cl_lvl[kg as usize] as usize == l && !(self.work[lg] > 0.0) {
                            at = lg as u32;
                        }
                    }
                    let k = self.slot_class(l, self.lv[l].lslot[at as usize] as usize);
                    self.touch_class(k, 0.0);
                    self.assign(g, k);
                    self.gh[g].seen = self.zpass;
                    left -= 1;
                }
            }
            let lvl = &mut self.lv[l];
            for slot in 0..nslot {
                let lk = lvl.links[slot] as usize;
                lvl.memo[0].zsub[slot] = lvl.lw[slot] - self.wsum[lk];
            }
            lvl.memo[0].zok = true;
            lvl.memo[0].zn = lvl.groups.len() - left;
            count!(zp_why, lvl.memo[0].zn);
        } else if same {
            let lvl = &self.lv[l];
            for (slot, &lk) in lvl.links.iter().enumerate() {
                let lk = lk as usize;
                self.wsum[lk] = lvl.memo[x].iw[slot];
                if !(self.work[lk] > 0.0) {
                    self.bmark[lk] = ep;
                }
            }
        } else {
            self.aalo_items(l, x, &lgroups, &mut items, ep);
            let lvl = &mut self.lv[l];
            let m = &mut lvl.memo[x];
            m.setup_ep = ep;
            m.iw.clear();
            m.iw.extend(lvl.links.iter().map(|&lk| self.wsum[lk as usize]));
            m.setup_ok = true;
        }
        if resume {
            left -= self.replay_rounds(l, &mut log, ep);
        } else {
            log.rounds.clear();
            log.links.clear();
            log.groups.clear();
        }
        self.lheap.clear();
        for &lk in &self.lv[l].links {
            let lk = lk as usize;
            if self.wsum[lk] > 0.5 {
                self.lheap.push(Reverse(Key(self.work[lk] / self.wsum[lk], lk as u32)));
            }
        }
        let zl = self.lv[l].zid;
        let mut bott = std::mem::take(&mut self.bott);
        while left > 0 {
            let Some(m) = next_bottleneck(&mut self.lheap, &self.work, &self.wsum, &mut bott)
            else {
                break;
            };
            // a group crossing several links of this round is fixed at the one it was
            // fixed at before, if any (same rate either way; its class stays)
            self.round = self.round.wrapping_add(1);
            let rnd = self.round;
            if bott.len() > 1 {
                for &lb in &bott {
                    self.mark[lb as usize] = rnd;
                }
            }
            for &lb in &bott {
                let lb = lb as usize;
                self.mark[lb] = 0;
                self.bmark[lb] = ep;
                let slot = self.lv[l].lslot[lb] as usize;
                let k = if classes {
                    let k = self.slot_class(l, slot);
                    self.touch_class(k, m);
                    k
                } else {
                    NONE
                };
                let mut b = (self.work[lb], self.wsum[lb]);
                let list = if classes { &lgroups[slot].e } else { &items[slot] };
                for (i, &e) in list.iter().enumerate() {
                    if let Some(&h) = list.get(i + AHEAD) {
                        prefetch(&self.gh, (h >> jb) as usize);
                    }
                    let g = (e >> jb) as usize;
                    if e == GONE || self.gh[g].ep == ep {
                        continue;
                    }
                    if zkept && self.gh[g].seen == zl {
                        continue; // kept at rate 0
                    }
                    if !classes && (self.gh[g].lvl as usize != l || self.gh[g].lpos == NONE) {
                        continue; // a kept set-up's item that went
                    }
                    if bott.len() > 1 && classes {
                        let kg = self.gh[g].cls;
                        if kg != NONE && self.mark[self.cl_link[kg as usize] as usize] == rnd
                            && self.cl_lvl[kg as usize] as usize == l
                        {
                            continue;
                        }
                    }
                    let c = self.gh[g].w;
                    take(glinks(&self.gh, &self.inp.plinks, w, g), lb, m, c, &mut self.work,
                         &mut self.wsum, &mut b);
                    if classes {
                        self.assign(g, k);
                        left -= 1;
                        log.groups.push(g as u32);
                        if resume {
                            count!(n::FILL_VISITS, 1);
                        }
                    } else {
                        self.gh[g].ep = ep;
                        fixed.push((g as u32, lb as u32, m));
                    }
                }
                (self.work[lb], self.wsum[lb]) = b;
                if classes {
                    log.links.push((lb as u32, log.groups.len() as u32));
                }
            }
            if classes {
                log.rounds.push((m, log.links.len() as u32));
            }
        }
        self.bott = bott;
        count!(n::KEYV + (self.lv[l].key.min(3) as usize), self.lv[l].groups.len());
        if classes {
            log.ok = true;
            let lvl = &mut self.lv[l];
            // groups made since the last fill and not at rate 0 are ordinary now
            for &g in &lvl.made {
                let h = &mut self.gh[g as usize];
                if h.seen == NEW_GROUP && h.lvl as usize == l && h.lpos != NONE {
                    h.seen = 0;
                }
            }
            lvl.made.clear();
            for &lk in &lvl.chg {
                lvl.lchg[lk as usize] = false;
            }
            lvl.chg.clear();
        }
        self.lv[l].rlog = log;
        self.lv[l].lgroups = lgroups;
        self.lv[l].memo[x].items = items;
        let lvl = &mut self.lv[l];
        let m = &mut lvl.memo[x];
        m.fixed = fixed;
        for slot in 0..nslot {
            let lk = lvl.links[slot] as usize;
            let (y, o) = (m.inp[slot], self.work[lk]);
            m.out[slot] = o;
            self.resid[lk] = o;
            self.wsum[lk] = 0.0;
            // what the link may bring next time for the fill to be replayed
            m.need[slot] = if self.bmark[lk] == ep || !(y > 0.0) {
                f64::NAN
            } else {
                let used = y - o;
                used + 2.0 * SNAP + 1e-8 * used + 1e-10 * lvl.lw[slot]
            };
        }
    }

    /// Strict level `l`'s groups made since its last fill, when the fill resumes the
    /// last one: with `zkept`, those crossing a link with nothing left (in
    /// `self.resid`) are at rate 0 with the level's others (`Level::zid`), in the class
    /// of the last such link on their path, their weights added to `zsub` (the other
    /// groups at rate 0 keep theirs, followed by `resize`); the others mark their links
    /// changed (`dmark`), which `resize` left to this.
    fn zero_made(&mut self, l: usize, ep: u32, zkept: bool) {
        let w = self.width;
        let made = std::mem::take(&mut self.lv[l].made);
        for &g in &made {
            let g = g as usize;
            let h = self.gh[g];
            if h.lpos == NONE || h.lvl as usize != l || h.seen != NEW_GROUP {
                continue; // gone, or seen already (an id made twice)
            }
            let links = glinks(&self.gh, &self.inp.plinks, w, g);
            let zero = links.iter().rev().find(|&&l2| l2 != NONE && !(self.resid[l2 as usize] > 0.0));
            let Some(&at) = zero.filter(|_| zkept) else {
                for &l2 in links {
                    if l2 != NONE {
                        self.dmark[l2 as usize] = ep;
                    }
                }
                self.gh[g].seen = 0;
                continue;
            };
            count!(n::ZERO_VISITS, 1);
            let lvl = &mut self.lv[l];
            for &l2 in links {
                if l2 != NONE {
                    lvl.memo[0].zsub[lvl.lslot[l2 as usize] as usize] += h.w;
                }
            }
            lvl.memo[0].zn += 1;
            let k = self.slot_class(l, self.lv[l].lslot[at as usize] as usize);
            self.touch_class(k, 0.0);
            self.assign(g, k);
            self.gh[g].seen = self.lv[l].zid;
        }
        // all seen: the fill's end has none left to look at
        let mut made = made;
        made.clear();
        self.lv[l].made = made;
    }

    /// Mark with `ep` (in `dmark`) the links whose input to strict level `l`'s fill
    /// differs from its last fill's: groups came, went or changed on them, or the
    /// capacity the levels above left changed. False when the last fill cannot be
    /// resumed: none kept, or a link went from some capacity left to none or back (the
    /// groups it fixes at rate 0 change).
    fn mark_changed(&mut self, l: usize, ep: u32) -> bool {
        let lvl = &self.lv[l];
        if !lvl.rlog.ok {
            return false;
        }
        for (slot, &lk) in lvl.links.iter().enumerate() {
            let (y, v) = (self.resid[lk as usize], lvl.memo[0].inp[slot]);
            if y.to_bits() != v.to_bits() {
                if !v.is_nan() && (y > 0.0) != (v > 0.0) {
                    return false;
                }
                self.dmark[lk as usize] = ep;
            }
        }
        for &lk in &lvl.chg {
            self.dmark[lk as usize] = ep;
        }
        true
    }

    /// Replay the rounds of a strict level's last fill (`log`) while they still hold,
    /// after the rate-0 groups are fixed: a round holds when none of its bottleneck
    /// links changed (`dmark` = `ep`) and every changed link with weight keeps a share
    /// above the round's tie threshold; its links and groups were then the same in
    /// every earlier round, so the progressive filling would fix the same groups at the
    /// same share (SimGrid's incremental max-min, per level). The replay applies each
    /// kept round's takes in their order (so `work` and `wsum` are what the full fill
    /// would have, bit for bit) and keeps the groups' classes; `log` is cut at the first
    /// round that does not hold, where the filling goes on.
    /// Returns how many groups it fixed.
    fn replay_rounds(&mut self, l: usize, log: &mut RoundLog, ep: u32) -> usize {
        let w = self.width;
        let mut dheap = std::mem::take(&mut self.dheap);
        dheap.clear();
        for &lk in self.lv[l].links.iter() {
            let lk = lk as usize;
            if self.dmark[lk] == ep && self.wsum[lk] > 0.5 {
                dheap.push(Reverse(Key(self.work[lk] / self.wsum[lk], lk as u32)));
            }
        }
        let (mut li, mut gi, mut r, mut nfix) = (0usize, 0usize, 0usize, 0usize);
        'rounds: while r < log.rounds.len() {
            let (m, lend) = log.rounds[r];
            let lend = lend as usize;
            if log.links[li..lend].iter().any(|&(lb, _)| self.dmark[lb as usize] == ep) {
                break;
            }
            let thr = m * (1.0 + 1e-9) + 1e-12;
            while let Some(&Reverse(Key(k, l2))) = dheap.peek() {
                if k > thr {
                    break;
                }
                dheap.pop();
                let l2u = l2 as usize;
                if self.wsum[l2u] <= 0.5 {
                    continue;
                }
                let a = self.work[l2u] / self.wsum[l2u];
                dheap.push(Reverse(Key(a, l2)));
                if a <= thr {
                    break 'rounds;
                }
            }
            for j in li..lend {
                let (lb, gend) = log.links[j];
                let (lb, gend) = (lb as usize, gend as usize);
                self.bmark[lb] = ep;
                let mut b = (self.work[lb], self.wsum[lb]);
                for i in gi..gend {
                    if let Some(&h) = log.groups.get(i + AHEAD) {
                        prefetch(&self.gh, h as usize);
                    }
                    let g = log.groups[i] as usize;
                    nfix += (self.gh[g].ep != ep) as usize;
                    self.gh[g].ep = ep;
                    let c = self.gh[g].w;
                    take(glinks(&self.gh, &self.inp.plinks, w, g), lb, m, c, &mut self.work,
                         &mut self.wsum, &mut b);
                }
                count!(n::FILL_REPLAYED, gend - gi);
                (self.work[lb], self.wsum[lb]) = b;
                gi = gend;
            }
            li = lend;
            r += 1;
        }
        count!(n::RES_KEPT, r);
        log.rounds.truncate(r);
        log.links.truncate(li);
        log.groups.truncate(gi);
        self.dheap = dheap;
        nfix
    }

    /// Aalo: the items of level `l`'s fill (epoch `ep`): the groups whose last link
    /// (their receiver's) has capacity left, found from that link's list, and of those
    /// the ones with capacity on every link: their flows make the per-link weights,
    /// and `items` holds them per link slot. The others get nothing and are not looked at, so a fill costs the groups
    /// it can serve, not the level's (FIFO inside a queue leaves most of a late
    /// coflow's receivers full).
    #[inline(never)]
    fn aalo_items(&mut self, l: usize, x: usize, lgroups: &[LinkList], items: &mut Vec<Vec<u32>>,
                  ep: u32) {
        let w = self.width;
        let jb = self.jbits;
        let lvl = &self.lv[l];
        let nslot = lvl.links.len();
        if items.len() < nslot {
            items.resize(nslot, Vec::new());
        }
        for list in &mut items[..nslot] {
            list.clear();
        }
        for &lk in &lvl.links {
            if !(self.work[lk as usize] > 0.0) {
                self.bmark[lk as usize] = ep;
            }
        }
        for (slot, &lk) in lvl.links.iter().enumerate() {
            let lk = lk as usize;
            if !self.is_last[lk] || !(self.work[lk] > 0.0) {
                continue;
            }
            let list = &lgroups[slot].e;
            for (i, &e) in list.iter().enumerate() {
                if let Some(&h) = list.get(i + AHEAD) {
                    prefetch(&self.gh, (h >> jb) as usize);
                }
                if e == GONE {
                    continue;
                }
                let g = (e >> jb) as usize;
                // its path's last link (the receiver's), from its own links
                let links = glinks(&self.gh, &self.inp.plinks, w, g);
                if links.iter().rev().find(|&&l2| l2 != NONE) != Some(&(lk as u32)) {
                    continue;
                }
                if links.iter().all(|&l2| l2 == NONE || self.work[l2 as usize] > 0.0) {
                    count!(n::FILL_VISITS, 1);
                    let c = self.gh[g].w;
                    for &l2 in links {
                        if l2 != NONE {
                            self.wsum[l2 as usize] += c;
                            items[lvl.lslot[l2 as usize] as usize].push((g << jb) as u32);
                        }
                    }
                    self.gh[g].set[x] = ep;
                }
            }
        }
    }

    /// `fs-static`: each group gets the smallest `cap_l / flows on l` over its links, in
    /// the class of the first link giving it. Only the groups crossing a link whose
    /// flows changed (or made since) are looked at: the others keep their link, and
    /// their class's rate is that link's share, set here when it changes.
    fn fill_static(&mut self) {
        let w = self.width;
        for i in 0..self.lorder.len() {
            let l = self.lorder[i] as usize;
            if !self.lv[l].dirty {
                continue;
            }
            self.lv[l].dirty = false;
            self.epoch = self.epoch.wrapping_add(1);
            let ep = self.epoch;
            for slot in 0..self.lv[l].links.len() {
                let lk = self.lv[l].links[slot] as usize;
                self.wsum[lk] = self.lv[l].lw[slot];
            }
            let chg = std::mem::take(&mut self.lv[l].chg);
            let mut look = std::mem::take(&mut self.lv[l].fresh);
            for &lk in &chg {
                let lvl = &mut self.lv[l];
                lvl.lchg[lk as usize] = false;
                let slot = lvl.lslot[lk as usize];
                if slot == NONE {
                    continue;
                }
                let k = lvl.lcls[slot as usize];
                if k != NONE {
                    self.touch_class(k, self.inp.cap[lk as usize] / self.wsum[lk as usize]);
                }
                let list = &self.lv[l].lgroups[slot as usize].e;
                look.extend(list.iter().filter(|&&e| e != GONE).map(|&e| e >> self.jbits));
            }
            for &g in &look {
                let g = g as usize;
                let h = self.gh[g];
                if h.ep == ep || h.lpos == NONE || h.lvl as usize != l {
                    continue;
                }
                let mut r = f64::INFINITY;
                let mut best = NONE;
                for &lk in glinks(&self.gh, &self.inp.plinks, w, g) {
                    if lk != NONE {
                        let v = self.inp.cap[lk as usize] / self.wsum[lk as usize];
                        if v < r {
                            r = v;
                            best = lk;
                        }
                    }
                }
                let slot = self.lv[l].lslot[best as usize] as usize;
                let k = self.slot_class(l, slot);
                self.touch_class(k, r);
                self.assign(g, k);
            }
            look.clear();
            self.lv[l].fresh = look;
            let mut chg = chg;
            chg.clear();
            self.lv[l].chg = chg;
            for slot in 0..self.lv[l].links.len() {
                let lk = self.lv[l].links[slot] as usize;
                self.wsum[lk] = 0.0;
            }
        }
    }

    /// D-CLAS (Aalo §4, as 004 §IV-B compares it): K queues by coflow bytes sent, FIFO
    /// (strict by arrival rank) inside a queue, *weighted* sharing between queues.
    /// Pass 1: on every link each queue present gets `cap * w_q / sum(w present)`,
    /// `w_q = K - q`, and fills its coflows FIFO inside that share. Pass 2 (work
    /// conservation): what pass 1 left on each link is filled again in (queue, rank)
    /// order. A group's rate is the sum of its two; its class is the pair of links it was
    /// fixed at. Mirrors `schedulers/aalo.py` `Aalo.rates`.
    #[inline(never)]
    fn fill_aalo(&mut self) {
        let nc = self.inp.c_rank.len() as u64;
        let kk = self.k as u64;
        let nl = self.inp.cap.len();
        let order = std::mem::take(&mut self.lorder);
        let queue = |s: &Self, l: u32| (s.lv[l as usize].key / nc).min(kk - 1) as usize;
        for l in 0..nl {
            self.qmask[l] = 0;
        }
        for &lv in &order {
            let q = queue(self, lv);
            for &lk in &self.lv[lv as usize].links {
                self.qmask[lk as usize] |= 1 << q;
            }
        }
        let wq = |q: usize, k: usize| (k - q) as f64;
        let mut hit = vec![true; self.lv.len()];
        // pass 1: each queue inside its weighted share of every link
        let mut i = 0;
        while i < order.len() {
            let q = queue(self, order[i]);
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
            while i < order.len() && queue(self, order[i]) == q {
                let l = order[i] as usize;
                if !self.replay(l, 0) {
                    self.fill_level(l, 0, false);
                    hit[l] = false;
                }
                i += 1;
            }
        }
        for l in 0..nl {
            self.used[l] = 0.0;
        }
        for &lv in &order {
            let lvl = &self.lv[lv as usize];
            let m = &lvl.memo[0];
            for (slot, &lk) in lvl.links.iter().enumerate() {
                self.used[lk as usize] += m.inp[slot] - m.out[slot];
            }
        }
        // pass 2: the leftovers, strict (queue, rank) order
        for l in 0..nl {
            let r = self.inp.cap[l] - self.used[l];
            self.resid[l] = if r < SNAP { 0.0 } else { r };
        }
        for &lv in &order {
            let l = lv as usize;
            if !self.replay(l, 1) {
                self.fill_level(l, 1, false);
                hit[l] = false;
            }
        }
        // classes: a level whose two fills were skipped keeps its classes
        for &lv in &order {
            let l = lv as usize;
            self.lv[l].dirty = false;
            if hit[l] {
                continue;
            }
            self.aalo_classes(l);
            // classes no group of the level is in any more go once their bundles left
            let ep = self.epoch;
            let (cl_ep, dead) = (&self.cl_ep, &mut self.cl_dead);
            self.lv[l].pair.retain(|_, &mut k| {
                let keep = cl_ep[k as usize] == ep;
                if !keep {
                    dead.push(k);
                }
                keep
            });
        }
        self.lorder = order;
    }

    /// Aalo: the class of each group of level `l` whose class may change (made since,
    /// served by either pass now, or in a class with a rate before): the pair of links it
    /// was fixed at in the two passes, at the sum of the two rates; the groups neither
    /// pass serves go to the level's class at rate 0. A group in that class and served
    /// by neither pass again is not looked at.
    #[inline(never)]
    fn aalo_classes(&mut self, l: usize) {
        // pass 2's links and rates noted (`seen` = se), then each group classed once
        // (`seen` = done): pass 1's groups, pass 2's others, then the groups served
        // before or made since that neither pass serves now
        self.seen = self.seen.wrapping_add(2);
        let (se, done) = (self.seen.wrapping_sub(1), self.seen);
        let fixed1 = std::mem::take(&mut self.lv[l].memo[1].fixed);
        for (i, &(g, lk, r)) in fixed1.iter().enumerate() {
            if let Some(e) = fixed1.get(i + AHEAD) {
                prefetch(&self.gh, e.0 as usize);
            }
            self.gh[g as usize].seen = se;
            self.g_p2[g as usize] = (lk, r);
        }
        let fixed0 = std::mem::take(&mut self.lv[l].memo[0].fixed);
        let mut served = Vec::with_capacity(fixed0.len().max(fixed1.len()));
        for (i, &(g, l1, r1)) in fixed0.iter().enumerate() {
            if let Some(e) = fixed0.get(i + AHEAD) {
                prefetch(&self.gh, e.0 as usize);
            }
            let h = self.gh[g as usize];
            let (l2, r2) = if h.seen == se { self.g_p2[g as usize] } else { (NONE, 0.0) };
            self.gh[g as usize].seen = done;
            served.push(g);
            self.aalo_class(l, g as usize, l1, r1, l2, r2);
        }
        for (i, &(g, l2, r2)) in fixed1.iter().enumerate() {
            if let Some(e) = fixed1.get(i + AHEAD) {
                prefetch(&self.gh, e.0 as usize);
            }
            if self.gh[g as usize].seen == se {
                self.gh[g as usize].seen = done;
                served.push(g);
                self.aalo_class(l, g as usize, NONE, 0.0, l2, r2);
            }
        }
        self.lv[l].memo[0].fixed = fixed0;
        self.lv[l].memo[1].fixed = fixed1;
        let mut before = std::mem::take(&mut self.lv[l].served);
        before.append(&mut self.lv[l].fresh);
        for (i, &g) in before.iter().enumerate() {
            if let Some(&h) = before.get(i + AHEAD) {
                prefetch(&self.gh, h as usize);
            }
            let h = self.gh[g as usize];
            if h.seen == done || h.lpos == NONE || h.lvl as usize != l {
                continue;
            }
            self.gh[g as usize].seen = done;
            self.aalo_class(l, g as usize, NONE, 0.0, NONE, 0.0);
        }
        before.clear();
        self.lv[l].served = served;
        self.lv[l].fresh = before;
    }

    /// Aalo: group `g` of level `l`, fixed at link `l1` at rate `r1` in pass 1 and at
    /// `l2`, `r2` in pass 2 (NONE, 0: not served), goes to the class of that pair at the
    /// sum of the rates, or to the level's class at rate 0 if neither pass serves it.
    #[inline(always)]
    fn aalo_class(&mut self, l: usize, g: usize, l1: u32, r1: f64, l2: u32, r2: f64) {
        let k = if l1 == NONE && l2 == NONE {
            let z = self.lv[l].zcls;
            if z != NONE {
                z
            } else {
                let z = self.new_class(l, NONE);
                self.lv[l].zcls = z;
                z
            }
        } else {
            let key = (l1 as u64) << 32 | l2 as u64;
            let kg = self.gh[g].cls;
            // most groups keep their pair: their class, without the level's map
            if kg != NONE && self.cl_pair[kg as usize] == key && self.cl_lvl[kg as usize] as usize == l {
                kg
            } else {
                match self.lv[l].pair.get(&key) {
                    Some(&k) => k,
                    None => {
                        let k = self.new_class(l, l1);
                        self.cl_pair[k as usize] = key;
                        self.lv[l].pair.insert(key, k);
                        k
                    }
                }
            }
        };
        self.touch_class(k, r1 + r2);
        self.assign(g, k);
    }
}

/// One step of a progressive filling for an item fixed at `m` per unit of its weight
/// `c` at bottleneck `lb`: each of its `links` (NONE: padding) gives up `m * c` of its
/// capacity (below `SNAP`: none left) and `c` of its weight. Every item fixed at `lb`
/// crosses it, so the caller keeps `lb`'s (capacity, weight) in `b`, in registers, and
/// stores it after the last item.
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

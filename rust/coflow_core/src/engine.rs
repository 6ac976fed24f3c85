//! The event loop of paper 004 §IV-B on any fabric given as a link table: strict
//! priority between levels, max-min fair sharing inside a level (004 §III-B), the
//! priority rules of `stream`, `aalo`, `baraat` (see `rules.rs`) and `fs` /
//! `fs-static`. It mirrors `streamband.sim.coflow.engine.Simulation` with the Python
//! scheduler classes (same events, same tolerances); tests compare them to 1e-9.
//!
//! What an event recomputes (after SimGrid's lazy max-min, surf/maxmin: only the
//! modified part of the system is solved, and only actions whose rate changed get a
//! new completion date):
//! - flows that cross the same links at the same level always get the same rate, so
//!   they form one *group* (level, path) with one service counter kept lazily
//!   (service at `t0` plus rate since) and a heap of its flows' thresholds;
//! - a level is filled again only when its groups changed or the capacity left by the
//!   levels above changed on one of its links (`fill.rs`);
//! - a group whose rate changed gets a new completion time (the next event is the
//!   smallest, and the groups that may complete a flow at it are those whose top flow
//!   is within tolerance by then; both are read through the times' minima per block,
//!   `BlockMin`); an owner (the entity whose priority its flows inherit) gets its rate
//!   changed by the difference, and its bytes are kept lazily the same way.
//! - a level is a slot holding its groups; groups are found by (slot, path), so a
//!   slot can change key as a whole (`relabel`): when most of a level's flows change
//!   queue together (`stream`'s starvation raise and the demotion when the hold ends
//!   move hundreds of units at one event), the slot changes key and only the units
//!   that do not follow move, flow by flow (`rules.rs` `relabel_levels`).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use crate::fill::Filler;
use crate::model::*;

/// At most this many priority queues in `relabel_levels`'s per-level rows (`stream`'s K
/// is 2..8, 004 §III-D, checked by its constructor and the CLI).
pub const MAX_QUEUES: usize = 16;

/// Ask the CPU to bring `v[i]`'s cache line near (a hint, nothing if `i` is out of
/// range): loops over groups in list order prefetch the groups a few steps ahead,
/// since the groups of a list lie anywhere in the per-group arrays.
#[inline(always)]
pub fn prefetch<T>(v: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = v.get(i) {
        // SAFETY: a prefetch reads nothing and cannot fault; `x` is a valid reference
        unsafe {
            std::arch::x86_64::_mm_prefetch(x as *const T as *const i8, std::arch::x86_64::_MM_HINT_T0)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, i);
}

/// How many places ahead in a list of groups `prefetch` asks for.
pub const AHEAD: usize = 8;

/// A multiplicative hasher for the u64 keys of the group and level maps.
#[derive(Default)]
pub struct IdHasher(u64);
impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
pub type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// A group's heap entry: threshold in the group's service, flow, flow generation
/// (an entry whose generation is not the flow's current one is stale).
#[derive(Clone, Copy, PartialEq)]
pub struct HE {
    pub thr: f64,
    pub f: u32,
    pub gen: u32,
}
impl Eq for HE {}
impl PartialOrd for HE {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for HE {
    fn cmp(&self, o: &Self) -> Ordering {
        self.thr.total_cmp(&o.thr).then(self.f.cmp(&o.f))
    }
}

/// One priority level: its groups, and per link it crosses the groups crossing it,
/// their flows and what they use (kept as groups come, go and change rate, so that a
/// fill needs no set-up pass and lower levels see what changed).
pub struct Level {
    pub key: u64,
    pub groups: Vec<u32>,
    /// groups added, removed or resized since the last fill
    pub dirty: bool,
    /// slot of each link in this level (NONE if no group of the level crosses it)
    pub lslot: Vec<u32>,
    pub links: Vec<u32>,
    pub lgroups: Vec<Vec<u32>>,
    pub lw: Vec<f64>,
    /// rate x flows summed over the slot's groups, with its rounding error (usage_lo)
    pub usage: Vec<f64>,
    pub usage_lo: Vec<f64>,
    /// aalo: the last fill of this level in each pass (`fill.rs`), and the groups it
    /// served then, in the order their rates were set
    pub memo: [Memo; 2],
    pub pos: Vec<u32>,
}

/// A level's fill as a function of its input: the capacity left on each of its links
/// before (`inp`, by slot) and after (`out`) the fill, and the groups it served with
/// their rates, in the fill's order. Valid while the level's groups do not change.
#[derive(Default)]
pub struct Memo {
    pub valid: bool,
    pub inp: Vec<f64>,
    pub out: Vec<f64>,
    pub served: Vec<(u32, f64)>,
    /// per slot, the least capacity above which the fill stays the same (NaN: only
    /// the same capacity, bit for bit; `fill_memo`)
    pub need: Vec<f64>,
    /// the fill's set-up
    pub setup: crate::fill::Setup,
    /// the set-up is for the level's groups as they are: none came or changed its
    /// flows since, and none went but those taken out of it (`Setup::remove`)
    pub setup_ok: bool,
    /// pass 1 (aalo): what the fill took of each of the level's links (by slot,
    /// `inp - out`), summed by `fill_aalo` into the capacity pass 2 starts from
    pub usage: Vec<f64>,
}

impl Level {
    /// An empty stand-in while a level is borrowed out of the list.
    pub fn placeholder() -> Self {
        Level { key: 0, groups: Vec::new(), dirty: false, lslot: Vec::new(), links: Vec::new(),
                lgroups: Vec::new(), lw: Vec::new(), usage: Vec::new(), usage_lo: Vec::new(),
                memo: Default::default(), pos: Vec::new() }
    }

    fn new(key: u64, n_links: usize) -> Self {
        Level { key, groups: Vec::new(), dirty: true, lslot: vec![NONE; n_links],
                links: Vec::new(), lgroups: Vec::new(), lw: Vec::new(), usage: Vec::new(),
                usage_lo: Vec::new(), memo: Default::default(), pos: Vec::new() }
    }

    /// Add `x` to the slot's usage (compensated: the error stays one rounding).
    #[inline]
    pub fn add_usage(&mut self, slot: usize, x: f64) {
        add_compensated(&mut self.usage[slot], &mut self.usage_lo[slot], x);
    }

    #[inline]
    pub fn used(&self, slot: usize) -> f64 {
        self.usage[slot] + self.usage_lo[slot]
    }
}

/// Add `x` to the compensated sum `a` + `lo` (TwoSum: the error stays one rounding).
#[inline(always)]
pub fn add_compensated(a: &mut f64, lo: &mut f64, x: f64) {
    let s = *a + x;
    let bp = s - *a;
    *lo += (*a - (s - bp)) + (x - bp);
    *a = s;
}

/// The smallest of `xs` (times, never NaN), inf if empty: eight running minima, so
/// that the pass over every group's time is vectorized (the minimum is exact in any
/// order).
fn min_time(xs: &[f64]) -> f64 {
    let mut m = [f64::INFINITY; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for j in 0..8 {
            m[j] = if c[j] < m[j] { c[j] } else { m[j] };
        }
    }
    let mut best = chunks.remainder().iter().fold(f64::INFINITY, |a, &x| if x < a { x } else { a });
    for x in m {
        if x < best {
            best = x;
        }
    }
    best
}

/// Times kept with their minimum per block of 64: a block is scanned again only when
/// one of its times was set since the last read, so finding the next completion (or
/// the groups that may be due) costs the blocks re-timed plus one pass over the
/// blocks' minima, not one pass over every group (aalo on FB2010 re-times under 2 % of
/// its groups at an event).
#[derive(Default)]
pub struct BlockMin {
    v: Vec<f64>,
    blk: Vec<f64>,
    dirty: Vec<bool>,
    list: Vec<u32>,
}

impl BlockMin {
    const B: usize = 64;

    pub fn push(&mut self, x: f64) {
        self.v.push(x);
        if self.v.len() > self.blk.len() * Self::B {
            self.blk.push(f64::INFINITY);
            self.dirty.push(false);
        }
        self.touch(self.v.len() - 1);
    }

    #[inline]
    fn touch(&mut self, i: usize) {
        let b = i / Self::B;
        if !self.dirty[b] {
            self.dirty[b] = true;
            self.list.push(b as u32);
        }
    }

    #[inline]
    pub fn set(&mut self, i: usize, x: f64) {
        if self.v[i] != x {
            self.v[i] = x;
            self.touch(i);
        }
    }

    /// The indices of block `b`.
    #[inline]
    fn span(&self, b: usize) -> std::ops::Range<usize> {
        b * Self::B..((b + 1) * Self::B).min(self.v.len())
    }

    /// Recompute the minima of the blocks set since the last read.
    fn refresh(&mut self) {
        for &b in &self.list {
            let b = b as usize;
            self.blk[b] = min_time(&self.v[self.span(b)]);
            self.dirty[b] = false;
        }
        self.list.clear();
    }

    /// The smallest time, inf if none.
    pub fn min(&mut self) -> f64 {
        self.refresh();
        min_time(&self.blk)
    }

    /// Every index whose time is at most `h`, in increasing order, into `out`.
    pub fn at_most(&mut self, h: f64, out: &mut Vec<u32>) {
        self.refresh();
        for (b, &m) in self.blk.iter().enumerate() {
            if m <= h {
                for i in self.span(b) {
                    if self.v[i] <= h {
                        out.push(i as u32);
                    }
                }
            }
        }
    }
}

/// A group's live heap top: threshold (in the group's service), tolerance and flow;
/// threshold inf when the heap holds no live flow, NaN when not known (the top left).
#[derive(Clone, Copy)]
pub struct Top {
    pub thr: f64,
    pub tol: f64,
    pub f: u32,
}

impl Top {
    pub const UNKNOWN: Top = Top { thr: f64::NAN, tol: 0.0, f: NONE };
}

/// A group's hot fields: rate, rate at this fill, path, flows, last fill, level.
#[derive(Clone, Copy, Default)]
pub struct GHot {
    pub rate: f64,
    pub new: f64,
    pub path: u32,
    pub n: u32,
    pub epoch: u32,
    pub lvl: u32,
}

/// A receiver's bytes over time, as breakpoints (t, bytes, rate after t), kept for
/// one information delay (Information-Relay, `rules.rs`).
#[derive(Default, Clone)]
pub struct Hist {
    pub t: std::collections::VecDeque<f64>,
    pub x: std::collections::VecDeque<f64>,
    pub r: std::collections::VecDeque<f64>,
}

impl Hist {
    pub fn push(&mut self, t: f64, x: f64, r: f64, keep_from: f64) {
        if self.t.back() == Some(&t) {
            *self.x.back_mut().unwrap() = x;
            *self.r.back_mut().unwrap() = r;
        } else {
            self.t.push_back(t);
            self.x.push_back(x);
            self.r.push_back(r);
        }
        while self.t.len() > 1 && self.t[1] <= keep_from {
            self.t.pop_front();
            self.x.pop_front();
            self.r.pop_front();
        }
    }
    /// Bytes at `tau` (0 before the first breakpoint: nothing was received).
    pub fn at(&self, tau: f64) -> f64 {
        for i in (0..self.t.len()).rev() {
            if self.t[i] <= tau {
                return self.x[i] + self.r[i] * (tau - self.t[i]);
            }
        }
        0.0
    }
}

pub struct Sim {
    pub inp: Input,
    pub par: Params,
    pub pol: Policy,
    pub k: usize,
    pub n_paths: usize,
    // flows
    pub f_grp: Vec<u32>,
    pub f_gen: Vec<u32>,
    pub f_thr: Vec<f64>,
    pub f_opos: Vec<u32>,
    pub finish: Vec<f64>,
    pub events: u64,
    // owners: the unit (stream), the coflow (aalo, baraat) or one (fs, fs-static)
    pub o_key: Vec<u64>,
    pub o_flows: Vec<Vec<u32>>,
    pub o_rate: Vec<f64>,
    pub o_npos: Vec<u32>,
    pub o_x0: Vec<f64>,
    pub o_pend: Vec<f64>,
    pub o_dirty: Vec<bool>,
    pub dirty_o: Vec<u32>,
    pub o_tx: Vec<f64>,
    pub act_o: Vec<u32>,
    pub o_pos: Vec<u32>,
    // groups (level, path)
    /// group by (level slot, path)
    pub gmap: IdMap<u32>,
    /// per group, the fields the fill and the re-rating touch together
    pub gh: Vec<GHot>,
    /// per group, the Filler's output (aalo)
    pub fill_out: Vec<f64>,
    pub g_svc0: Vec<f64>,
    pub g_t0: Vec<f64>,
    pub g_heap: Vec<BinaryHeap<Reverse<HE>>>,
    /// per group, its heap's live top (`Top`): a re-time after a rate change reads
    /// this, not the heap and its flows
    pub g_top: Vec<Top>,
    pub g_own: Vec<Owners>,
    pub g_lpos: Vec<u32>,
    pub free_g: Vec<u32>,
    /// groups whose completion time must be recomputed before the times are read
    pub g_rt: Vec<bool>,
    pub rt_list: Vec<u32>,
    /// per group: exact time its top flow completes, and the earliest time it is
    /// within the completion tolerance (inf when idle or not served)
    pub g_ta: BlockMin,
    pub g_tb: BlockMin,
    // levels
    pub lv: Vec<Level>,
    pub lmap: IdMap<u32>,
    pub lorder: Vec<u32>,
    pub lorder_dirty: bool,
    pub free_l: Vec<u32>,
    /// per link, the smallest level key whose use of it changed since the last fill
    /// (the levels after it see a different capacity there); MAX if none
    pub chg_key: Vec<u64>,
    pub chg_list: Vec<u32>,
    /// per group, its position in the group list of each link of its path
    pub g_adjpos: Vec<u32>,
    /// the current fill (a group's `epoch` is the fill that fixed its rate last)
    pub epoch: u32,
    // release groups, coflows
    pub g_flows_ptr: Vec<usize>,
    pub g_flows: Vec<u32>,
    pub rg_left: Vec<u32>,
    pub rg_deps_left: Vec<u32>,
    pub rg_bytes: Vec<f64>,
    pub c_left: Vec<u32>,
    pub c_units_ptr: Vec<usize>,
    pub c_units: Vec<u32>,
    pub c_started: Vec<bool>,
    pub act_c: Vec<u32>,
    pub c_pos: Vec<u32>,
    // stream state (per unit / coflow / release group)
    pub q: Vec<usize>,
    pub n_seen: Vec<f64>,
    pub n_fin: Vec<f64>,
    pub c_rate: Vec<f64>,
    pub c_x0: Vec<f64>,
    pub c_tx: Vec<f64>,
    pub cp: Vec<f64>,
    pub starve_since: Vec<f64>,
    pub hold_until: Vec<f64>,
    pub starving: Vec<u32>,
    // Information-Relay (decentralized)
    pub delay: f64,
    pub u_fast: Vec<bool>,
    pub view_u: Vec<f64>,
    pub contact: Vec<u32>,
    pub u_hist: Vec<Hist>,
    pub c_hist: Vec<Hist>,
    pub f_pair: Vec<u32>,
    pub p_hub: Vec<u32>,
    pub p_unit: Vec<u32>,
    pub p_view: Vec<f64>,
    pub p_contact: Vec<u32>,
    pub p_mark: Vec<bool>,
    pub u_pairs_ptr: Vec<usize>,
    pub u_pairs: Vec<u32>,
    pub h_units_ptr: Vec<usize>,
    pub h_units: Vec<u32>,
    // scratch for the fills
    pub resid: Vec<f64>,
    pub wsum: Vec<f64>,
    pub filler: Filler,
    /// scratch flag per link, false between uses
    pub mark: Vec<bool>,
    pub qmask: Vec<u32>,
    pub used: Vec<f64>,
    pub rate1: Vec<f64>,
    /// aalo: per group and pass, its index among the items of its level's set-up
    pub g_sj: Vec<u32>,
    /// per link, whether it ends some path (a receiver's link); per path, its last link
    pub is_last: Vec<bool>,
    pub path_last: Vec<u32>,
    pub work: Vec<f64>,
    pub lheap: BinaryHeap<Reverse<Key>>,
    pub bott: Vec<u32>,
    /// aalo / baraat: per coflow, the planned time its bytes reach its next threshold
    /// (inf if none), the coflows with one planned, and Baraat's heavy marks
    pub x_at: Vec<f64>,
    pub x_list: Vec<u32>,
    pub x_mark: Vec<bool>,
    /// scratch of `relabel_levels`: flows per (level slot, queue), each unit's slot
    pub rl_rows: Vec<[u64; MAX_QUEUES]>,
    pub rl_slot: Vec<u32>,
}

impl Sim {
    pub fn new(inp: Input, par: Params) -> Self {
        let pol = par.policy;
        let nf = inp.f_size.len();
        let nu = inp.u_cof.len();
        let nc = inp.c_rank.len();
        let ng = inp.g_arrival.len();
        let nl = inp.cap.len();
        let n_paths = inp.plinks.len() / inp.width.max(1);
        let n_owner = match pol {
            Policy::Fs | Policy::FsStatic | Policy::Varys => 1,
            Policy::Stream => nu,
            Policy::Aalo | Policy::Baraat => nc,
        };
        let (g_flows_ptr, g_flows) = csr(ng, &inp.f_group);
        let (c_units_ptr, c_units) = csr(nc, &inp.u_cof);
        let mut rg_left = vec![0u32; ng];
        let mut rg_bytes = vec![0.0; ng];
        let mut c_left = vec![0u32; nc];
        for f in 0..nf {
            rg_left[inp.f_group[f] as usize] += 1;
            rg_bytes[inp.f_group[f] as usize] += inp.f_size[f];
            c_left[inp.f_cof[f] as usize] += 1;
        }
        let k = par.tau.len();
        let delay = if par.relay == Relay::Decentralized { par.info_delay_s } else { 0.0 };
        let mut sim = Sim {
            pol,
            k,
            n_paths,
            f_grp: vec![NONE; nf],
            f_gen: vec![0; nf],
            f_thr: vec![0.0; nf],
            f_opos: vec![NONE; nf],
            finish: vec![f64::NAN; nf],
            events: 0,
            o_key: vec![u64::MAX; n_owner],
            o_flows: vec![Vec::new(); n_owner],
            o_rate: vec![0.0; n_owner],
            o_npos: vec![0; n_owner],
            o_x0: vec![0.0; n_owner],
            o_pend: vec![0.0; n_owner],
            o_dirty: vec![false; n_owner],
            dirty_o: Vec::new(),
            o_tx: vec![0.0; n_owner],
            act_o: Vec::new(),
            o_pos: vec![NONE; n_owner],
            gmap: IdMap::default(),
            gh: Vec::new(),
            fill_out: Vec::new(),
            g_svc0: Vec::new(),
            g_t0: Vec::new(),
            g_heap: Vec::new(),
            g_top: Vec::new(),
            g_own: Vec::new(),
            g_lpos: Vec::new(),
            free_g: Vec::new(),
            g_rt: Vec::new(),
            rt_list: Vec::new(),
            g_ta: BlockMin::default(),
            g_tb: BlockMin::default(),
            lv: Vec::new(),
            lmap: IdMap::default(),
            lorder: Vec::new(),
            lorder_dirty: false,
            free_l: Vec::new(),
            chg_key: vec![u64::MAX; nl],
            chg_list: Vec::new(),
            g_adjpos: Vec::new(),
            epoch: 0,
            g_flows_ptr,
            g_flows,
            rg_left,
            rg_deps_left: inp.g_deps.clone(),
            rg_bytes,
            c_left,
            c_units_ptr,
            c_units,
            c_started: vec![false; nc],
            act_c: Vec::new(),
            c_pos: vec![NONE; nc],
            q: vec![0; nu],
            n_seen: vec![0.0; nu],
            n_fin: vec![0.0; nu],
            c_rate: vec![0.0; nc],
            c_x0: vec![0.0; nc],
            c_tx: vec![0.0; nc],
            cp: vec![0.0; ng],
            starve_since: vec![f64::NAN; nu],
            hold_until: vec![f64::NEG_INFINITY; nu],
            starving: Vec::new(),
            delay,
            u_fast: vec![true; nu],
            view_u: vec![0.0; nu],
            contact: Vec::new(),
            u_hist: Vec::new(),
            c_hist: Vec::new(),
            f_pair: Vec::new(),
            p_hub: Vec::new(),
            p_unit: Vec::new(),
            p_view: Vec::new(),
            p_contact: Vec::new(),
            p_mark: Vec::new(),
            u_pairs_ptr: Vec::new(),
            u_pairs: Vec::new(),
            h_units_ptr: Vec::new(),
            h_units: Vec::new(),
            resid: vec![0.0; nl],
            wsum: vec![0.0; nl],
            filler: Filler::new(nl),
            mark: vec![false; nl],
            qmask: vec![0; nl],
            used: vec![0.0; nl],
            rate1: Vec::new(),
            g_sj: Vec::new(),
            is_last: vec![false; nl],
            path_last: Vec::new(),
            work: vec![0.0; nl],
            lheap: BinaryHeap::new(),
            bott: Vec::new(),
            x_at: vec![f64::INFINITY; n_owner],
            x_list: Vec::new(),
            x_mark: vec![false; n_owner],
            rl_rows: Vec::new(),
            rl_slot: Vec::new(),
            par,
            inp,
        };
        let w = sim.inp.width;
        for p in 0..n_paths {
            let last = sim.inp.plinks[p * w..p * w + w].iter().rev().copied()
                .find(|&l| l != NONE).unwrap_or(NONE);
            sim.path_last.push(last);
            if last != NONE {
                sim.is_last[last as usize] = true;
            }
        }
        if pol == Policy::Stream && sim.par.relay == Relay::Decentralized {
            sim.build_relay();
        }
        sim
    }

    #[inline]
    pub fn owner(&self, f: usize) -> usize {
        match self.pol {
            Policy::Fs | Policy::FsStatic | Policy::Varys => 0,
            Policy::Stream => self.inp.f_unit[f] as usize,
            Policy::Aalo | Policy::Baraat => self.inp.f_cof[f] as usize,
        }
    }

    #[inline]
    pub fn tol(&self, f: u32) -> f64 {
        TOL_REL * self.inp.f_size[f as usize] + TOL_BYTES
    }

    /// Service of group `g` at `t`.
    #[inline]
    pub fn svc(&self, g: usize, t: f64) -> f64 {
        self.g_svc0[g] + self.gh[g].rate * (t - self.g_t0[g])
    }

    /// Owner `o`'s bytes at `t` (units: received; coflows: sent).
    #[inline]
    pub fn o_bytes(&self, o: usize, t: f64) -> f64 {
        self.o_x0[o] + self.o_rate[o] * (t - self.o_tx[o])
    }

    #[inline]
    pub fn c_bytes(&self, c: usize, t: f64) -> f64 {
        self.c_x0[c] + self.c_rate[c] * (t - self.c_tx[c])
    }

    // -- owners' lazy bytes ------------------------------------------------------
    /// Change owner `o`'s rate by `d` at the current event (applied by
    /// `flush_owners`, once per owner, before any rate or byte count is read).
    #[inline]
    fn owner_rate_add(&mut self, o: usize, d: f64) {
        if d == 0.0 {
            return;
        }
        self.o_pend[o] += d;
        if !self.o_dirty[o] {
            self.o_dirty[o] = true;
            self.dirty_o.push(o as u32);
        }
    }

    /// Apply the owners' rate changes of the event at `t` (bytes synced first at the
    /// old rates; for `stream` the coflows' too, and the relay's breakpoints).
    pub fn flush_owners(&mut self, t: f64) {
        let list = std::mem::take(&mut self.dirty_o);
        for &o in &list {
            let o = o as usize;
            let d = self.o_pend[o];
            self.o_pend[o] = 0.0;
            self.o_dirty[o] = false;
            self.o_x0[o] = self.o_bytes(o, t);
            self.o_tx[o] = t;
            self.o_rate[o] += d;
            if self.o_npos[o] == 0 {
                self.o_rate[o] = 0.0;
            }
            if self.pol == Policy::Stream {
                let c = self.inp.u_cof[o] as usize;
                self.c_x0[c] = self.c_bytes(c, t);
                self.c_tx[c] = t;
                self.c_rate[c] += d;
                if self.delay > 0.0 {
                    self.record(o, t);
                }
            }
        }
        self.dirty_o = list;
        self.dirty_o.clear();
    }

    /// Keep the breakpoint of unit `u` and its coflow at `t` (decentralized relay).
    fn record(&mut self, u: usize, t: f64) {
        let keep = t - self.delay;
        let (x, r) = (self.o_bytes(u, t), self.o_rate[u]);
        if let Some(h) = self.u_hist.get_mut(u) {
            h.push(t, x, r, keep);
        }
        let c = self.inp.u_cof[u] as usize;
        let (x, r) = (self.c_bytes(c, t), self.c_rate[c]);
        if let Some(h) = self.c_hist.get_mut(c) {
            h.push(t, x, r, keep);
        }
    }

    // -- levels and groups ------------------------------------------------------
    fn level_of(&mut self, key: u64) -> usize {
        if let Some(&l) = self.lmap.get(&key) {
            return l as usize;
        }
        let l = match self.free_l.pop() {
            Some(l) => {
                let lv = &mut self.lv[l as usize];
                lv.key = key;
                lv.dirty = true;
                l as usize
            }
            None => {
                self.lv.push(Level::new(key, self.inp.cap.len()));
                self.lv.len() - 1
            }
        };
        self.lmap.insert(key, l as u32);
        self.lorder.push(l as u32);
        self.lorder_dirty = true;
        l
    }

    /// Note that level `key`'s use of link `lk` changed.
    #[inline]
    pub fn mark_link(&mut self, lk: u32, key: u64) {
        let c = &mut self.chg_key[lk as usize];
        if *c == u64::MAX {
            self.chg_list.push(lk);
        }
        if key < *c {
            *c = key;
        }
    }

    fn drop_level(&mut self, l: usize) {
        let key = self.lv[l].key;
        self.lmap.remove(&key);
        let links = std::mem::take(&mut self.lv[l].links);
        for &lk in &links {
            self.mark_link(lk, key); // what it used is free for the levels below
            self.lv[l].lslot[lk as usize] = NONE;
        }
        let lvl = &mut self.lv[l];
        lvl.links = links;
        lvl.links.clear();
        lvl.lgroups.clear();
        lvl.lw.clear();
        lvl.usage.clear();
        lvl.usage_lo.clear();
        lvl.groups.clear();
        lvl.pos.clear();
        let pos = self.lorder.iter().position(|&x| x as usize == l).unwrap();
        self.lorder.remove(pos);
        self.free_l.push(l as u32);
    }

    /// Give level slot `l` the key `key`, which no level holds: its groups keep their
    /// flows and service; the fill sees the level at its new place (the levels after
    /// the higher of the two keys on its links are filled again).
    pub fn relabel(&mut self, l: usize, key: u64) {
        let old = self.lv[l].key;
        if self.lmap.get(&old) == Some(&(l as u32)) {
            self.lmap.remove(&old);
        }
        self.lmap.insert(key, l as u32);
        self.lv[l].key = key;
        self.lv[l].dirty = true;
        let m = old.min(key);
        for i in 0..self.lv[l].links.len() {
            let lk = self.lv[l].links[i];
            self.mark_link(lk, m);
        }
        self.lorder_dirty = true;
    }

    /// Enter group `g` in its level's per-link lists.
    fn attach(&mut self, g: usize) {
        let w = self.inp.width;
        let p = self.gh[g].path as usize;
        let lvl = &mut self.lv[self.gh[g].lvl as usize];
        lvl.memo[0].setup_ok = false;
        lvl.memo[1].setup_ok = false;
        for j in 0..w {
            let lk = self.inp.plinks[p * w + j];
            if lk == NONE {
                continue;
            }
            let mut slot = lvl.lslot[lk as usize];
            if slot == NONE {
                slot = lvl.links.len() as u32;
                lvl.lslot[lk as usize] = slot;
                lvl.links.push(lk);
                lvl.lgroups.push(Vec::new());
                lvl.lw.push(0.0);
                lvl.usage.push(0.0);
                lvl.usage_lo.push(0.0);
            }
            let list = &mut lvl.lgroups[slot as usize];
            self.g_adjpos[g * w + j] = list.len() as u32;
            list.push(g as u32);
        }
    }

    /// Remove group `g` (no flows left) from its level's per-link lists.
    fn detach(&mut self, g: usize) {
        let w = self.inp.width;
        let p = self.gh[g].path as usize;
        let l = self.gh[g].lvl as usize;
        let key = self.lv[l].key;
        for k in 0..2 {
            let lvl = &mut self.lv[l];
            if lvl.memo[k].setup_ok {
                let slots = self.inp.plinks[p * w..p * w + w]
                    .iter()
                    .filter(|&&lk| lk != NONE)
                    .map(|&lk| lvl.lslot[lk as usize] as usize);
                lvl.memo[k].setup.remove(self.g_sj[2 * g + k] as usize, g as u32, slots);
            }
        }
        for j in 0..w {
            let lk = self.inp.plinks[p * w + j];
            if lk == NONE {
                continue;
            }
            let lvl = &mut self.lv[l];
            let slot = lvl.lslot[lk as usize] as usize;
            let pos = self.g_adjpos[g * w + j] as usize;
            let list = &mut lvl.lgroups[slot];
            list.swap_remove(pos);
            if pos < list.len() {
                let g2 = list[pos] as usize;
                let p2 = self.gh[g2].path as usize;
                let j2 = (0..w).find(|&j2| self.inp.plinks[p2 * w + j2] == lk).unwrap();
                self.g_adjpos[g2 * w + j2] = pos as u32;
            }
            if list.is_empty() {
                // no group of this level crosses the link any more (the slots move)
                lvl.memo[0].setup_ok = false;
                lvl.memo[1].setup_ok = false;
                let last = lvl.links.len() - 1;
                lvl.links.swap_remove(slot);
                lvl.lgroups.swap_remove(slot);
                lvl.lw.swap_remove(slot);
                lvl.usage.swap_remove(slot);
                lvl.usage_lo.swap_remove(slot);
                if slot < last {
                    let moved = lvl.links[slot];
                    lvl.lslot[moved as usize] = slot as u32;
                }
                lvl.lslot[lk as usize] = NONE;
                self.mark_link(lk, key);
            }
        }
    }

    /// Group `g` gains `d` flows (+1 or -1): its level's per-link flows and use follow.
    fn resize(&mut self, g: usize, d: f64) {
        let w = self.inp.width;
        let p = self.gh[g].path as usize;
        let l = self.gh[g].lvl as usize;
        let r = self.gh[g].rate;
        let key = self.lv[l].key;
        self.lv[l].dirty = true;
        for j in 0..w {
            let lk = self.inp.plinks[p * w + j];
            if lk == NONE {
                continue;
            }
            let lvl = &mut self.lv[l];
            let slot = lvl.lslot[lk as usize] as usize;
            lvl.lw[slot] += d;
            if r > 0.0 {
                lvl.add_usage(slot, r * d);
                self.mark_link(lk, key);
            }
        }
        if self.gh[g].n > 0 {
            // (a group left with no flows is dropped next, and taken out of the
            // set-ups then)
            self.lv[l].memo[0].setup_ok = false;
            self.lv[l].memo[1].setup_ok = false;
        }
    }

    /// Group (level `key`, `path`), made if absent. Groups are found by their level's
    /// slot, not its key, so that a level can change key (`relabel`) as a whole.
    fn group_of(&mut self, key: u64, path: u32) -> usize {
        let l = self.level_of(key);
        let gk = l as u64 * self.n_paths as u64 + path as u64;
        if let Some(&g) = self.gmap.get(&gk) {
            return g as usize;
        }
        let g = match self.free_g.pop() {
            Some(g) => g as usize,
            None => {
                let g = self.gh.len();
                self.gh.push(GHot::default());
                self.fill_out.push(0.0);
                self.g_svc0.push(0.0);
                self.g_t0.push(0.0);
                self.g_heap.push(BinaryHeap::new());
                self.g_top.push(Top::UNKNOWN);
                self.g_own.push(Owners::default());
                self.g_lpos.push(NONE);
                self.g_rt.push(false);
                self.rate1.push(0.0);
                self.g_sj.extend([NONE, NONE]);
                self.g_ta.push(f64::INFINITY);
                self.g_tb.push(f64::INFINITY);
                self.g_adjpos.extend(std::iter::repeat_n(NONE, self.inp.width));
                g
            }
        };
        self.gh[g].path = path;
        self.gh[g].n = 0;
        self.gh[g].rate = 0.0;
        self.gh[g].new = 0.0;
        self.g_svc0[g] = 0.0;
        self.g_t0[g] = 0.0;
        self.g_heap[g].clear();
        self.g_top[g] = Top::UNKNOWN;
        self.g_own[g].clear();
        self.gh[g].lvl = l as u32;
        let lvl = &mut self.lv[l];
        self.g_lpos[g] = lvl.groups.len() as u32;
        lvl.groups.push(g as u32);
        lvl.dirty = true;
        self.gmap.insert(gk, g as u32);
        self.attach(g);
        g
    }

    fn drop_group(&mut self, g: usize) {
        let gk = self.gh[g].lvl as u64 * self.n_paths as u64 + self.gh[g].path as u64;
        self.gmap.remove(&gk);
        self.detach(g);
        let l = self.gh[g].lvl as usize;
        {
            let lvl = &mut self.lv[l];
            let i = self.g_lpos[g] as usize;
            let last = *lvl.groups.last().unwrap();
            lvl.groups.swap_remove(i);
            if i < lvl.groups.len() {
                self.g_lpos[last as usize] = i as u32;
            }
            lvl.dirty = true;
        }
        self.g_lpos[g] = NONE;
        self.g_heap[g].clear();
        self.gh[g].rate = 0.0;
        self.g_ta.set(g, f64::INFINITY);
        self.g_tb.set(g, f64::INFINITY);
        self.free_g.push(g as u32);
        if self.lv[l].groups.is_empty() {
            self.drop_level(l);
        }
    }

    /// The group's next completion (key a) and the earliest time its top flow is
    /// within the completion tolerance (key b), after dropping stale heap entries;
    /// inf for both when the group is not served.
    pub fn retime(&mut self, g: usize) {
        if !(self.gh[g].rate > 0.0) {
            // not served: no completion time (stale entries wait for the next re-time)
            self.g_ta.set(g, f64::INFINITY);
            self.g_tb.set(g, f64::INFINITY);
            return;
        }
        if self.g_top[g].thr.is_nan() {
            let heap = &mut self.g_heap[g];
            while let Some(&Reverse(e)) = heap.peek() {
                if self.f_grp[e.f as usize] == g as u32 && self.f_gen[e.f as usize] == e.gen {
                    break;
                }
                heap.pop();
            }
            self.g_top[g] = match self.g_heap[g].peek() {
                Some(&Reverse(e)) => Top { thr: e.thr, tol: self.tol(e.f), f: e.f },
                None => Top { thr: f64::INFINITY, tol: 0.0, f: NONE },
            };
        }
        let r = self.gh[g].rate;
        let Top { thr, tol, .. } = self.g_top[g];
        let (a, b) = if thr < f64::INFINITY {
            let tc = self.g_t0[g] + (thr - self.g_svc0[g]) / r;
            (tc, tc - tol / r)
        } else {
            (f64::INFINITY, f64::INFINITY)
        };
        self.g_ta.set(g, a);
        self.g_tb.set(g, b);
    }

    pub fn mark_retime(&mut self, g: usize) {
        if !self.g_rt[g] {
            self.g_rt[g] = true;
            self.rt_list.push(g as u32);
        }
    }

    /// Re-time every marked group (before the times are read).
    pub fn flush_retime(&mut self) {
        let list = std::mem::take(&mut self.rt_list);
        for (i, &g) in list.iter().enumerate() {
            if let Some(&h) = list.get(i + AHEAD) {
                self.prefetch_group(h as usize);
            }
            let g = g as usize;
            self.g_rt[g] = false;
            if self.g_lpos[g] != NONE {
                self.retime(g);
            }
        }
        self.rt_list = list;
        self.rt_list.clear();
    }

    /// Prefetch what `set_rate` and `retime` read of group `g`.
    #[inline(always)]
    pub fn prefetch_group(&self, g: usize) {
        prefetch(&self.gh, g);
        prefetch(&self.g_own, g);
        prefetch(&self.g_svc0, g);
        prefetch(&self.g_t0, g);
        prefetch(&self.g_top, g);
    }

    /// Set group `g`'s rate at `t` (service synced, owners' rates moved by the change).
    pub fn set_rate(&mut self, g: usize, r: f64, t: f64) {
        let old = self.gh[g].rate;
        if r == old {
            return;
        }
        self.g_svc0[g] = self.svc(g, t);
        self.g_t0[g] = t;
        self.gh[g].rate = r;
        for i in 0..self.g_own[g].len() {
            let (o, c) = self.g_own[g].get(i);
            let o = o as usize;
            if old <= 0.0 && r > 0.0 {
                self.o_npos[o] += c;
            } else if old > 0.0 && r <= 0.0 {
                self.o_npos[o] -= c;
            }
            self.owner_rate_add(o, (r - old) * c as f64);
        }
        self.mark_retime(g);
    }

    /// Put flow `f` (of owner `o`, level `key`) in its group with `rem` bytes left.
    fn join(&mut self, f: usize, o: usize, key: u64, rem: f64, t: f64) {
        let g = self.group_of(key, self.inp.f_path[f]);
        let s = self.svc(g, t);
        self.f_grp[f] = g as u32;
        self.f_thr[f] = s + rem;
        self.g_heap[g].push(Reverse(HE { thr: s + rem, f: f as u32, gen: self.f_gen[f] }));
        let top = &mut self.g_top[g];
        if !top.thr.is_nan() && (s + rem, f as u32) < (top.thr, top.f) {
            *top = Top { thr: s + rem, tol: TOL_REL * self.inp.f_size[f] + TOL_BYTES, f: f as u32 };
        }
        self.gh[g].n += 1;
        self.resize(g, 1.0);
        self.g_own[g].add(o as u32);
        let r = self.gh[g].rate;
        if r > 0.0 {
            self.o_npos[o] += 1;
            self.owner_rate_add(o, r);
        }
        self.mark_retime(g);
    }

    /// Take flow `f` out of its group; returns the bytes it had left.
    fn leave(&mut self, f: usize, o: usize, t: f64) -> f64 {
        let g = self.f_grp[f] as usize;
        let rem = self.f_thr[f] - self.svc(g, t);
        self.f_grp[f] = NONE;
        self.f_gen[f] = self.f_gen[f].wrapping_add(1);
        if self.g_top[g].f == f as u32 {
            self.g_top[g] = Top::UNKNOWN;
        }
        self.gh[g].n -= 1;
        self.resize(g, -1.0);
        self.g_own[g].sub(o as u32);
        let r = self.gh[g].rate;
        if r > 0.0 {
            self.o_npos[o] -= 1;
            self.owner_rate_add(o, -r);
        }
        if self.gh[g].n == 0 {
            self.drop_group(g);
        } else {
            if self.g_heap[g].len() > 2 * self.gh[g].n as usize + 16 {
                // flows that moved or finished left stale entries: keep the live ones
                let (grp, gen) = (&self.f_grp, &self.f_gen);
                self.g_heap[g].retain(|&Reverse(e)| {
                    grp[e.f as usize] == g as u32 && gen[e.f as usize] == e.gen
                });
            }
            self.mark_retime(g);
        }
        rem
    }

    /// Move owner `o`'s active flows to level `key` (a priority change).
    pub fn move_owner(&mut self, o: usize, key: u64, t: f64) {
        if self.o_key[o] == key {
            return;
        }
        self.o_key[o] = key;
        let fl = std::mem::take(&mut self.o_flows[o]);
        for (i, &f) in fl.iter().enumerate() {
            if let Some(&h) = fl.get(i + 2 * AHEAD) {
                prefetch(&self.f_grp, h as usize);
                prefetch(&self.f_thr, h as usize);
            }
            if let Some(&h) = fl.get(i + AHEAD) {
                let g = self.f_grp[h as usize] as usize;
                self.prefetch_group(g);
                prefetch(&self.g_heap, g);
            }
            let rem = self.leave(f as usize, o, t);
            self.join(f as usize, o, key, rem, t);
        }
        self.o_flows[o] = fl;
    }

    // -- releases and completions --------------------------------------------------
    fn release(&mut self, rg: usize, t: f64, rel: &mut BinaryHeap<Reverse<Key>>) {
        let mut zero: Vec<u32> = Vec::new();
        for i in self.g_flows_ptr[rg]..self.g_flows_ptr[rg + 1] {
            let f = self.g_flows[i] as usize;
            let u = self.inp.f_unit[f] as usize;
            self.n_seen[u] += 1.0;
            let c = self.inp.f_cof[f] as usize;
            if !self.c_started[c] {
                self.c_started[c] = true;
                enlist(&mut self.act_c, &mut self.c_pos, c);
            }
            let size = self.inp.f_size[f];
            if size <= self.tol(f as u32) {
                zero.push(f as u32);
                continue;
            }
            let o = self.owner(f);
            if self.o_flows[o].is_empty() {
                enlist(&mut self.act_o, &mut self.o_pos, o);
                if self.o_key[o] == u64::MAX {
                    self.o_key[o] = self.initial_key(o);
                }
            }
            self.f_opos[f] = self.o_flows[o].len() as u32;
            self.o_flows[o].push(f as u32);
            let key = self.o_key[o];
            self.join(f, o, key, size, t);
        }
        if !zero.is_empty() {
            self.complete(&zero, t, rel);
        }
    }

    /// Flows already out of their groups.
    fn complete(&mut self, fl: &[u32], t: f64, rel: &mut BinaryHeap<Reverse<Key>>) {
        let mut done_groups: Vec<usize> = Vec::new();
        for &f in fl {
            let f = f as usize;
            self.finish[f] = t;
            let u = self.inp.f_unit[f] as usize;
            self.n_fin[u] += 1.0;
            let g = self.inp.f_group[f] as usize;
            self.rg_left[g] -= 1;
            if self.rg_left[g] == 0 {
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
                self.cp[p] += self.rg_bytes[g]; // Child-to-Parent (004 §III-C), once
                self.rg_deps_left[p] -= 1;
                if self.rg_deps_left[p] == 0 {
                    rel.push(Reverse(Key(t.max(self.inp.g_arrival[p]), p as u32)));
                }
            }
        }
    }

    /// Drop flow `f` from its owner's active list.
    fn drop_owner_flow(&mut self, f: usize, o: usize) {
        let i = self.f_opos[f] as usize;
        let list = &mut self.o_flows[o];
        let last = *list.last().unwrap();
        list.swap_remove(i);
        if i < list.len() {
            self.f_opos[last as usize] = i as u32;
        }
        self.f_opos[f] = NONE;
        if list.is_empty() {
            unlist(&mut self.act_o, &mut self.o_pos, o);
        }
    }

    /// Complete every flow due at `t` (the previous event at `t_prev`): a flow is due
    /// when its remaining bytes are within its tolerance, or its finish time is within
    /// 1e-12 of the interval or not after `t` (the Python engine's rule).
    fn completions(&mut self, t: f64, t_prev: f64, fin: &mut Vec<u32>) {
        let dt = t - t_prev;
        let horizon = t + dt * 1e-12 + 1e-9 * (1.0 + t.abs());
        let mut cand: Vec<u32> = Vec::new();
        self.g_tb.at_most(horizon, &mut cand);
        for &g in &cand {
            let g = g as usize;
            let r = self.gh[g].rate;
            let s = self.svc(g, t);
            let sp = self.svc(g, t_prev);
            let mut n_done = 0;
            while let Some(&Reverse(e)) = self.g_heap[g].peek() {
                let f = e.f as usize;
                if self.f_grp[f] != g as u32 || self.f_gen[f] != e.gen {
                    self.g_heap[g].pop();
                    continue;
                }
                let gap = e.thr - s;
                let tf = (e.thr - sp) / r;
                let at = self.g_t0[g] + (e.thr - self.g_svc0[g]) / r;
                if due(gap, self.tol(e.f), tf, at, t_prev, t) {
                    self.g_heap[g].pop();
                    fin.push(e.f);
                    n_done += 1;
                } else {
                    break;
                }
            }
            let m = fin.len();
            for i in m - n_done..m {
                let f = fin[i] as usize;
                let o = self.owner(f);
                self.leave(f, o, t);
                self.drop_owner_flow(f, o);
            }
        }
        self.flush_retime();
    }

    // -- the loop ----------------------------------------------------------------
    pub fn run(&mut self) -> Result<(), String> {
        let ng = self.inp.g_arrival.len();
        let mut rel: BinaryHeap<Reverse<Key>> = BinaryHeap::new();
        for g in 0..ng {
            if self.rg_deps_left[g] == 0 {
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
            self.flush_owners(t);
            self.decide(t);
            self.fill(t);
            self.flush_owners(t);
            self.after_fill(t);
            self.flush_retime();
            let t_s = self.next_sched_event(t);
            let t_c = self.g_ta.min();
            let t_rel = rel.peek().map_or(f64::INFINITY, |r| r.0 .0);
            let t_next = t_c.min(t_rel).min(t_s);
            if !t_next.is_finite() {
                return Err(format!(
                    "t={t:.6}s: {} active owners get no bandwidth and no event is due",
                    self.act_o.len()
                ));
            }
            let t_prev = t;
            t = t_next;
            self.events += 1;
            fin.clear();
            self.completions(t, t_prev, &mut fin);
            if !fin.is_empty() {
                fin.sort_unstable();
                let fl = std::mem::take(&mut fin);
                self.complete(&fl, t, &mut rel);
                fin = fl;
            }
            if t >= t_s {
                self.sched_event(t);
            }
        }
        Ok(())
    }
}

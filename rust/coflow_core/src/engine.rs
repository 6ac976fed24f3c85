//! The event loop of paper 004 §IV-B on any fabric given as a link table: strict
//! priority between levels, max-min fair sharing inside a level (004 §III-B), the
//! priority rules of `stream`, `aalo`, `baraat` (`rules.rs`) and `fs` / `fs-static`.
//! It mirrors `streamband.sim.coflow.engine.Simulation` with the Python scheduler
//! classes (same events, same tolerances); tests compare them to 1e-9.
//!
//! What an event costs follows what changed, not how many flows are active:
//! - a *group* is the flows of one level on one path: they always get the same rate,
//!   and the fills see a group as one item weighted by its flows (`fill.rs`);
//! - a *class* is the groups one fill fixed at one link of one level (their bottleneck,
//!   or a link with nothing left: rate 0). Its groups share its rate, and it keeps one
//!   service clock (bytes served per flow since it was made), so a rate change costs
//!   O(1) per class, not per group or flow. Between fills a group keeps its class
//!   (stream, first 200 FB2010 coflows: one group fixed in 32 changes class). Aalo's
//!   class is the pair of links a group was fixed at in its two passes, and the groups
//!   neither pass serves wait in their level's class at rate 0, where a fill does not
//!   look at them;
//! - a *bundle* is flows of one owner (the entity whose priority they inherit) in one
//!   class with the same bytes left: they finish together. A bundle's key is the
//!   class clock at which its flows finish; a class keeps its bundles in a heap by key,
//!   so its next completion is its top's, and the next event is the least over the
//!   classes (`BlockMin`). Flows leave a bundle only when their group changes class or
//!   their owner changes level (the bundle is then re-classed as a whole where its flows
//!   land in one class, split where they do not);
//! - a level is filled again only when its groups changed or the capacity the levels
//!   above left it changed on one of its links (bit for bit); a level is a slot holding
//!   its groups, so it can change key as a whole (`relabel`, for stream's starvation
//!   raises that move most of a level at one event, `rules.rs`);
//! - when a strict level is filled again, the rounds of its last fill that no change
//!   reaches are replayed as they were (their groups keep their classes) and the
//!   progressive filling goes on from the first round a change reaches (`fill.rs`
//!   `replay_rounds`).

use std::collections::BinaryHeap;
use std::cmp::Reverse;

use crate::counts as n;
use crate::count;
use crate::model::*;
use crate::progress::Progress;
use crate::util::*;

/// At most this many priority queues in `relabel_levels`'s per-level rows (`stream`'s K
/// is 2..8, 004 §III-D, checked by its constructor and the CLI).
pub const MAX_QUEUES: usize = 16;

/// The groups of one path, by level slot (usually a handful: one per level the path is
/// used in).
#[derive(Clone, Default)]
pub struct PathGroups {
    n: u32,
    a: [(u32, u32); 3],
    more: Vec<(u32, u32)>,
}

impl PathGroups {
    fn find(&self, l: u32) -> u32 {
        let n = (self.n as usize).min(3);
        for i in 0..n {
            if self.a[i].0 == l {
                return self.a[i].1;
            }
        }
        for &(x, g) in &self.more {
            if x == l {
                return g;
            }
        }
        NONE
    }
    fn add(&mut self, l: u32, g: u32) {
        if (self.n as usize) < 3 {
            self.a[self.n as usize] = (l, g);
        } else {
            self.more.push((l, g));
        }
        self.n += 1;
    }
    fn remove(&mut self, l: u32) {
        let n = self.n as usize;
        let i = (0..n.min(3)).find(|&i| self.a[i].0 == l);
        match i {
            Some(i) => {
                if n > 3 {
                    self.a[i] = self.more.pop().unwrap();
                } else {
                    self.a[i] = self.a[n - 1];
                }
            }
            None => {
                let j = self.more.iter().position(|x| x.0 == l).unwrap();
                self.more.swap_remove(j);
            }
        }
        self.n -= 1;
    }
}

/// One priority level: its groups, and per link it crosses the groups crossing it and
/// their flows (kept as groups come, go and change, so that a fill needs no set-up).
pub struct Level {
    pub key: u64,
    pub groups: Vec<u32>,
    /// groups added, removed or resized since the last fill
    pub dirty: bool,
    /// slot of each link in this level (NONE if no group of the level crosses it)
    pub lslot: Vec<u32>,
    pub links: Vec<u32>,
    /// per slot, the groups crossing the link (`LinkList`)
    pub lgroups: Vec<LinkList>,
    pub lw: Vec<f64>,
    /// the links whose flows changed since the level's last fill, each once (`lchg`, by
    /// link; every policy but aalo)
    pub chg: Vec<u32>,
    pub lchg: Vec<bool>,
    /// per slot: the class of the groups fixed at that link (NONE: none yet)
    pub lcls: Vec<u32>,
    /// per pass (aalo has two, the others one) its last fill as a function of its input
    pub memo: [Memo; 2],
    /// aalo: the class of each pair (pass-1 link, pass-2 link) a group was fixed at
    pub pair: IdMap<u32>,
    /// aalo: the class of the groups neither pass serves (rate 0; NONE: none yet)
    pub zcls: u32,
    /// aalo: groups made since the level's classes were last set, and the groups in a
    /// class with a rate (the only ones whose class a fill can change, besides these)
    pub fresh: Vec<u32>,
    pub served: Vec<u32>,
    /// strict levels: the rounds of the last fill, replayed by the next one as far as
    /// they still hold (`fill.rs` `replay_rounds`)
    pub rlog: RoundLog,
    /// strict levels: the groups made since the last fill (some maybe gone since), and
    /// the id of the last full pass over the links with nothing left: a group is at rate
    /// 0 while its `seen` is that id, and `memo[0].zsub`, `zn` follow its weight
    pub made: Vec<u32>,
    pub zid: u32,
}

/// A level's groups crossing one link, each as `g << jbits | j` (the link is its path's
/// `j`-th; `GONE`: a group removed since the list was last compacted), in the order they
/// came, and how many are listed. A removal marks its entry in place: a swap-remove
/// read the list's last entry, a cache miss per link of every group dropped (perf,
/// stream on fat-tree k=16: 59 % of `leave`), and moved that entry's group.
#[derive(Default)]
pub struct LinkList {
    pub e: Vec<u32>,
    pub live: u32,
}

/// A removed group's entry in a `LinkList` (no group's entry is all ones: `group_of`).
pub const GONE: u32 = u32::MAX;

/// A strict level's last progressive filling, round by round: per round its share m
/// and the end of its bottleneck links in `links`; per bottleneck link the end of the
/// groups fixed at it in `groups` (in the order they were fixed).
#[derive(Default)]
pub struct RoundLog {
    pub ok: bool,
    pub rounds: Vec<(f64, u32)>,
    pub links: Vec<(u32, u32)>,
    pub groups: Vec<u32>,
}

/// A level's last fill in one pass, per slot: the capacity it had (`inp`, NaN: never
/// filled), what it left (`out`), and the least capacity above which the same fill
/// would follow (`need`; NaN: only the same capacity, bit for bit: a link that was a
/// bottleneck or had nothing left). A fill is decided by its bottlenecks: a link slack
/// by more than what the level takes of it plus the 1e-9 tie rule's margin is never
/// picked (see `fill.rs` `replay`).
#[derive(Default)]
pub struct Memo {
    pub inp: Vec<f64>,
    pub out: Vec<f64>,
    pub need: Vec<f64>,
    /// aalo: (group, link it was fixed at, rate) of every group the fill served
    pub fixed: Vec<(u32, u32, f64)>,
    /// aalo: the fill's items per link slot and the per-link weights they make, valid
    /// (`setup_ok`) while the level's groups stay and the same links have nothing left
    pub items: Vec<Vec<u32>>,
    pub iw: Vec<f64>,
    pub setup_ok: bool,
    pub setup_ep: u32,
    /// strict levels, per slot: the flows of the groups fixed at rate 0 crossing it
    /// (valid with `zok`, kept while no link with nothing left changes)
    pub zsub: Vec<f64>,
    pub zok: bool,
    /// strict levels: how many groups that fill fixed at rate 0 (valid with `zok`)
    pub zn: usize,
}

impl Memo {
    fn push(&mut self) {
        self.inp.push(f64::NAN);
        self.out.push(0.0);
        self.need.push(f64::NAN);
        self.zsub.push(0.0);
    }
    fn swap_remove(&mut self, slot: usize) {
        self.inp.swap_remove(slot);
        self.out.swap_remove(slot);
        self.need.swap_remove(slot);
        self.zsub.swap_remove(slot);
    }
}

impl Level {
    fn new(key: u64, n_links: usize) -> Self {
        Level { key, groups: Vec::new(), dirty: true, lslot: vec![NONE; n_links],
                links: Vec::new(), lgroups: Vec::new(), lw: Vec::new(), lcls: Vec::new(),
                chg: Vec::new(), lchg: vec![false; n_links],
                memo: Default::default(), pair: IdMap::default(), zcls: NONE,
                fresh: Vec::new(), served: Vec::new(), rlog: RoundLog::default(),
                made: Vec::new(), zid: NONE }
    }
}

/// A group's hot fields, in one cache line: its flows (its weight in the fills), path
/// and the links of it (up to `GLINKS`: a fill's step reads them for every group it
/// fixes, and a path table indexed by path misses the cache once paths outnumber what
/// it holds: fat-tree k=16), level slot, place in the level's list, class, the fill
/// that fixed it last; for aalo the setting of classes that last looked at it and the
/// set-up (`Memo::setup_ep`) of each pass the group is an item of.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct GHot {
    pub w: f64,
    pub path: u32,
    pub lvl: u32,
    pub lpos: u32,
    pub cls: u32,
    pub ep: u32,
    /// aalo: the setting of classes that last looked at it; strict levels: the full
    /// rate-0 pass of its level that fixed it at rate 0 (`Level::zid`), or `NEW_GROUP`
    pub seen: u32,
    pub set: [u32; 2],
    /// its path's links when the width is at most `GLINKS` (NONE: padding)
    pub links: [u32; GLINKS],
}

/// The flows of one owner in one class (in its bundles), so that a class's rate change
/// moves each owner once, not each bundle: a unit's bundles (flows with different
/// bytes left) mostly share the class of its receiver's link.
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub struct Cell {
    pub own: u32,
    pub n: u32,
    /// its place in its class's list
    pub pos: u32,
}

/// A bundle's fields but its flow list, in one cache line: a bundle's move, classing,
/// completion and heap places read several of them together (kept in one array each,
/// they were a cache miss apiece).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub struct Bun {
    /// in its class's clock: the clock when its flows finish; pending (no class): the
    /// bytes each flow has left
    pub key: f64,
    pub tol: f64,
    /// its owner and its number of flows (a class's rate change reads both, and
    /// `b_flows[b].len()` would be a cache miss on the list's header)
    pub own: u32,
    pub n: u32,
    pub cls: u32,
    /// the cell counting its flows while it is in a class (NONE otherwise)
    pub cell: u32,
    /// its place in its class's heap and in its owner's list
    pub hpos: u32,
    pub opos: u32,
    /// listed in `pending`
    pub pend: bool,
}

impl Default for Bun {
    fn default() -> Self {
        Bun { key: 0.0, tol: 0.0, own: 0, n: 0, cls: NONE, cell: NONE, hpos: NONE, opos: NONE,
              pend: false }
    }
}

impl Places for [Bun] {
    #[inline(always)]
    fn place_of(&self, id: u32) -> u32 {
        self[id as usize].hpos
    }
    #[inline(always)]
    fn set_place(&mut self, id: u32, i: u32) {
        self[id as usize].hpos = i;
    }
}

/// A strict level's group made since its level's last fill (`GHot::seen`; the ids of
/// the rate-0 passes, `Level::zid`, are above it).
pub const NEW_GROUP: u32 = 1;

/// Links a group's hot line holds (a fat-tree path has 6); wider paths are read from
/// the path table.
pub const GLINKS: usize = 6;

impl Default for GHot {
    fn default() -> Self {
        GHot { w: 0.0, path: 0, lvl: 0, lpos: NONE, cls: NONE, ep: 0, seen: 0, set: [0; 2],
               links: [NONE; GLINKS] }
    }
}

/// Drop the `GONE` entries of `list`, keeping the others' order and their places in
/// `adjpos` (per group, `w` places: one per link of its path); done once gone entries
/// outnumber the listed groups, so that it costs at most one place written per removal.
fn compact(list: &mut LinkList, adjpos: &mut [u32], w: usize, jbits: u32) {
    let mut k = 0;
    for i in 0..list.e.len() {
        let e = list.e[i];
        if e == GONE {
            continue;
        }
        if k != i {
            list.e[k] = e;
            let (g, j) = ((e >> jbits) as usize, (e & ((1 << jbits) - 1)) as usize);
            adjpos[g * w + j] = k as u32;
        }
        k += 1;
    }
    list.e.truncate(k);
}

/// Group `g`'s links (`w` of them, NONE: padding): from its hot line, or from the path
/// table when paths are wider than `GLINKS`.
#[inline(always)]
pub fn glinks<'a>(gh: &'a [GHot], plinks: &'a [u32], w: usize, g: usize) -> &'a [u32] {
    if w <= GLINKS {
        &gh[g].links[..w]
    } else {
        let p = gh[g].path as usize;
        &plinks[p * w..p * w + w]
    }
}

pub struct Sim {
    pub inp: Input,
    pub par: Params,
    pub pol: Policy,
    pub k: usize,
    pub width: usize,
    /// the largest completion tolerance of any flow (bytes)
    pub maxtol: f64,
    // flows
    pub f_grp: Vec<u32>,
    /// per path, its active flows (any level), and each flow's place in its path's list:
    /// a group's flows are those of its path in it (`apply_fill`), so that a move writes
    /// no list of flows (a unit's move between levels moved each flow between two
    /// groups' lists: perf, stream on the big switch, a third of `join` and of `leave`
    /// waited on those lists)
    pub p_flows: Vec<Vec<u32>>,
    pub f_ppos: Vec<u32>,
    pub f_bun: Vec<u32>,
    pub f_bpos: Vec<u32>,
    pub f_opos: Vec<u32>,
    pub finish: Vec<f64>,
    pub events: u64,
    /// flows finished so far
    pub n_done: u64,
    // owners: the unit (stream), the coflow (aalo, baraat) or one (fs, fs-static)
    pub o_key: Vec<u64>,
    pub o_flows: Vec<Vec<u32>>,
    pub o_buns: Vec<Vec<u32>>,
    pub o_rate: Vec<f64>,
    /// per owner: its pending rate change, flows with a rate, and whether it is listed
    /// in `dirty_o`, in one place (a class's rate change visits each of its bundles'
    /// owners: one cache line per owner, not three)
    pub o_acc: Vec<OAcc>,
    pub o_x0: Vec<f64>,
    pub dirty_o: Vec<u32>,
    pub o_tx: Vec<f64>,
    pub act_o: Vec<u32>,
    pub o_pos: Vec<u32>,
    // groups (level slot, path)
    pub p_grp: Vec<PathGroups>,
    /// per group, the fields a fill and the setting of classes read together
    pub gh: Vec<GHot>,
    /// aalo, per group: the link it was fixed at in pass 2 and its rate there, while its
    /// level's classes are set
    pub g_p2: Vec<(u32, f64)>,
    /// aalo: the count of settings of classes (a group's `seen` is the last that looked
    /// at it)
    pub seen: u32,
    /// per link, whether it is the last link of some path; per path, its last link
    pub is_last: Vec<bool>,
    pub path_last: Vec<u32>,
    pub g_adjpos: Vec<u32>,
    /// emptied per-link group lists, kept for the next link a level gains (on a
    /// fat-tree k=16 most groups hold one flow, so a unit's move empties and makes
    /// lists by the thousand: the allocator had 6 % of stream's perf samples there)
    pub spare_lists: Vec<LinkList>,
    /// bits of a link's place in its path, in the per-link group lists' entries
    pub jbits: u32,
    pub free_g: Vec<u32>,
    /// groups whose class changed at this event's fills
    pub g_chg: Vec<u32>,
    // classes
    pub cl_lvl: Vec<u32>,
    pub cl_link: Vec<u32>,
    /// aalo: the pair of links (pass 1, pass 2) a class's groups were fixed at
    pub cl_pair: Vec<u64>,
    pub cl_rate: Vec<f64>,
    pub cl_x0: Vec<f64>,
    pub cl_t0: Vec<f64>,
    pub cl_heap: Vec<IdHeap>,
    /// per class, its cells (one per owner with flows in it); the cells, free ones,
    /// and the cell of each (class, owner)
    pub cl_cells: Vec<Vec<u32>>,
    pub ce: Vec<Cell>,
    pub free_ce: Vec<u32>,
    pub cmap: IdMap<u32>,
    /// the last (class, owner) key `cell_of` found and its cell: an owner's bundles are
    /// classed one after another and mostly into one class (its receiver's link)
    pub cm_last: (u64, u32),
    /// the rate this event's fill gives it, and the fill that set it
    pub cl_new: Vec<f64>,
    pub cl_ep: Vec<u32>,
    pub cl_touched: Vec<u32>,
    pub free_cl: Vec<u32>,
    pub cl_rt: Vec<bool>,
    pub rt_list: Vec<u32>,
    /// per class: when its top bundle finishes (a), and the earliest time any of its
    /// bundles can be within tolerance (b); inf when not served
    pub cl_ta: BlockMin,
    pub cl_tb: BlockMin,
    // bundles
    /// per bundle, its fields but its flow list, in one cache line (`Bun`)
    pub bn: Vec<Bun>,
    pub b_flows: Vec<Vec<u32>>,
    pub free_b: Vec<u32>,
    pub pending: Vec<u32>,
    /// scratch: (bundle, class) -> the bundle its flows moved to at this event
    pub split: IdMap<u32>,
    // levels
    pub lv: Vec<Level>,
    pub lmap: IdMap<u32>,
    pub lorder: Vec<u32>,
    pub lorder_dirty: bool,
    pub free_l: Vec<u32>,
    /// the current fill (a group's / class's `ep` is the fill that fixed it last)
    pub epoch: u32,
    /// the last full rate-0 pass of any strict level (`Level::zid`)
    pub zpass: u32,
    // release groups, coflows
    pub g_flows_ptr: Vec<usize>,
    pub rg_flows: Vec<u32>,
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
    pub work: Vec<f64>,
    pub wsum: Vec<f64>,
    pub qmask: Vec<u32>,
    /// per link: the round of the current fill it is a tie bottleneck of, not yet fixed
    pub mark: Vec<u32>,
    pub round: u32,
    /// per link: the fill (epoch) at which it was last a bottleneck or had nothing left
    pub bmark: Vec<u32>,
    /// aalo: classes no group is in after this event's fills, freed once empty
    pub cl_dead: Vec<u32>,
    pub used: Vec<f64>,
    pub lheap: BinaryHeap<Reverse<Key>>,
    pub bott: Vec<u32>,
    /// per link: the fill (epoch) whose input differs from the level's last fill on it
    /// (groups changed or capacity left changed); the heap of such links by share
    pub dmark: Vec<u32>,
    pub dheap: BinaryHeap<Reverse<Key>>,
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
        let width = inp.width;
        let n_paths = inp.plinks.len() / width.max(1);
        let n_owner = match pol {
            Policy::Fs | Policy::FsStatic | Policy::Varys => 1,
            Policy::Stream => nu,
            Policy::Aalo | Policy::Baraat => nc,
        };
        let (g_flows_ptr, rg_flows) = csr(ng, &inp.f_group);
        let (c_units_ptr, c_units) = csr(nc, &inp.u_cof);
        let mut rg_left = vec![0u32; ng];
        let mut rg_bytes = vec![0.0; ng];
        let mut c_left = vec![0u32; nc];
        for f in 0..nf {
            rg_left[inp.f_group[f] as usize] += 1;
            rg_bytes[inp.f_group[f] as usize] += inp.f_size[f];
            c_left[inp.f_cof[f] as usize] += 1;
        }
        let maxtol = inp.f_size.iter().fold(0.0f64, |m, &x| m.max(x)) * TOL_REL + TOL_BYTES;
        let k = par.tau.len();
        let delay = if par.relay == Relay::Decentralized { par.info_delay_s } else { 0.0 };
        let mut sim = Sim {
            pol,
            k,
            width,
            maxtol,
            f_grp: vec![NONE; nf],
            p_flows: vec![Vec::new(); n_paths],
            f_ppos: vec![NONE; nf],
            f_bun: vec![NONE; nf],
            f_bpos: vec![NONE; nf],
            f_opos: vec![NONE; nf],
            finish: vec![f64::NAN; nf],
            events: 0,
            n_done: 0,
            o_key: vec![u64::MAX; n_owner],
            o_flows: vec![Vec::new(); n_owner],
            o_buns: vec![Vec::new(); n_owner],
            o_rate: vec![0.0; n_owner],
            o_acc: vec![OAcc::default(); n_owner],
            o_x0: vec![0.0; n_owner],
            dirty_o: Vec::new(),
            o_tx: vec![0.0; n_owner],
            act_o: Vec::new(),
            o_pos: vec![NONE; n_owner],
            p_grp: vec![PathGroups::default(); n_paths],
            gh: Vec::new(),
            g_p2: Vec::new(),
            seen: 0,
            is_last: vec![false; nl],
            path_last: Vec::new(),
            g_adjpos: Vec::new(),
            spare_lists: Vec::new(),
            jbits: usize::BITS - width.saturating_sub(1).leading_zeros(),
            free_g: Vec::new(),
            g_chg: Vec::new(),
            cl_lvl: Vec::new(),
            cl_link: Vec::new(),
            cl_pair: Vec::new(),
            cl_rate: Vec::new(),
            cl_x0: Vec::new(),
            cl_t0: Vec::new(),
            cl_heap: Vec::new(),
            cl_cells: Vec::new(),
            ce: Vec::new(),
            free_ce: Vec::new(),
            cmap: IdMap::default(),
            cm_last: (u64::MAX, NONE),
            cl_new: Vec::new(),
            cl_ep: Vec::new(),
            cl_touched: Vec::new(),
            free_cl: Vec::new(),
            cl_rt: Vec::new(),
            rt_list: Vec::new(),
            cl_ta: BlockMin::default(),
            cl_tb: BlockMin::default(),
            bn: Vec::new(),
            b_flows: Vec::new(),
            free_b: Vec::new(),
            pending: Vec::new(),
            split: IdMap::default(),
            lv: Vec::new(),
            lmap: IdMap::default(),
            lorder: Vec::new(),
            lorder_dirty: false,
            free_l: Vec::new(),
            epoch: 0,
            zpass: NEW_GROUP,
            g_flows_ptr,
            rg_flows,
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
            work: vec![0.0; nl],
            wsum: vec![0.0; nl],
            qmask: vec![0; nl],
            mark: vec![0; nl],
            round: 0,
            bmark: vec![0; nl],
            cl_dead: Vec::new(),
            used: vec![0.0; nl],
            lheap: BinaryHeap::new(),
            bott: Vec::new(),
            dmark: vec![0; nl],
            dheap: BinaryHeap::new(),
            x_at: vec![f64::INFINITY; n_owner],
            x_list: Vec::new(),
            x_mark: vec![false; n_owner],
            rl_rows: Vec::new(),
            rl_slot: Vec::new(),
            par,
            inp,
        };
        for p in 0..n_paths {
            let last = sim.inp.plinks[p * width..p * width + width].iter().rev().copied()
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

    /// Whether the levels are strict and keep their groups at rate 0 between fills
    /// (`Level::zid`): every policy but aalo and fs-static.
    #[inline(always)]
    pub fn strict_zero(&self) -> bool {
        !matches!(self.pol, Policy::Aalo | Policy::FsStatic)
    }

    #[inline]
    pub fn tol(&self, f: usize) -> f64 {
        TOL_REL * self.inp.f_size[f] + TOL_BYTES
    }

    /// Class `k`'s clock at `t`: bytes served per flow since it was made.
    #[inline]
    pub fn clock(&self, k: usize, t: f64) -> f64 {
        self.cl_x0[k] + self.cl_rate[k] * (t - self.cl_t0[k])
    }

    /// The rate of flow `f`'s group (0 before its first fill).
    #[inline]
    pub fn flow_rate(&self, f: usize) -> f64 {
        let k = self.gh[self.f_grp[f] as usize].cls;
        if k == NONE || self.bn[self.f_bun[f] as usize].cls == NONE {
            0.0
        } else {
            self.cl_rate[k as usize]
        }
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
    pub fn owner_rate_add(&mut self, o: usize, d: f64) {
        if d == 0.0 {
            return;
        }
        let a = &mut self.o_acc[o];
        a.pend += d;
        if !a.dirty {
            a.dirty = true;
            self.dirty_o.push(o as u32);
        }
    }

    /// `n` flows of owner `o` go from rate `a` to rate `b`.
    #[inline]
    fn owner_move(&mut self, o: usize, n: u32, a: f64, b: f64) {
        if a > 0.0 && !(b > 0.0) {
            self.o_acc[o].npos -= n;
        } else if !(a > 0.0) && b > 0.0 {
            self.o_acc[o].npos += n;
        }
        self.owner_rate_add(o, (b - a) * n as f64);
    }

    /// Apply the owners' rate changes of the event at `t` (bytes synced first at the
    /// old rates; for `stream` the coflows' too, and the relay's breakpoints).
    #[inline(never)]
    pub fn flush_owners(&mut self, t: f64) {
        let list = std::mem::take(&mut self.dirty_o);
        for &o in &list {
            let o = o as usize;
            let d = self.o_acc[o].pend;
            self.o_acc[o].pend = 0.0;
            self.o_acc[o].dirty = false;
            self.o_x0[o] = self.o_bytes(o, t);
            self.o_tx[o] = t;
            self.o_rate[o] += d;
            if self.o_acc[o].npos == 0 {
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

    // -- classes -------------------------------------------------------------------
    /// A new class of level slot `l` at link `lk` (rate 0, clock 0).
    pub fn new_class(&mut self, l: usize, lk: u32) -> u32 {
        let k = match self.free_cl.pop() {
            Some(k) => k as usize,
            None => {
                self.cl_lvl.push(0);
                self.cl_link.push(0);
                self.cl_pair.push(u64::MAX);
                self.cl_rate.push(0.0);
                self.cl_x0.push(0.0);
                self.cl_t0.push(0.0);
                self.cl_heap.push(IdHeap::default());
                self.cl_cells.push(Vec::new());
                self.cl_new.push(0.0);
                self.cl_ep.push(0);
                self.cl_rt.push(false);
                self.cl_ta.push(f64::INFINITY);
                self.cl_tb.push(f64::INFINITY);
                self.cl_lvl.len() - 1
            }
        };
        self.cl_lvl[k] = l as u32;
        self.cl_link[k] = lk;
        self.cl_pair[k] = u64::MAX;
        self.cl_rate[k] = 0.0;
        self.cl_x0[k] = 0.0;
        self.cl_t0[k] = 0.0;
        self.cl_ep[k] = self.epoch.wrapping_sub(1);
        k as u32
    }

    fn free_class(&mut self, k: u32) {
        debug_assert!(self.cl_heap[k as usize].is_empty() && self.cl_cells[k as usize].is_empty());
        self.cl_ta.set(k as usize, f64::INFINITY);
        self.cl_tb.set(k as usize, f64::INFINITY);
        self.cl_rate[k as usize] = 0.0;
        self.free_cl.push(k);
    }

    /// Class `k` is fixed at rate `m` by the current fill.
    #[inline]
    pub fn touch_class(&mut self, k: u32, m: f64) {
        let ku = k as usize;
        if self.cl_ep[ku] != self.epoch {
            self.cl_ep[ku] = self.epoch;
            self.cl_touched.push(k);
        }
        self.cl_new[ku] = m;
    }

    /// Group `g` is fixed in class `k` by the current fill.
    #[inline]
    pub fn assign(&mut self, g: usize, k: u32) {
        self.gh[g].ep = self.epoch;
        if self.gh[g].cls != k {
            if self.gh[g].cls != NONE {
                self.g_chg.push(g as u32);
            }
            self.gh[g].cls = k;
        }
    }

    pub fn mark_retime(&mut self, k: usize) {
        if !self.cl_rt[k] {
            self.cl_rt[k] = true;
            self.rt_list.push(k as u32);
        }
    }

    /// Class `k`'s completion times from its top bundle, rate and clock.
    fn retime(&mut self, k: usize) {
        let r = self.cl_rate[k];
        let (a, b) = match self.cl_heap[k].top() {
            Some((key, _)) if r > 0.0 => {
                let ta = self.cl_t0[k] + (key - self.cl_x0[k]) / r;
                (ta, ta - self.maxtol / r)
            }
            _ => (f64::INFINITY, f64::INFINITY),
        };
        self.cl_ta.set(k, a);
        self.cl_tb.set(k, b);
    }

    #[inline(never)]
    pub fn flush_retime(&mut self) {
        let list = std::mem::take(&mut self.rt_list);
        for &k in &list {
            self.cl_rt[k as usize] = false;
            self.retime(k as usize);
        }
        self.rt_list = list;
        self.rt_list.clear();
    }

    /// Class `k` takes rate `r` at `t`: its clock is synced, its bundles' owners move
    /// by the difference (one step per bundle, not per flow).
    #[inline(never)]
    fn set_class_rate(&mut self, k: usize, r: f64, t: f64) {
        let old = self.cl_rate[k];
        if r == old {
            return;
        }
        count!(n::CLASS_RATES, 1);
        count!(n::CLASS_RATE_BUNDLES, self.cl_cells[k].len());
        self.cl_x0[k] = self.clock(k, t);
        self.cl_t0[k] = t;
        self.cl_rate[k] = r;
        let cells = std::mem::take(&mut self.cl_cells[k]);
        for (i, &c) in cells.iter().enumerate() {
            // the cells a few places ahead, and their owners (two stages)
            if let Some(&c2) = cells.get(i + 2 * AHEAD) {
                prefetch(&self.ce, c2 as usize);
            }
            if let Some(&c2) = cells.get(i + AHEAD) {
                prefetch(&self.o_acc, self.ce[c2 as usize].own as usize);
            }
            let Cell { own, n, .. } = self.ce[c as usize];
            self.owner_move(own as usize, n, old, r);
        }
        self.cl_cells[k] = cells;
        self.mark_retime(k);
    }

    /// The cell of owner `o` in class `k` (made, empty, if none).
    /// The key of the cell of (class `k`, owner `o`) in `cmap` and `cm_last`.
    #[inline(always)]
    fn cell_key(k: usize, o: u32) -> u64 {
        (k as u64) << 32 | o as u64
    }

    fn cell_of(&mut self, k: usize, o: usize) -> u32 {
        let key = Self::cell_key(k, o as u32);
        if self.cm_last.0 == key {
            return self.cm_last.1;
        }
        if let Some(&c) = self.cmap.get(&key) {
            self.cm_last = (key, c);
            return c;
        }
        let c = match self.free_ce.pop() {
            Some(c) => c,
            None => {
                self.ce.push(Cell::default());
                (self.ce.len() - 1) as u32
            }
        };
        self.ce[c as usize] = Cell { own: o as u32, n: 0, pos: self.cl_cells[k].len() as u32 };
        self.cl_cells[k].push(c);
        self.cmap.insert(key, c);
        self.cm_last = (key, c);
        c
    }

    /// `n` flows leave cell `c` of class `k`; an emptied cell goes.
    fn cell_sub(&mut self, c: u32, k: usize, n: u32) {
        let cu = c as usize;
        self.ce[cu].n -= n;
        if self.ce[cu].n > 0 {
            return;
        }
        let i = self.ce[cu].pos as usize;
        let list = &mut self.cl_cells[k];
        list.swap_remove(i);
        if let Some(&moved) = list.get(i) {
            self.ce[moved as usize].pos = i as u32;
        }
        let key = Self::cell_key(k, self.ce[cu].own);
        self.cmap.remove(&key);
        if self.cm_last.0 == key {
            self.cm_last = (u64::MAX, NONE);
        }
        self.free_ce.push(c);
    }

    // -- bundles -------------------------------------------------------------------
    fn new_bundle(&mut self, o: usize, tol: f64) -> usize {
        let b = match self.free_b.pop() {
            Some(b) => b as usize,
            None => {
                self.bn.push(Bun::default());
                self.b_flows.push(Vec::new());
                self.bn.len() - 1
            }
        };
        self.bn[b].own = o as u32;
        self.bn[b].n = 0;
        self.bn[b].cls = NONE;
        self.bn[b].tol = tol;
        self.b_flows[b].clear();
        self.bn[b].opos = self.o_buns[o].len() as u32;
        self.o_buns[o].push(b as u32);
        b
    }

    fn free_bundle(&mut self, b: usize) {
        debug_assert!(self.b_flows[b].is_empty() && self.bn[b].cls == NONE);
        let o = self.bn[b].own as usize;
        let i = self.bn[b].opos as usize;
        let list = &mut self.o_buns[o];
        let last = *list.last().unwrap();
        list.swap_remove(i);
        if i < list.len() {
            self.bn[last as usize].opos = i as u32;
        }
        self.bn[b].opos = NONE;
        self.free_b.push(b as u32);
    }

    fn bundle_add(&mut self, b: usize, f: usize) {
        self.f_bun[f] = b as u32;
        self.f_bpos[f] = self.b_flows[b].len() as u32;
        self.b_flows[b].push(f as u32);
        self.bn[b].n += 1;
    }

    /// Take flow `f` out of its bundle (the bundle stays, maybe empty).
    fn bundle_take(&mut self, f: usize) -> usize {
        let b = self.f_bun[f] as usize;
        let i = self.f_bpos[f] as usize;
        let list = &mut self.b_flows[b];
        let last = *list.last().unwrap();
        list.swap_remove(i);
        if i < list.len() {
            self.f_bpos[last as usize] = i as u32;
        }
        self.f_bun[f] = NONE;
        self.bn[b].n -= 1;
        b
    }

    /// Put bundle `b` (holding `rem` bytes per flow) in class `k` at `t`.
    fn class_bundle(&mut self, b: usize, k: usize, rem: f64, t: f64) {
        self.bn[b].cls = k as u32;
        self.bn[b].key = self.clock(k, t) + rem;
        self.cl_heap[k].push(b as u32, self.bn[b].key, &mut self.bn[..]);
        self.mark_retime(k);
        let (o, n) = (self.bn[b].own, self.bn[b].n);
        let c = self.cell_of(k, o as usize);
        self.ce[c as usize].n += n;
        self.bn[b].cell = c;
        self.owner_move(o as usize, n, 0.0, self.cl_rate[k]);
    }

    /// Take bundle `b` out of its class at `t`: it keeps the bytes its flows have left.
    fn unclass_bundle(&mut self, b: usize, t: f64) {
        let k = self.bn[b].cls as usize;
        let rem = self.bn[b].key - self.clock(k, t);
        self.cl_heap[k].remove(b as u32, &mut self.bn[..]);
        self.mark_retime(k);
        let (o, n) = (self.bn[b].own, self.bn[b].n);
        self.cell_sub(self.bn[b].cell, k, n);
        self.bn[b].cell = NONE;
        self.owner_move(o as usize, n, self.cl_rate[k], 0.0);
        self.bn[b].cls = NONE;
        self.bn[b].key = rem;
    }

    fn mark_pending(&mut self, b: usize) {
        if !self.bn[b].pend {
            self.bn[b].pend = true;
            self.pending.push(b as u32);
        }
    }

    /// After the fills: flows whose group changed class move to a bundle of the new
    /// class (flows of one bundle going to one class stay together); bundles with no
    /// class (new, or their owner moved) are put in the class of their flows' groups,
    /// split where these differ. The classes' new rates are applied first.
    #[inline(never)]
    pub fn apply_fill(&mut self, t: f64) {
        let touched = std::mem::take(&mut self.cl_touched);
        for &k in &touched {
            let k = k as usize;
            self.set_class_rate(k, self.cl_new[k], t);
        }
        self.cl_touched = touched;
        self.cl_touched.clear();
        let chg = std::mem::take(&mut self.g_chg);
        count!(n::GROUP_CLASS, chg.len());
        self.split.clear();
        let mut made: Vec<(u32, f64)> = Vec::new();
        for (gi, &g) in chg.iter().enumerate() {
            self.prefetch_chg(&chg, gi);
            let g = g as usize;
            let k2 = self.gh[g].cls;
            let p = self.gh[g].path as usize;
            let mut i = 0;
            while i < self.p_flows[p].len() {
                let f = self.p_flows[p][i] as usize;
                i += 1;
                if self.f_grp[f] != g as u32 {
                    continue; // in another level
                }
                let b = self.f_bun[f] as usize;
                let k1 = self.bn[b].cls;
                if k1 == NONE || k1 == k2 {
                    continue;
                }
                let key = (b as u64) << 32 | k2 as u64;
                let nb = match self.split.get(&key) {
                    Some(&nb) => nb as usize,
                    None => {
                        let o = self.bn[b].own as usize;
                        let nb = self.new_bundle(o, self.bn[b].tol);
                        let rem = self.bn[b].key - self.clock(k1 as usize, t);
                        self.split.insert(key, nb as u32);
                        made.push((nb as u32, rem));
                        self.bn[nb].cls = k2;
                        self.bn[nb].cell = self.cell_of(k2 as usize, o);
                        nb
                    }
                };
                count!(n::REBUNDLED, 1);
                self.bundle_take(f);
                self.bundle_add(nb, f);
                let o = self.bn[b].own as usize;
                self.ce[self.bn[nb].cell as usize].n += 1;
                self.cell_sub(self.bn[b].cell, k1 as usize, 1);
                self.owner_move(o, 1, self.cl_rate[k1 as usize], self.cl_rate[k2 as usize]);
                if self.b_flows[b].is_empty() {
                    self.cl_heap[k1 as usize].remove(b as u32, &mut self.bn[..]);
                    self.mark_retime(k1 as usize);
                    self.bn[b].cls = NONE;
                    self.bn[b].cell = NONE;
                    self.free_bundle(b);
                }
            }
        }
        for &(nb, rem) in &made {
            let nb = nb as usize;
            let k = self.bn[nb].cls as usize;
            self.bn[nb].key = self.clock(k, t) + rem;
            self.cl_heap[k].push(nb as u32, self.bn[nb].key, &mut self.bn[..]);
            self.mark_retime(k);
        }
        self.g_chg = chg;
        self.g_chg.clear();
        // bundles with no class
        let pend = std::mem::take(&mut self.pending);
        for (pi, &b) in pend.iter().enumerate() {
            self.prefetch_pending(&pend, pi);
            let b = b as usize;
            self.bn[b].pend = false;
            if self.b_flows[b].is_empty() {
                if self.bn[b].cls == NONE && self.bn[b].opos != NONE {
                    self.free_bundle(b);
                }
                continue;
            }
            if self.bn[b].cls != NONE {
                continue;
            }
            let rem = self.bn[b].key;
            let f0 = self.b_flows[b][0] as usize;
            let k0 = self.gh[self.f_grp[f0] as usize].cls;
            let mut i = 0;
            self.split.clear();
            while i < self.b_flows[b].len() {
                if let Some(&f2) = self.b_flows[b].get(i + AHEAD) {
                    prefetch(&self.gh, self.f_grp[f2 as usize] as usize);
                }
                let f = self.b_flows[b][i] as usize;
                let k = self.gh[self.f_grp[f] as usize].cls;
                if k == k0 {
                    i += 1;
                    continue;
                }
                let nb = match self.split.get(&(k as u64)) {
                    Some(&nb) => nb as usize,
                    None => {
                        let o = self.bn[b].own as usize;
                        let nb = self.new_bundle(o, self.bn[b].tol);
                        self.bn[nb].key = rem;
                        self.split.insert(k as u64, nb as u32);
                        nb
                    }
                };
                self.bundle_take(f);
                self.bundle_add(nb, f);
            }
            count!(n::CLASSED, 1);
            count!(n::SPLITS, self.split.len());
            self.class_bundle(b, k0 as usize, rem, t);
            let made: Vec<(u64, u32)> = self.split.iter().map(|(&k, &nb)| (k, nb)).collect();
            for (k, nb) in made {
                self.class_bundle(nb as usize, k as usize, rem, t);
            }
        }
        self.pending = pend;
        self.pending.clear();
        let dead = std::mem::take(&mut self.cl_dead);
        for &k in &dead {
            debug_assert!(self.cl_heap[k as usize].is_empty());
            self.free_class(k);
        }
        self.cl_dead = dead;
        self.cl_dead.clear();
    }

    /// Before classing the `i`-th of the pending bundles `pend`: bring near, in stages,
    /// what the bundles a few places ahead will read (their flow lists, their flows'
    /// groups, their owners), each stage's addresses from lines the stage before
    /// brought. A pending bundle holds about four flows (stream, big switch), so the
    /// prefetch inside one bundle's list never starts, and perf put 45 % of
    /// `apply_fill` on each bundle's first loads (its list, its first flow, its group).
    #[inline(always)]
    fn prefetch_pending(&self, pend: &[u32], i: usize) {
        if let Some(&b) = pend.get(i + 3 * AHEAD) {
            let b = b as usize;
            prefetch(&self.b_flows, b);
            prefetch(&self.bn, b);
        }
        if let Some(&b) = pend.get(i + 2 * AHEAD) {
            prefetch(&self.b_flows[b as usize], 0);
        }
        if let Some(&b) = pend.get(i + AHEAD) {
            let b = b as usize;
            prefetch(&self.o_acc, self.bn[b].own as usize);
            for &f in self.b_flows[b].iter().take(4) {
                prefetch(&self.f_grp, f as usize);
            }
        }
        if let Some(&b) = pend.get(i + AHEAD / 2) {
            for &f in self.b_flows[b as usize].iter().take(4) {
                prefetch(&self.gh, self.f_grp[f as usize] as usize);
            }
        }
    }

    /// Before moving the flows of the `i`-th of the groups `chg` that changed class:
    /// the same staged prefetch over the groups ahead (their path's flow list, its
    /// flows' groups and bundles, those bundles' lists, whose last flow a bundle's
    /// removal reads).
    #[inline(always)]
    fn prefetch_chg(&self, chg: &[u32], i: usize) {
        if let Some(&g) = chg.get(i + 4 * AHEAD) {
            prefetch(&self.gh, g as usize);
        }
        if let Some(&g) = chg.get(i + 3 * AHEAD) {
            prefetch(&self.p_flows, self.gh[g as usize].path as usize);
        }
        if let Some(&g) = chg.get(i + 2 * AHEAD) {
            prefetch(&self.p_flows[self.gh[g as usize].path as usize], 0);
        }
        if let Some(&g) = chg.get(i + AHEAD) {
            for &f in self.p_flows[self.gh[g as usize].path as usize].iter().take(4) {
                prefetch(&self.f_grp, f as usize);
                prefetch(&self.f_bun, f as usize);
                prefetch(&self.f_bpos, f as usize);
            }
        }
        if let Some(&g) = chg.get(i + AHEAD / 2) {
            for &f in self.p_flows[self.gh[g as usize].path as usize].iter().take(4) {
                let b = self.f_bun[f as usize] as usize;
                prefetch(&self.b_flows, b);
                prefetch(&self.bn, b);
            }
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
                lv.rlog.ok = false;
                lv.memo[0].zok = false;
                lv.zid = NONE;
                if self.pol != Policy::FsStatic {
                    for &lk in &lv.chg {
                        lv.lchg[lk as usize] = false;
                    }
                    lv.chg.clear();
                }
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

    fn drop_level(&mut self, l: usize) {
        let key = self.lv[l].key;
        if self.lmap.get(&key) == Some(&(l as u32)) {
            self.lmap.remove(&key);
        }
        debug_assert!(self.lv[l].links.is_empty());
        let pos = self.lorder.iter().position(|&x| x as usize == l).unwrap();
        self.lorder.remove(pos);
        let pairs: Vec<u32> = self.lv[l].pair.values().copied().collect();
        for k in pairs {
            self.free_class(k);
        }
        let lvl = &mut self.lv[l];
        lvl.pair.clear();
        lvl.fresh.clear();
        lvl.made.clear();
        lvl.served.clear();
        let z = std::mem::replace(&mut lvl.zcls, NONE);
        if z != NONE {
            self.free_class(z);
        }
        self.free_l.push(l as u32);
    }

    /// Give level slot `l` the key `key`, which no level holds: its groups keep their
    /// flows and classes; the fills see the level at its new place.
    pub fn relabel(&mut self, l: usize, key: u64) {
        count!(n::RELABELS, 1);
        let old = self.lv[l].key;
        if self.lmap.get(&old) == Some(&(l as u32)) {
            self.lmap.remove(&old);
        }
        self.lmap.insert(key, l as u32);
        self.lv[l].key = key;
        self.lv[l].dirty = true;
        self.lorder_dirty = true;
    }

    /// Enter group `g` in its level's per-link lists.
    fn attach(&mut self, g: usize) {
        let w = self.width;
        let l = self.gh[g].lvl as usize;
        for j in 0..w {
            let lk = glinks(&self.gh, &self.inp.plinks, w, g)[j];
            if lk == NONE {
                continue;
            }
            let lvl = &mut self.lv[l];
            let mut slot = lvl.lslot[lk as usize];
            if slot == NONE {
                slot = lvl.links.len() as u32;
                lvl.lslot[lk as usize] = slot;
                lvl.links.push(lk);
                lvl.lgroups.push(self.spare_lists.pop().unwrap_or_default());
                lvl.lw.push(0.0);
                lvl.lcls.push(NONE);
                lvl.memo[0].push();
                lvl.memo[1].push();
            }
            let list = &mut lvl.lgroups[slot as usize];
            self.g_adjpos[g * w + j] = list.e.len() as u32;
            list.e.push((g << self.jbits | j) as u32);
            list.live += 1;
        }
    }

    /// Remove group `g` (no flows left) from its level's per-link lists.
    fn detach(&mut self, g: usize) {
        let w = self.width;
        let l = self.gh[g].lvl as usize;
        for j in 0..w {
            let lk = glinks(&self.gh, &self.inp.plinks, w, g)[j];
            if lk == NONE {
                continue;
            }
            let lvl = &mut self.lv[l];
            let slot = lvl.lslot[lk as usize] as usize;
            let pos = self.g_adjpos[g * w + j] as usize;
            let list = &mut lvl.lgroups[slot];
            list.e[pos] = GONE;
            list.live -= 1;
            if list.live > 0 {
                if pos + 1 == list.e.len() {
                    // the entries gone at the end go at once (no group's place moves)
                    while list.e.last() == Some(&GONE) {
                        list.e.pop();
                    }
                } else if list.e.len() > 2 * list.live as usize + 8 {
                    compact(list, &mut self.g_adjpos, w, self.jbits);
                }
            } else {
                // no group of this level crosses the link any more (the slots move); if
                // it had nothing left, its rate-0 groups went with it, their weights and
                // count already off `zsub` and `zn`
                let k = lvl.lcls[slot];
                let last = lvl.links.len() - 1;
                lvl.links.swap_remove(slot);
                let mut gone = lvl.lgroups.swap_remove(slot);
                gone.e.clear();
                self.spare_lists.push(gone);
                lvl.lw.swap_remove(slot);
                lvl.lcls.swap_remove(slot);
                lvl.memo[0].swap_remove(slot);
                lvl.memo[1].swap_remove(slot);
                if slot < last {
                    let moved = lvl.links[slot];
                    lvl.lslot[moved as usize] = slot as u32;
                }
                lvl.lslot[lk as usize] = NONE;
                lvl.dirty = true;
                lvl.memo[0].setup_ok = false;
                lvl.memo[1].setup_ok = false;
                if k != NONE {
                    self.free_class(k);
                }
            }
        }
    }

    /// Group (level slot `l`, `path`), made if absent.
    fn group_of(&mut self, l: usize, path: u32) -> usize {
        let g = self.p_grp[path as usize].find(l as u32);
        if g != NONE {
            return g as usize;
        }
        let g = match self.free_g.pop() {
            Some(g) => g as usize,
            None => {
                let g = self.gh.len();
                // below the last id, so that no entry of a per-link list is `GONE`
                assert!(g < (1 << (32 - self.jbits)) - 1, "too many groups for the per-link lists");
                // no path yet: `place_group` copies the links
                self.gh.push(GHot { path: NONE, ..GHot::default() });
                self.g_p2.push((NONE, 0.0));
                self.g_adjpos.extend(std::iter::repeat_n(NONE, self.width));
                g
            }
        };
        self.place_group(g, l, path);
        g
    }

    /// Make group `g` (free) the group of (level slot `l`, `path`), with no weight yet:
    /// in its level's lists and its path's groups.
    fn place_group(&mut self, g: usize, l: usize, path: u32) {
        count!(n::GROUPS_MADE, 1);
        // a flow moving between levels mostly drops its group and makes the new one in
        // the slot just freed, for the same path: its links are there already (the path
        // table row was a cache miss per move, 4-8 % of stream's time on fat-tree k=16)
        if self.width <= GLINKS && self.gh[g].path != path {
            let (w, p) = (self.width, path as usize);
            self.gh[g].links[..w].copy_from_slice(&self.inp.plinks[p * w..p * w + w]);
        }
        self.gh[g].path = path;
        self.gh[g].lvl = l as u32;
        self.gh[g].w = 0.0;
        self.gh[g].cls = NONE;
        self.gh[g].ep = self.epoch.wrapping_sub(1);
        let strict = self.strict_zero();
        let lvl = &mut self.lv[l];
        self.gh[g].lpos = lvl.groups.len() as u32;
        lvl.groups.push(g as u32);
        lvl.dirty = true;
        if strict {
            // looked at by its level's next fill (`zero_made`)
            self.gh[g].seen = NEW_GROUP;
            lvl.made.push(g as u32);
        }
        if self.pol == Policy::Aalo {
            lvl.fresh.push(g as u32);
            // a new group may be an item: the set-ups are made again
            lvl.memo[0].setup_ok = false;
            lvl.memo[1].setup_ok = false;
        }
        self.p_grp[path as usize].add(l as u32, g as u32);
        self.attach(g);
    }

    /// Take group `g` (no weight left) out of its level and its path's groups, to the
    /// free list.
    fn drop_group(&mut self, g: usize) {
        let l = self.gh[g].lvl as usize;
        if self.strict_zero() && self.gh[g].seen == self.lv[l].zid {
            self.lv[l].memo[0].zn -= 1;
        }
        self.p_grp[self.gh[g].path as usize].remove(l as u32);
        self.detach(g);
        {
            let lvl = &mut self.lv[l];
            let i = self.gh[g].lpos as usize;
            let last = *lvl.groups.last().unwrap();
            lvl.groups.swap_remove(i);
            if i < lvl.groups.len() {
                self.gh[last as usize].lpos = i as u32;
            }
            lvl.dirty = true;
        }
        self.gh[g].lpos = NONE;
        self.gh[g].cls = NONE;
        self.free_g.push(g as u32);
        if self.lv[l].groups.is_empty() {
            self.drop_level(l);
        }
    }

    /// Group `g` gains `d` flows (+1 or -1): its level's per-link weights follow.
    #[inline]
    fn resize(&mut self, g: usize, d: f64) {
        let w = self.width;
        let l = self.gh[g].lvl as usize;
        self.gh[g].w += d;
        // a group at rate 0 keeps its level's weights at rate 0 (`zsub`) exact; a group
        // made since the last fill marks its links there, if not at rate 0 (`zero_made`)
        let gseen = self.gh[g].seen;
        let zero = self.strict_zero()
            && (self.gh[g].seen == self.lv[l].zid || self.gh[g].seen == NEW_GROUP);
        let lvl = &mut self.lv[l];
        lvl.dirty = true;
        // the set-ups it is an item of keep their weights (an empty group stays in
        // them at weight 0 and is skipped)
        let set = self.gh[g].set;
        let inset = [0, 1].map(|x| lvl.memo[x].setup_ok && set[x] == lvl.memo[x].setup_ep);
        for &lk in glinks(&self.gh, &self.inp.plinks, w, g) {
            if lk != NONE {
                let slot = lvl.lslot[lk as usize] as usize;
                lvl.lw[slot] += d;
                if zero && gseen != NEW_GROUP {
                    lvl.memo[0].zsub[slot] += d;
                }
                // (a group at rate 0 changes no link's input to the fill: its weight
                // comes and goes with `zsub`; a new group's links are marked by the fill)
                if self.pol != Policy::Aalo && !zero && !lvl.lchg[lk as usize] {
                    lvl.lchg[lk as usize] = true;
                    lvl.chg.push(lk);
                }
                for x in 0..2 {
                    if inset[x] {
                        lvl.memo[x].iw[slot] += d;
                    }
                }
            }
        }
    }

    /// Put flow `f` in its group of level slot `l` (its bundle is unclassed).
    fn join(&mut self, f: usize, l: usize) {
        let g = self.group_of(l, self.inp.f_path[f]);
        self.f_grp[f] = g as u32;
        self.resize(g, 1.0);
    }

    /// Take flow `f` out of its group (a group is dropped with its last flow).
    fn leave(&mut self, f: usize) {
        let g = self.f_grp[f] as usize;
        self.f_grp[f] = NONE;
        self.resize(g, -1.0);
        if self.gh[g].w == 0.0 {
            self.drop_group(g);
        }
    }

    /// Move owner `o`'s active flows to level `key` (a priority change): its bundles
    /// leave their classes keeping their bytes, and are classed again after the fill.
    #[inline(never)]
    pub fn move_owner(&mut self, o: usize, key: u64, t: f64) {
        if self.o_key[o] == key {
            return;
        }
        self.o_key[o] = key;
        count!(n::OWNER_MOVES, 1);
        count!(n::FLOW_MOVES, self.o_flows[o].len());
        let buns = std::mem::take(&mut self.o_buns[o]);
        for (i, &b) in buns.iter().enumerate() {
            self.prefetch_unclass(&buns, i);
            let b = b as usize;
            if self.bn[b].cls != NONE {
                self.unclass_bundle(b, t);
            }
            self.mark_pending(b);
        }
        self.o_buns[o] = buns;
        let l = self.level_of(key);
        let fl = std::mem::take(&mut self.o_flows[o]);
        for (i, &f) in fl.iter().enumerate() {
            self.prefetch_move(&fl, i, l);
            let f = f as usize;
            self.leave(f);
            self.join(f, l);
        }
        self.o_flows[o] = fl;
    }

    /// Before moving the `i`-th of the flows `fl` to level slot `l`: bring near what
    /// the moves of the flows a few places ahead will read (their group and path, the
    /// group they leave, its path's groups by level and the group they join), in stages
    /// so that each stage's addresses come from lines the stage before brought. A move
    /// is a chain of cache misses on arrays indexed by flow and group, and the moves of
    /// one unit are independent.
    #[inline(always)]
    fn prefetch_move(&self, fl: &[u32], i: usize, l: usize) {
        if let Some(&f) = fl.get(i + 3 * AHEAD) {
            prefetch(&self.f_grp, f as usize);
            prefetch(&self.inp.f_path, f as usize);
        }
        if let Some(&f) = fl.get(i + 2 * AHEAD) {
            let g = self.f_grp[f as usize] as usize;
            prefetch(&self.gh, g);
            prefetch(&self.p_grp, self.inp.f_path[f as usize] as usize);
        }
        if let Some(&f) = fl.get(i + AHEAD) {
            let g = self.f_grp[f as usize] as usize;
            let h = &self.gh[g];
            if h.w == 1.0 {
                // its group goes with it: its place in its level's lists
                prefetch(&self.g_adjpos, g * self.width);
                prefetch(&self.lv[h.lvl as usize].groups, h.lpos as usize);
            }
            let g2 = self.p_grp[self.inp.f_path[f as usize] as usize].find(l as u32);
            if g2 != NONE {
                prefetch(&self.gh, g2 as usize);
            }
        }
    }

    /// Before taking the `i`-th of an owner's bundles `buns` out of its class: the
    /// bundles a few places ahead (their class, owner and flow count, key, heap place and
    /// cell), then their cells. An owner's bundles lie anywhere in the per-bundle arrays
    /// (perf: 12 % of `move_owner` stalled on each bundle's first loads).
    #[inline(always)]
    fn prefetch_unclass(&self, buns: &[u32], i: usize) {
        if let Some(&b) = buns.get(i + 2 * AHEAD) {
            let b = b as usize;
            prefetch(&self.bn, b);
        }
        if let Some(&b) = buns.get(i + AHEAD) {
            let c = self.bn[b as usize].cell;
            if c != NONE {
                prefetch(&self.ce, c as usize);
            }
        }
    }

    // -- releases and completions --------------------------------------------------
    #[inline(never)]
    fn release(&mut self, rg: usize, t: f64, rel: &mut BinaryHeap<Reverse<Key>>) {
        let mut zero: Vec<u32> = Vec::new();
        // flows of one owner and size released together form one bundle
        let mut made: Vec<(u32, u64, u32)> = Vec::new();
        for i in self.g_flows_ptr[rg]..self.g_flows_ptr[rg + 1] {
            let f = self.rg_flows[i] as usize;
            let u = self.inp.f_unit[f] as usize;
            self.n_seen[u] += 1.0;
            let c = self.inp.f_cof[f] as usize;
            if !self.c_started[c] {
                self.c_started[c] = true;
                enlist(&mut self.act_c, &mut self.c_pos, c);
            }
            let size = self.inp.f_size[f];
            if size <= self.tol(f) {
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
            let p = self.inp.f_path[f] as usize;
            enlist(&mut self.p_flows[p], &mut self.f_ppos, f);
            let l = self.level_of(self.o_key[o]);
            self.join(f, l);
            let sb = size.to_bits();
            let b = match made.iter().find(|m| m.0 == o as u32 && m.1 == sb) {
                Some(m) => m.2 as usize,
                None => {
                    let b = self.new_bundle(o, self.tol(f));
                    self.bn[b].key = size;
                    self.mark_pending(b);
                    made.push((o as u32, sb, b as u32));
                    b
                }
            };
            self.bundle_add(b, f);
        }
        if !zero.is_empty() {
            self.complete(&zero, t, rel);
        }
    }

    /// Flows already out of their groups.
    #[inline(never)]
    fn complete(&mut self, fl: &[u32], t: f64, rel: &mut BinaryHeap<Reverse<Key>>) {
        let mut done_groups: Vec<usize> = Vec::new();
        self.n_done += fl.len() as u64;
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

    /// Complete every bundle due at `t` (the previous event at `t_prev`): due when the
    /// bytes its flows have left are within their tolerance, or their finish time is
    /// within 1e-12 of the interval or not after `t` (the Python engine's rule).
    #[inline(never)]
    fn completions(&mut self, t: f64, t_prev: f64, fin: &mut Vec<u32>) {
        let dt = t - t_prev;
        let horizon = t + dt * 1e-12 + 1e-9 * (1.0 + t.abs());
        let mut cand: Vec<u32> = Vec::new();
        self.cl_tb.at_most(horizon, &mut cand);
        let mut due_b: Vec<u32> = Vec::new();
        let mut look: Vec<u32> = Vec::new();
        for &k in &cand {
            let k = k as usize;
            let r = self.cl_rate[k];
            if !(r > 0.0) {
                continue;
            }
            let bound = self.clock(k, horizon) + self.maxtol;
            look.clear();
            self.cl_heap[k].at_most(bound, &mut look);
            let x = self.clock(k, t);
            let xp = self.clock(k, t_prev);
            for &b in &look {
                let key = self.bn[b as usize].key;
                let tf = (key - xp) / r;
                let at = self.cl_t0[k] + (key - self.cl_x0[k]) / r;
                if due(key - x, self.bn[b as usize].tol, tf, at, t_prev, t) {
                    due_b.push(b);
                }
            }
        }
        count!(n::BUNDLES_DONE, due_b.len());
        for &b in &due_b {
            let b = b as usize;
            let k = self.bn[b].cls as usize;
            self.cl_heap[k].remove(b as u32, &mut self.bn[..]);
            self.mark_retime(k);
            let o = self.bn[b].own as usize;
            let fl = std::mem::take(&mut self.b_flows[b]);
            self.cell_sub(self.bn[b].cell, k, fl.len() as u32);
            self.bn[b].cell = NONE;
            self.owner_move(o, fl.len() as u32, self.cl_rate[k], 0.0);
            for &f in &fl {
                let f = f as usize;
                count!(n::FLOWS_DONE, 1);
                self.f_bun[f] = NONE;
                self.leave(f);
                let p = self.inp.f_path[f] as usize;
                unlist(&mut self.p_flows[p], &mut self.f_ppos, f);
                self.drop_owner_flow(f, o);
                fin.push(f as u32);
            }
            self.b_flows[b] = fl;
            self.b_flows[b].clear();
            self.bn[b].n = 0;
            self.bn[b].cls = NONE;
            self.free_bundle(b);
        }
        self.flush_retime();
    }

    // -- the loop ----------------------------------------------------------------
    pub fn run(&mut self, prog: &mut Progress) -> Result<(), String> {
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
            self.apply_fill(t);
            self.flush_owners(t);
            self.after_fill(t);
            self.flush_retime();
            let t_s = self.next_sched_event(t);
            let t_c = self.cl_ta.min();
            let t_rel = rel.peek().map_or(f64::INFINITY, |r| r.0 .0);
            let t_next = t_c.min(t_rel).min(t_s);
            if !t_next.is_finite() {
                return Err(format!(
                    "t={t:.6}s: {} active owners get no bandwidth and no event is due",
                    self.act_o.len()
                ));
            }
            #[cfg(feature = "counts")]
            {
                let kind = if t_next == t_c {
                    n::EV_DONE
                } else if t_next == t_rel {
                    n::EV_REL
                } else if self.pol == Policy::Stream && t_next == self.min_starve() {
                    n::EV_STARVE
                } else {
                    n::EV_CROSS
                };
                count!(kind, 1);
                let gap = t_next - t;
                for (i, th) in [1e-9, 1e-6, 1e-4, 1e-3, 1e-2].iter().enumerate() {
                    if gap < *th {
                        count!(n::GAP0 + i, 1);
                    }
                }
                count!(n::STARVING_SUM, self.starving.len());
                count!(n::COFLOWS_SUM, self.act_c.len());
            }
            let t_prev = t;
            t = t_next;
            self.events += 1;
            count!(n::EVENTS, 1);
            #[cfg(feature = "counts")]
            if crate::counts::at_event(self.events) {
                return Err(format!("counts: stopped at event {}, the end of the window", self.events));
            }
            count!(n::OWNERS_SUM, self.act_o.len());
            count!(n::GROUPS_SUM, self.gh.len() - self.free_g.len());
            #[cfg(feature = "counts")]
            {
                let nf: usize = self.act_o.iter().map(|&o| self.o_flows[o as usize].len()).sum();
                count!(n::FLOWS_SUM, nf);
            }
            count!(n::CLASSES_SUM, self.cl_lvl.len() - self.free_cl.len());
            #[cfg(feature = "counts")]
            {
                let nb: usize = self.cl_heap.iter().map(|h| h.len()).sum();
                count!(n::BUNDLES_SUM, nb);
            }
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
            prog.tick(t, self.n_done)?;
        }
        prog.end(t, self.n_done)?;
        Ok(())
    }
}

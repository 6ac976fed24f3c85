//! What the event loop runs: the flows and their coflows, units and release groups
//! (`Input`), and the scheduler with its parameters (`Params`).

use std::cmp::Ordering;

/// Marks "none" in index arrays (padding link, no group, not listed).
pub const NONE: u32 = u32::MAX;
/// Residual capacity below this (bytes/s) counts as none, in both engines.
pub const SNAP: f64 = 1e-3;
pub const MIB: f64 = 1048576.0;
/// A flow whose remaining bytes are within TOL_REL x size + TOL_BYTES is complete
/// (the Python engine's `TOL_REL`, `TOL_BYTES`).
pub const TOL_REL: f64 = 1e-12;
pub const TOL_BYTES: f64 = 1e-6;

/// The Python engine's completion rule (`engine.py` `run`), one home for both loops: at
/// `t` (previous event `t_prev`) a flow is due when the bytes it has `left` are within
/// its tolerance `tol`, its finish `tf` after `t_prev` is within 1e-12 of the interval,
/// or its finish instant `at` is not after `t` (a finish closer than one ulp of t
/// leaves t where it was).
#[inline]
pub fn due(left: f64, tol: f64, tf: f64, at: f64, t_prev: f64, t: f64) -> bool {
    left <= tol || tf <= (t - t_prev) * (1.0 + 1e-12) || at <= t
}

/// A heap entry ordered by its value (total order on f64), then by its id.
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

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Policy {
    Fs,
    FsStatic,
    Stream,
    Aalo,
    Baraat,
    Varys,
}

/// How a `stream` receiver learns its peers' bytes (Information-Relay, 004 §III-C).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Relay {
    /// through the senders it shares with them, after the information delay
    Decentralized,
    /// the coflow's whole byte count at every event (central view)
    Oracle,
    None,
}

/// Weighted-Priority weights are computed per unit by the caller (`Input::u_w`).
#[derive(Clone, Debug)]
pub struct Params {
    pub policy: Policy,
    /// K demotion thresholds (bytes), the last one inf
    pub tau: Vec<f64>,
    pub alpha: f64,
    pub beta: f64,
    pub starve_s: f64,
    pub relay: Relay,
    pub info_delay_s: f64,
    /// Baraat's heavy-coflow threshold (bytes)
    pub heavy_bytes: f64,
}

/// An owner's pending rate change at this event, its flows with a rate, and whether
/// it is listed for `flush_owners`.
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub struct OAcc {
    pub pend: f64,
    pub npos: u32,
    pub dirty: bool,
}

/// Flows, units, coflows and release groups, all indices dense.
pub struct Input {
    pub cap: Vec<f64>,    // bytes/s per link
    pub plinks: Vec<u32>, // n_paths * width, NONE = padding
    pub width: usize,
    pub f_path: Vec<u32>,
    pub f_unit: Vec<u32>,
    pub f_cof: Vec<u32>,
    pub f_group: Vec<u32>,
    pub f_src: Vec<u32>, // sender node (Information-Relay hubs)
    pub f_size: Vec<f64>,
    pub u_cof: Vec<u32>,
    pub u_group: Vec<u32>,
    pub u_w: Vec<f64>,
    pub c_rank: Vec<u32>, // FIFO rank by arrival
    pub g_arrival: Vec<f64>,
    pub g_deps: Vec<u32>,      // number of groups to wait for
    pub g_par_ptr: Vec<usize>, // CSR: parents of each group
    pub g_par: Vec<u32>,
}

/// `ptr, ids`: the ids i with `keys[i] == k` are `ids[ptr[k]..ptr[k + 1]]`, in order.
pub fn csr(n: usize, keys: &[u32]) -> (Vec<usize>, Vec<u32>) {
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

/// Remove `x` from `list` in O(1) (swap with the last), keeping `pos[x]` = index in
/// `list` (NONE when absent) for every listed id.
pub fn unlist(list: &mut Vec<u32>, pos: &mut [u32], x: usize) {
    let i = pos[x] as usize;
    let last = *list.last().unwrap();
    list.swap_remove(i);
    if i < list.len() {
        pos[last as usize] = i as u32;
    }
    pos[x] = NONE;
}

/// Append `x` to `list`, recording its index in `pos`.
pub fn enlist(list: &mut Vec<u32>, pos: &mut [u32], x: usize) {
    pos[x] = list.len() as u32;
    list.push(x as u32);
}

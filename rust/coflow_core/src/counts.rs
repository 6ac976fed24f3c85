//! Counts of the engine's work, for measuring where an event's cost goes: compiled
//! only with the `counts` feature (`pip install ./rust/coflow_core
//! --config-settings=build-args=--features=counts`); in the normal build `count!` is
//! nothing and `counts()` returns no entries.
#![cfg_attr(not(feature = "counts"), allow(dead_code))]

/// What is counted, in `counts()` order.
pub const NAMES: [&str; N] = [
    "events",
    "owner moves (level changes)",
    "flow moves between levels",
    "level relabels",
    "level fills",
    "level fills skipped (same input)",
    "fill visits (groups fixed)",
    "class rate changes",
    "owner cells visited by class rate changes",
    "group class changes",
    "flows moved between bundles (group class changes)",
    "bundles classed (new or moved)",
    "bundles made by splits",
    "bundles completed",
    "groups made",
    "active owners (sum over events)",
    "groups (sum over events)",
    "bundles in classes (sum over events)",
    "classes (sum over events)",
    "starvation raises",
    "flows completed",
    "fill visits at links with nothing left (rate 0)",
    "fill visits replayed (groups of a kept round)",
    "active flows (sum over events)",
    "rate-0 groups of a full pass: a group changed on a link with nothing left",
    "rate-0 groups of a full pass: the last fill's not kept",
    "rate-0 groups of a full pass: a link went to nothing left or back",
    "rate-0 groups of a full pass: no fill to resume",
    "events: a completion next",
    "events: a release next",
    "events: a starvation timer next",
    "events: a demotion crossing next",
    "starving units (sum over events)",
    "active coflows (sum over events)",
    "level fills from scratch (not resumed)",
    "groups of the fills from scratch",
    "resumed fills: rounds of the last fill",
    "resumed fills: rounds replayed",
    "resumed fills: groups of the level",
    "gap to next event < 1e-9 s",
    "gap < 1e-6 s",
    "gap < 1e-4 s",
    "gap < 1e-3 s",
    "gap < 1e-2 s",
    "groups of the levels filled, level key 0",
    "groups of the levels filled, level key 1",
    "groups of the levels filled, level key 2",
    "groups of the levels filled, level key 3+",
];

/// How many counters there are.
pub const N: usize = 48;

pub const EVENTS: usize = 0;
pub const OWNER_MOVES: usize = 1;
pub const FLOW_MOVES: usize = 2;
pub const RELABELS: usize = 3;
pub const FILLS: usize = 4;
pub const FILL_SKIPS: usize = 5;
pub const FILL_VISITS: usize = 6;
pub const CLASS_RATES: usize = 7;
pub const CLASS_RATE_BUNDLES: usize = 8;
pub const GROUP_CLASS: usize = 9;
pub const REBUNDLED: usize = 10;
pub const CLASSED: usize = 11;
pub const SPLITS: usize = 12;
pub const BUNDLES_DONE: usize = 13;
pub const GROUPS_MADE: usize = 14;
pub const OWNERS_SUM: usize = 15;
pub const GROUPS_SUM: usize = 16;
pub const BUNDLES_SUM: usize = 17;
pub const CLASSES_SUM: usize = 18;
pub const RAISES: usize = 19;
pub const FLOWS_DONE: usize = 20;
pub const ZERO_VISITS: usize = 21;
pub const FILL_REPLAYED: usize = 22;
pub const FLOWS_SUM: usize = 23;
pub const ZP_LINK: usize = 24;
pub const ZP_NONE: usize = 25;
pub const ZP_FLIP: usize = 26;
pub const ZP_NEW: usize = 27;
pub const EV_DONE: usize = 28;
pub const EV_REL: usize = 29;
pub const EV_STARVE: usize = 30;
pub const EV_CROSS: usize = 31;
pub const STARVING_SUM: usize = 32;
pub const COFLOWS_SUM: usize = 33;
pub const SCRATCH: usize = 34;
pub const SCRATCH_G: usize = 35;
pub const RES_ROUNDS: usize = 36;
pub const RES_KEPT: usize = 37;
pub const RES_G: usize = 38;
pub const GAP0: usize = 39;
pub const KEYV: usize = 44;

#[cfg(feature = "counts")]
pub static C: [std::sync::atomic::AtomicU64; N] = [const { std::sync::atomic::AtomicU64::new(0) }; N];

/// The counters at the first and the last event of the window
/// `STREAMBAND_COUNTS_WINDOW=a,b` (events a..b of a run, which stops at b so that a long
/// run's window is read without running the rest).
#[cfg(feature = "counts")]
static W: [[std::sync::atomic::AtomicU64; N]; 2] =
    [const { [const { std::sync::atomic::AtomicU64::new(0) }; N] }; 2];

#[cfg(feature = "counts")]
fn window() -> Option<(u64, u64)> {
    static WIN: std::sync::OnceLock<Option<(u64, u64)>> = std::sync::OnceLock::new();
    *WIN.get_or_init(|| {
        let v = std::env::var("STREAMBAND_COUNTS_WINDOW").ok()?;
        let (a, b) = v.split_once(',')?;
        Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
    })
}

/// At event `ev`: keep the counters if it starts or ends the window; true if it ends
/// it (the run stops there).
#[cfg(feature = "counts")]
pub fn at_event(ev: u64) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    let Some((a, b)) = window() else { return false };
    for (w, e) in [(0, a), (1, b)] {
        if ev == e {
            for i in 0..C.len() {
                W[w][i].store(C[i].load(Relaxed), Relaxed);
            }
        }
    }
    ev == b
}

/// Add `n` to counter `i` (nothing without the `counts` feature), as a load and a
/// store: a `fetch_add` is a locked add on x86, a full barrier that would stall the loops
/// it counts, so a counts build would not profile as the normal one does. Runs in
/// concurrent threads of one process may lose increments of each other's.
#[macro_export]
macro_rules! count {
    ($i:expr, $n:expr) => {
        #[cfg(feature = "counts")]
        {
            let c = &$crate::counts::C[$i];
            c.store(c.load(std::sync::atomic::Ordering::Relaxed) + $n as u64,
                    std::sync::atomic::Ordering::Relaxed);
        }
        #[cfg(not(feature = "counts"))]
        let _ = $i;
    };
}

/// The counts since the last call (and reset them), then those of the window if one
/// is set; empty without the feature.
pub fn take() -> Vec<(String, u64)> {
    #[cfg(feature = "counts")]
    {
        use std::sync::atomic::Ordering::Relaxed;
        let mut out: Vec<(String, u64)> =
            NAMES.iter().zip(C.iter()).map(|(n, c)| (n.to_string(), c.swap(0, Relaxed))).collect();
        if let Some((a, b)) = window() {
            for (i, n) in NAMES.iter().enumerate() {
                let d = W[1][i].swap(0, Relaxed).saturating_sub(W[0][i].swap(0, Relaxed));
                out.push((format!("{n}, events {a}..{b}"), d));
            }
        }
        out
    }
    #[cfg(not(feature = "counts"))]
    {
        Vec::new()
    }
}

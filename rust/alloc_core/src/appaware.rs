//! App-aware allocation: 000 Algorithm 1 (problems (3) and (4) of §IV-B on every
//! bottlenecked uplink and downlink, the internal-link scaling of lines 24-29) and the
//! backfill pass of 000 §VI-C. `streamband.alloc.appaware` holds the numpy reference;
//! every step below mirrors one of its lines, in its arithmetic order.

use std::cmp::Ordering;

use crate::backfill::backfill;
use crate::common::{finish, np_max, np_min, table, table_from, Csr, Ix, Laps, Links};

const UPLINK: i8 = 0;
const DOWNLINK: i8 = 1;
const INTERNAL: i8 = 2;
/// A link is bottlenecked when its flows' demands reach this share of capacity.
const BOTTLENECK_FRAC: f64 = 1.0 - 1e-3;
/// ρ_f <= 0 is replaced by RHO_EPS x the largest ρ on the link (eq. 4).
const RHO_EPS: f64 = 1e-9;

/// The 5-metric flow state of 000 §IV-A1 (bytes), one value per flow.
pub struct State<'a> {
    pub ls0: &'a [f64],
    pub ls1: &'a [f64],
    pub lr0: &'a [f64],
    pub lr1: &'a [f64],
    pub sent: &'a [f64],
    pub dt: f64,
}

/// numpy's sort order for floats: ascending, NaN last, -0.0 equal to 0.0.
fn cmp_np(a: f64, b: f64) -> Ordering {
    if a < b {
        Ordering::Less
    } else if a > b {
        Ordering::Greater
    } else {
        a.is_nan().cmp(&b.is_nan())
    }
}

/// Per link: its kind (0..2, 3 none) and, in bit 2, whether it is bottlenecked.
const B: u8 = 4;
const UP_B: u8 = B | UPLINK as u8;
const DN_B: u8 = B | DOWNLINK as u8;
const IN_B: u8 = B | INTERNAL as u8;

/// 000 Algorithm 1 then the backfill of §VI-C; `out` gets one rate (bit/s) per flow.
pub fn appaware<I: Ix>(
    r: &Csr<I>,
    cap: &[f64],
    kind: &[i8],
    s: &State,
    given_bott: Option<&[u8]>,
    out: &mut [f64],
) {
    let mut laps = Laps::start();
    let nf = r.n_flows();
    let nl = r.n_links;
    let dt = s.dt;
    // D_f of eq. (3): (V + 2 L^s(t+Δt) - L^s(t)) bytes over Δt, in bit/s
    let demand: Vec<f64> = table_from(nf, |f| {
        8.0 * np_max(s.sent[f] + 2.0 * s.ls1[f] - s.ls0[f], 0.0) / dt
    });
    let rho_of = |f: usize| (s.sent[f] - s.lr1[f] + s.lr0[f]) / dt; // ρ_f of eq. (4), bytes/s

    // one pass over R for line 11 and lines 17-21: the load R^T D (when the bottlenecked
    // links are not given), per uplink Σ D and its flows (problem (3)), per downlink its
    // flows and their largest ρ (problem (4)); every link of a kind, as bottlenecked or
    // not is known only at the end (the sums of one link are the same either way)
    let detect = given_bott.is_none();
    let mut load = Links(table(if detect { nl } else { 0 }, 0.0));
    let mut total = Links(table(nl, 0.0));
    let mut count = Links(table(nl, 0u32));
    let mut dn = Downlinks::new(nl);
    for (f, &df) in demand.iter().enumerate() {
        let rho = rho_of(f);
        for &l in r.row(f) {
            let l = l.ix();
            if detect {
                load[l] += df;
            }
            match kind[l] {
                UPLINK => {
                    total[l] += np_max(df, 0.0);
                    count[l] += 1;
                }
                DOWNLINK => dn.count(l, rho),
                _ => {}
            }
        }
    }
    // line 11: bottlenecked links; only the bottlenecked downlinks' flows are placed
    let bott: Vec<bool> = match given_bott {
        Some(b) => table_from(nl, |l| b[l] != 0),
        None => table_from(nl, |l| load.0[l] >= cap[l] * BOTTLENECK_FRAC),
    };
    drop(load);
    let cls = Links(table_from(nl, |l| {
        let k = if (UPLINK..=INTERNAL).contains(&kind[l]) {
            kind[l] as u8
        } else {
            3
        };
        if k == DOWNLINK as u8 && !bott[l] {
            dn.forget(l);
        }
        k | if bott[l] { B } else { 0 }
    }));
    laps.lap("demand + pass1 load/up/dn count + bott");
    // x^u_f = min over f's bottlenecked uplinks of C D_f / Σ D; the downlinks' flows placed
    dn.start_placing();
    let mut x = table(nf, f64::INFINITY);
    for (f, xf) in x.iter_mut().enumerate() {
        for &l in r.row(f) {
            let l = l.ix();
            match cls[l] {
                UP_B => {
                    let share = if total[l] > 0.0 {
                        cap[l] * np_max(demand[f], 0.0) / total[l]
                    } else {
                        cap[l] / count[l] as f64
                    };
                    *xf = np_min(*xf, share);
                }
                DN_B => dn.place(l, f, rho_of(f), s.lr1[f], dt),
                _ => {}
            }
        }
    }
    drop((total, count));
    laps.lap("pass2 up shares/dn place");
    let xd = dn.solve(cap, nf);
    laps.lap("dn solve");

    // line 22: x_f = min(x^u_f, x^d_f), a flow on neither starts from its demand;
    // line 25: D(c_k) of the bottlenecked internal links
    let mut d_c = Links(table(nl, 0.0));
    let mut any_ic = false;
    for f in 0..nf {
        let v = np_min(x[f], xd[f]);
        let v = if v.is_finite() { v } else { demand[f] };
        x[f] = v;
        for &l in r.row(f) {
            let l = l.ix();
            if cls[l] == IN_B {
                d_c[l] += v;
                any_ic = true;
            }
        }
    }
    drop(xd);
    laps.lap("line22 + d_c");

    // lines 24-29: scale each over-full bottlenecked internal link to C (min over a
    // flow's links); then the load R^T x for the capacity cap of eq. (1a)
    if any_ic {
        for (l, v) in d_c.0.iter_mut().enumerate() {
            *v = if *v > cap[l] { cap[l] / *v } else { 1.0 };
        }
    }
    let factor = d_c;
    let mut load = Links(table(nl, 0.0));
    for (f, xf) in x.iter_mut().enumerate() {
        let row = r.row(f);
        if any_ic {
            let mut m = f64::INFINITY;
            let mut seen = false;
            for &l in row {
                let l = l.ix();
                if cls[l] == IN_B {
                    m = np_min(m, factor[l]);
                    seen = true;
                }
            }
            if seen {
                *xf *= m;
            }
        }
        for &l in row {
            load[l.ix()] += *xf;
        }
    }
    drop(factor);
    laps.lap("ic scale + load");

    // R·x <= C on every link (1a): flows take the smallest C_l / load_l of their links;
    // the load is summed again as they do (the backfill starts from it)
    let mut over = false;
    let mut scale = Links(table(nl, 1.0));
    for (l, &ld) in load.0.iter().enumerate() {
        if ld > cap[l] {
            scale.0[l] = cap[l] / ld;
            over = true;
        }
    }
    if over {
        load.0.fill(0.0);
        for (f, xf) in x.iter_mut().enumerate() {
            let row = r.row(f);
            let mut m = f64::INFINITY;
            for &l in row {
                m = np_min(m, scale[l.ix()]);
            }
            if !row.is_empty() {
                *xf *= m;
            }
            for &l in row {
                load[l.ix()] += *xf;
            }
        }
    }
    drop(scale);
    laps.lap("enforce cap");
    // 000 §VI-C: leftover capacity of bottlenecked links, in proportion to x
    backfill(r, cap, &mut x, &|l| bott[l], load.0);
    laps.lap("backfill");
    finish(r, &x, out);
    laps.lap("finish");
}

/// Problem (4) on every bottlenecked downlink: its flows water-filled to a common drain
/// time T, x_f = max(0, 8 (T ρ_f - L^r_f(t+Δt)) / Δt) = a_f T - b_f, with T such that
/// Σ x = C. Flows are counted, then placed in one bucket per link, then each link solved.
struct Downlinks {
    head: Vec<u32>, // bucket l is ent[head[l]..head[l + 1]]
    fill: Vec<u32>,
    rmax: Vec<f64>,                 // largest ρ > 0 on the link, 0 if none
    ent: Vec<(f64, f64, f64, u32)>, // (t = L^r / ρ, a = 8 ρ / Δt, b = 8 L^r / Δt, flow)
}

impl Downlinks {
    fn new(nl: usize) -> Self {
        Downlinks {
            head: table(nl + 1, 0),
            fill: Vec::new(),
            rmax: table(nl, 0.0),
            ent: Vec::new(),
        }
    }

    fn count(&mut self, l: usize, rho: f64) {
        self.head[l + 1] += 1;
        if rho > 0.0 {
            self.rmax[l] = np_max(self.rmax[l], rho);
        }
    }

    /// Link l is not bottlenecked after all: none of its flows is placed.
    fn forget(&mut self, l: usize) {
        self.head[l + 1] = 0;
        self.rmax[l] = 0.0;
    }

    fn start_placing(&mut self) {
        let nl = self.rmax.len();
        for l in 0..nl {
            self.head[l + 1] += self.head[l];
        }
        self.fill = table_from(nl, |l| self.head[l]);
        self.ent = table(self.head[nl] as usize, (0.0, 0.0, 0.0, 0));
    }

    /// Flow f on downlink l, in flow order (so each bucket is in flow order).
    fn place(&mut self, l: usize, f: usize, rho: f64, lr1: f64, dt: f64) {
        let rmax = self.rmax[l];
        // ρ <= 0 (NaN too): RHO_EPS x the link's largest ρ; every flow idle: equal split
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let mut rho = if !(rho > 0.0) { RHO_EPS * rmax } else { rho };
        let lr1 = if rmax <= 0.0 {
            rho = 1.0;
            0.0
        } else {
            np_max(lr1, 0.0)
        };
        let i = self.fill[l] as usize;
        self.fill[l] += 1;
        self.ent[i] = (lr1 / rho, 8.0 * rho / dt, 8.0 * lr1 / dt, f as u32);
    }

    /// x^d per flow: the min over its bottlenecked downlinks, inf for flows on none.
    fn solve(mut self, cap: &[f64], nf: usize) -> Vec<f64> {
        let mut xd = table(nf, f64::INFINITY);
        // numpy's segmented cumsum: one cumsum over every link's entries in (link, t)
        // order, less its value before each link's first entry (c[first] - v[first])
        let (mut ca, mut cb) = (0.0f64, 0.0f64);
        let (mut sa, mut sb) = (0.0f64, 0.0f64);
        let mut levels: Vec<(usize, f64, f64)> = Vec::new(); // (link, Σa, Σb) per bucket
        let mut unmet: Vec<usize> = Vec::new(); // buckets with no breakpoint below C
        for (l, w) in self.head.windows(2).enumerate() {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            if lo == hi {
                continue;
            }
            let bucket = &mut self.ent[lo..hi];
            bucket.sort_by(|p, q| cmp_np(p.0, q.0)); // stable, as numpy's lexsort
            let (a0, b0) = (bucket[0].1, bucket[0].2);
            let (base_a, base_b) = ((ca + a0) - a0, (cb + b0) - b0);
            let mut k: Option<(f64, f64)> = None; // Σa, Σb at the last breakpoint with Σx <= C
            for e in bucket.iter() {
                ca += e.1;
                cb += e.2;
                (sa, sb) = (ca - base_a, cb - base_b);
                if e.0 * sa - sb <= cap[l] {
                    k = Some((sa, sb));
                }
            }
            if k.is_none() {
                unmet.push(levels.len());
            }
            let (a, b) = k.unwrap_or((f64::NAN, f64::NAN));
            levels.push((l, a, b));
        }
        // numpy indexes such a link's breakpoint with -1: the last entry of all links
        for i in unmet {
            (levels[i].1, levels[i].2) = (sa, sb);
        }
        for (l, a, b) in levels {
            let level = (cap[l] + b) / a;
            for e in &self.ent[self.head[l] as usize..self.head[l + 1] as usize] {
                let v = np_max(e.1 * level - e.2, 0.0);
                let f = e.3 as usize;
                xd[f] = np_min(xd[f], v);
            }
        }
        xd
    }
}

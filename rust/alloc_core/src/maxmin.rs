//! Max-min fair sharing with demands (the TCP model, 000 §I and §VII), by the rounds of
//! `streamband.alloc.maxmin.maxmin_rates_numpy`: per round every link's fair level is
//! residual / unfrozen flows; a link freezes when no flow on it is bound lower
//! elsewhere (or by its demand), a flow freezes at its bound when one of its links
//! freezes or its demand is below every level it sees.
//!
//! Works on the unfrozen flows and their links only, the links renumbered densely;
//! frozen flows leave the others in order, so every sum runs in numpy's order.

use crate::common::{finish, np_max, np_min, prefetch, room, table, table_from, Csr, Ix, AHEAD};

/// Relative slack when comparing levels, so that equal levels freeze together.
const TIE: f64 = 1e-12;

/// Max-min fair rates (bit/s), each flow capped at `demand`; `out` gets one per flow.
pub fn maxmin<I: Ix>(r: &Csr<I>, cap: &[f64], demand: &[f64], out: &mut [f64]) {
    let nf = r.n_flows();
    let nl = r.n_links;
    let mut rates = table(nf, 0.0);
    // the flows that take capacity (demand > 0), their entries with dense link ids
    let mut map = table(nl, u32::MAX);
    let mut resid: Vec<f64> = room(nl);
    let mut cnt: Vec<u32> = room(nl);
    let mut flows: Vec<u32> = room(nf);
    let mut ptr: Vec<u32> = room(nf + 1);
    ptr.push(0);
    let mut ent: Vec<u32> = room(r.nnz());
    for (f, &df) in demand.iter().enumerate() {
        let row = r.row(f);
        if df.is_nan() || df <= 0.0 || row.is_empty() {
            continue;
        }
        for &l in row {
            let l = l.ix();
            if map[l] == u32::MAX {
                map[l] = resid.len() as u32;
                resid.push(cap[l]);
                cnt.push(0);
            }
            cnt[map[l] as usize] += 1;
            ent.push(map[l]);
        }
        flows.push(f as u32);
        ptr.push(ent.len() as u32);
    }
    drop(map);
    let n = resid.len();
    let mut dem: Vec<f64> = table_from(flows.len(), |k| demand[flows[k] as usize]);
    let mut bound: Vec<f64> = table(flows.len(), 0.0);
    let mut done: Vec<bool> = table(flows.len(), false);
    let mut level = table(n, 0.0);
    let mut bad = table(n, false); // a flow on the link is bound lower elsewhere
    let mut taken = table(n, 0.0); // Σ of the rates frozen on it this round
    let fair = |resid: f64, cnt: u32| {
        if cnt > 0 {
            np_max(resid, 0.0) / cnt as f64
        } else {
            f64::INFINITY
        }
    };
    for c in 0..n {
        level[c] = fair(resid[c], cnt[c]);
    }
    let mut w = flows.len();
    while w > 0 {
        // each flow's lowest level and its bound min(level, demand); flag the links on
        // which a flow is bound lower
        for k in 0..w {
            let (a, b) = (ptr[k] as usize, ptr[k + 1] as usize);
            let es = &ent[a..b];
            let mut fmin = f64::INFINITY;
            for (e, &c) in es.iter().enumerate() {
                if let Some(&ahead) = ent.get(a + e + AHEAD) {
                    prefetch(&level, ahead as usize);
                }
                fmin = np_min(fmin, level[c as usize]);
            }
            let bk = np_min(fmin, dem[k]);
            bound[k] = bk;
            done[k] = dem[k] <= fmin;
            for &c in es {
                bad[c as usize] |= bk < level[c as usize] * (1.0 - TIE);
            }
        }
        // a flow on a frozen link (no flow on it bound lower) freezes at its bound and
        // leaves its links' counts; the others stay, in order
        let (mut nw, mut we, mut a) = (0usize, 0usize, 0usize);
        for k in 0..w {
            let b = ptr[k + 1] as usize;
            if done[k] || ent[a..b].iter().any(|&c| !bad[c as usize]) {
                let bk = bound[k];
                rates[flows[k] as usize] = bk;
                for &c in &ent[a..b] {
                    taken[c as usize] += bk;
                    cnt[c as usize] -= 1;
                }
            } else {
                ent.copy_within(a..b, we);
                we += b - a;
                flows[nw] = flows[k];
                dem[nw] = dem[k];
                ptr[nw + 1] = we as u32;
                nw += 1;
            }
            a = b;
        }
        if nw == w {
            break; // no progress (only NaN inputs can do that): the rest keep 0
        }
        w = nw;
        for c in 0..n {
            resid[c] -= taken[c];
            taken[c] = 0.0;
            bad[c] = false;
            level[c] = fair(resid[c], cnt[c]); // the next round's
        }
    }
    finish(r, &rates, out);
}

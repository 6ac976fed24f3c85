//! The backfill pass of 000 §VI-C (`streamband.alloc.common.backfill`, whose numpy code
//! is the reference): leftover capacity of the bottlenecked links goes to their flows in
//! proportion to the previous pass's rates, only among flows that can still grow (on a
//! bottlenecked link, on no full link), in the same rounds as the numpy code.
//!
//! Works on the flows still in play only; dropping a blocked flow keeps the others in
//! order, so every sum runs in numpy's order. Links keep their numbers; their flags
//! (bottlenecked, full, cut) sit in one byte table, small enough to stay in cache, and
//! the per-link steps of a round visit only the links still crossed by a flow in play
//! (a list in link order, shrinking as flows drop).

use crate::common::{
    np_max, np_min, prefetch, room, table, table_from, Csr, Ix, Laps, Links, AHEAD,
};

const MAX_ITER: u32 = 50;
const RTOL: f64 = 1e-9;

/// Link flags: bottlenecked; full (nothing left); cut (this round's increases go over
/// what is left); sum redone (its increases are summed again after a cut).
const BOTT: u8 = 1;
const FULL: u8 = 2;
const CUT: u8 = 4;
const REDO: u8 = 8;

/// The backfill pass: `x` gets the increases; `is_bott` names the bottlenecked links,
/// `load` is R^T x.
pub fn backfill<I: Ix>(
    r: &Csr<I>,
    cap: &[f64],
    x: &mut [f64],
    is_bott: &dyn Fn(usize) -> bool,
    load: Vec<f64>,
) {
    let mut laps = Laps::start();
    let nl = r.n_links;
    let nf = r.n_flows();
    let mut top = 0.0;
    // per link: flags, (capacity left C - R^T x, Σ x of the growable flows on it)
    let mut flag = Links::<u8>(room(nl));
    let mut res_den = Links::<(f64, f64)>(room(nl));
    for l in 0..nl {
        let b = is_bott(l);
        if b {
            top = np_max(top, cap[l]);
        }
        let res = cap[l] - load[l];
        flag.0
            .push(if b { BOTT } else { 0 } | if res <= RTOL * cap[l] { FULL } else { 0 });
        res_den.0.push((res, 0.0));
    }
    let top = RTOL * top;
    drop(load);
    // the growable flows (on a bottlenecked link, on no full link) and their entries
    let mut flows: Vec<u32> = room(nf);
    let mut ptr: Vec<u32> = room(nf + 1);
    ptr.push(0);
    let mut ent: Vec<u32> = room(r.nnz());
    let mut cnt = Links(table(nl, 0u32)); // growable flows per link
    for f in 0..nf {
        let row = r.row(f);
        let mut any = 0u8;
        for &l in row {
            any |= flag.0[l.ix()];
        }
        if any & (BOTT | FULL) == BOTT {
            for &l in row {
                let l = l.ix();
                ent.push(l as u32);
                cnt.0[l] += 1;
            }
            flows.push(f as u32);
            ptr.push(ent.len() as u32);
        }
    }
    // the links in play (crossed by a growable flow), in link order
    let mut live: Vec<u32> = room(nl);
    live.extend((0..nl as u32).filter(|&c| cnt[c] > 0));
    laps.lap("bf setup");
    if flows.is_empty() {
        return;
    }
    let mut xc: Vec<f64> = table_from(flows.len(), |k| x[flows[k] as usize]);
    let mut inc: Vec<f64> = table(flows.len(), 0.0);
    let mut inc_load = Links(table(nl, 0.0));
    let mut factor = Links(table(nl, 1.0)); // of the cut links
    for _ in 0..MAX_ITER {
        // drop the flows blocked by a full link (the others keep their order), and sum
        // x of the growable flows on each bottlenecked link (den is 0 here)
        let (mut w, mut we, mut a) = (0usize, 0usize, 0usize);
        let mut dropped = false;
        for k in 0..flows.len() {
            let b = ptr[k + 1] as usize;
            if ent[a..b].iter().any(|&c| flag[c] & FULL != 0) {
                x[flows[k] as usize] = xc[k];
                for &c in &ent[a..b] {
                    cnt[c] -= 1;
                }
                dropped = true;
                a = b;
                continue;
            }
            let xf = xc[k];
            for e in a..b {
                if let Some(&ahead) = ent.get(e + AHEAD) {
                    prefetch(&res_den.0, ahead as usize);
                }
                let c = ent[e];
                ent[we] = c;
                we += 1;
                if flag[c] & BOTT != 0 {
                    res_den[c].1 += xf;
                }
            }
            flows[w] = flows[k];
            xc[w] = xf;
            ptr[w + 1] = we as u32;
            w += 1;
            a = b;
        }
        if dropped {
            live.retain(|&c| cnt[c] > 0);
        }
        laps.lap("bf A filter+den");
        flows.truncate(w);
        xc.truncate(w);
        inc.truncate(w);
        ptr.truncate(w + 1);
        if w == 0 {
            break;
        }
        // a flow's increase: its smallest share of a link's leftover, in proportion to x
        // (inc_load is 0 here)
        for k in 0..w {
            let (a, b) = (ptr[k] as usize, ptr[k + 1] as usize);
            let es = &ent[a..b];
            let xf = xc[k];
            let mut m = f64::INFINITY;
            let mut seen = false;
            for (e, &c) in es.iter().enumerate() {
                if let Some(&ahead) = ent.get(a + e + AHEAD) {
                    prefetch(&res_den.0, ahead as usize);
                    prefetch(&inc_load.0, ahead as usize);
                }
                if flag[c] & BOTT != 0 {
                    let (res, den) = res_den[c];
                    let share = if den > 0.0 {
                        res * xf / den
                    } else {
                        res / cnt[c] as f64
                    };
                    m = np_min(m, share);
                    seen = true;
                }
            }
            let v = if seen { m } else { 0.0 };
            inc[k] = v;
            for &c in es {
                inc_load[c] += v;
            }
        }
        laps.lap("bf B share");
        // cut increases down so that no link goes over capacity; a flow on no cut link
        // keeps its increase (x 1.0), so only the sums of the links of flows on a cut link
        // are redone, over all their flows in order
        let mut any_cut = false;
        for &c in &live {
            let (res, load) = (res_den[c].0, inc_load[c]);
            if load > res {
                factor[c] = res / load;
                flag[c] |= CUT;
                any_cut = true;
            }
        }
        if any_cut {
            for k in 0..w {
                let es = &ent[ptr[k] as usize..ptr[k + 1] as usize];
                if es.iter().any(|&c| flag[c] & CUT != 0) {
                    let mut m = f64::INFINITY;
                    for &c in es {
                        let fl = flag[c];
                        m = np_min(m, if fl & CUT != 0 { factor[c] } else { 1.0 });
                        if fl & REDO == 0 {
                            flag[c] = fl | REDO;
                            inc_load[c] = 0.0;
                        }
                    }
                    inc[k] *= m;
                }
            }
            for k in 0..w {
                let v = inc[k];
                for &c in &ent[ptr[k] as usize..ptr[k + 1] as usize] {
                    if flag[c] & REDO != 0 {
                        inc_load[c] += v;
                    }
                }
            }
        }
        laps.lap("bf C cut");
        let mut inc_max = 0.0;
        for k in 0..w {
            xc[k] += inc[k];
            inc_max = np_max(inc_max, inc[k]);
        }
        // a full link's leftover counts as 0 from now on (numpy: res[fl] = 0); the sums
        // start again from 0
        for &c in &live {
            let rd = &mut res_den[c];
            rd.0 -= inc_load[c];
            let fl = &mut flag[c];
            if rd.0 <= RTOL * cap[c as usize] {
                *fl |= FULL;
                rd.0 = 0.0;
            }
            rd.1 = 0.0;
            inc_load[c] = 0.0;
            *fl &= !(CUT | REDO);
        }
        laps.lap("bf D update");
        if inc_max <= top {
            break;
        }
    }
    for (k, &f) in flows.iter().enumerate() {
        x[f as usize] = xc[k];
    }
}

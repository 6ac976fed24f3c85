//! `varys`: clairvoyant Smallest-Effective-Bottleneck-First with MADD (Varys,
//! SIGCOMM'14), the upper reference of 004's comparison. At every event the active
//! coflows are ordered by their bottleneck time on the empty fabric
//! (Gamma = max_l remaining bytes on l / capacity of l); each in turn gets, within what
//! the earlier ones left, rate = remaining / Gamma' per flow so that its flows finish
//! together; the leftover is then filled max-min per flow (work-conserving).
//! Mirrors `schedulers/varys.py` with the Python engine's event rule.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::fill::Filler;
use crate::model::*;

pub fn run(inp: &Input) -> Result<(Vec<f64>, u64), String> {
    let nf = inp.f_size.len();
    let nc = inp.c_rank.len();
    let ng = inp.g_arrival.len();
    let nl = inp.cap.len();
    let w = inp.width;
    let (g_ptr, g_flows) = csr(ng, &inp.f_group);
    let mut g_left = vec![0u32; ng];
    for &g in &inp.f_group {
        g_left[g as usize] += 1;
    }
    let mut deps_left = inp.g_deps.clone();
    let tol = |f: usize| TOL_REL * inp.f_size[f] + TOL_BYTES;
    let mut rem = inp.f_size.clone();
    let mut finish = vec![f64::NAN; nf];
    let mut act: Vec<u32> = Vec::new();
    let mut rate = vec![0.0; nf];
    let mut madd = vec![0.0; nf];
    let mut rel: BinaryHeap<Reverse<Key>> = BinaryHeap::new();
    for g in 0..ng {
        if deps_left[g] == 0 {
            rel.push(Reverse(Key(inp.g_arrival[g], g as u32)));
        }
    }
    let mut filler = Filler::new(nl);
    let mut resid = vec![0.0; nl];
    let mut load = vec![0.0; nl];
    let mut touched: Vec<u32> = Vec::new();
    let mut by_cof: Vec<Vec<u32>> = vec![Vec::new(); nc];
    let mut t = 0.0f64;
    let mut events = 0u64;
    let complete = |fl: &[u32],
                    t: f64,
                    finish: &mut [f64],
                    g_left: &mut [u32],
                    deps_left: &mut [u32],
                    rel: &mut BinaryHeap<Reverse<Key>>| {
        let mut gs: Vec<usize> = Vec::new();
        for &f in fl {
            finish[f as usize] = t;
            let g = inp.f_group[f as usize] as usize;
            g_left[g] -= 1;
            if g_left[g] == 0 {
                gs.push(g);
            }
        }
        gs.sort_unstable();
        for g in gs {
            for i in inp.g_par_ptr[g]..inp.g_par_ptr[g + 1] {
                let p = inp.g_par[i] as usize;
                deps_left[p] -= 1;
                if deps_left[p] == 0 {
                    rel.push(Reverse(Key(t.max(inp.g_arrival[p]), p as u32)));
                }
            }
        }
    };
    loop {
        while let Some(&Reverse(Key(ta, g))) = rel.peek() {
            if ta > t {
                break;
            }
            rel.pop();
            let mut zero: Vec<u32> = Vec::new();
            for &f in &g_flows[g_ptr[g as usize]..g_ptr[g as usize + 1]] {
                if rem[f as usize] <= tol(f as usize) {
                    zero.push(f);
                } else {
                    act.push(f);
                }
            }
            if !zero.is_empty() {
                for &f in &zero {
                    rem[f as usize] = 0.0;
                }
                complete(&zero, t, &mut finish, &mut g_left, &mut deps_left, &mut rel);
            }
        }
        if act.is_empty() {
            if let Some(&Reverse(Key(ta, _))) = rel.peek() {
                t = ta;
                continue;
            }
            break;
        }
        // SEBF order: Gamma per active coflow on the empty fabric
        let mut cofs: Vec<u32> = Vec::new();
        for &f in &act {
            let c = inp.f_cof[f as usize];
            if by_cof[c as usize].is_empty() {
                cofs.push(c);
            }
            by_cof[c as usize].push(f);
        }
        cofs.sort_unstable();
        let coflow_load = |fl: &[u32], rem: &[f64], load: &mut [f64], touched: &mut Vec<u32>| {
            for &f in fl {
                let p = inp.f_path[f as usize] as usize;
                for &l in &inp.plinks[p * w..p * w + w] {
                    if l != NONE {
                        if load[l as usize] == 0.0 {
                            touched.push(l);
                        }
                        load[l as usize] += rem[f as usize];
                    }
                }
            }
        };
        let mut gam: Vec<(f64, u32)> = Vec::with_capacity(cofs.len());
        for &c in &cofs {
            coflow_load(&by_cof[c as usize], &rem, &mut load, &mut touched);
            let mut g = 0.0f64;
            for &l in &touched {
                g = g.max(load[l as usize] / inp.cap[l as usize]);
                load[l as usize] = 0.0;
            }
            touched.clear();
            gam.push((g, c));
        }
        gam.sort_by(|a, b| a.0.total_cmp(&b.0)); // stable: ties keep the coflow order
        resid.copy_from_slice(&inp.cap);
        for &f in &act {
            madd[f as usize] = 0.0;
        }
        for &(_, c) in &gam {
            let fl = &by_cof[c as usize];
            coflow_load(fl, &rem, &mut load, &mut touched);
            let mut g = 0.0f64;
            for &l in &touched {
                let l = l as usize;
                g = g.max(load[l] / resid[l].max(0.0));
                load[l] = 0.0;
            }
            touched.clear();
            if !g.is_finite() || g <= 0.0 {
                continue;
            }
            for &f in fl {
                let r = rem[f as usize] / g;
                madd[f as usize] = r;
                let p = inp.f_path[f as usize] as usize;
                for &l in &inp.plinks[p * w..p * w + w] {
                    if l != NONE {
                        resid[l as usize] -= r;
                    }
                }
            }
            for &f in fl {
                let p = inp.f_path[f as usize] as usize;
                for &l in &inp.plinks[p * w..p * w + w] {
                    if l != NONE && resid[l as usize] < 0.0 {
                        resid[l as usize] = 0.0;
                    }
                }
            }
        }
        for &c in &cofs {
            by_cof[c as usize].clear();
        }
        // backfill: max-min per flow over the leftover
        filler.fill(&inp.plinks, w, &act, |f| inp.f_path[f as usize], |_| 1.0, &mut resid,
                    &mut rate);
        let mut dt_f = f64::INFINITY;
        for &f in &act {
            let f = f as usize;
            rate[f] += madd[f];
            if rate[f] > 0.0 {
                dt_f = dt_f.min(rem[f] / rate[f]);
            }
        }
        let t_rel = rel.peek().map_or(f64::INFINITY, |r| r.0 .0);
        let t_next = (t + dt_f).min(t_rel);
        if !t_next.is_finite() {
            return Err(format!("t={t:.6}s: {} active flows get no bandwidth and no event is due",
                               act.len()));
        }
        let dt = t_next - t;
        let t_prev = t;
        t = t_next;
        events += 1;
        // due: within its tolerance, within 1e-12 of the interval, or not after t (a
        // finish closer than one ulp of t leaves t where it was: without this rule the
        // loop never ends, as on FB2010 at t = 701.6 s)
        let lim = dt * (1.0 + 1e-12);
        let mut done: Vec<u32> = Vec::new();
        act.retain(|&f| {
            let f = f as usize;
            let r = rate[f];
            let tf = if r > 0.0 { rem[f] / r } else { f64::INFINITY };
            rem[f] -= r * dt;
            if rem[f] <= tol(f) || tf <= lim || t_prev + tf <= t {
                rem[f] = 0.0;
                done.push(f as u32);
                false
            } else {
                true
            }
        });
        if !done.is_empty() {
            done.sort_unstable();
            complete(&done, t, &mut finish, &mut g_left, &mut deps_left, &mut rel);
        }
    }
    Ok((finish, events))
}

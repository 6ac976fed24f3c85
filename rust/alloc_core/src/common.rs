//! Pieces both policies share: the routing matrix R of 000 eq. (1a) as a CSR view,
//! tables on huge pages, numpy's NaN-propagating min/max, prefetching, and the backfill
//! pass of 000 §VI-C (`streamband.alloc.common`, whose numpy code is the reference).
//!
//! Exactness: every sum runs in the order numpy's `bincount` runs it (the CSR entry
//! order, each from 0.0), every product and quotient is written as the Python code
//! writes it, so the results equal the numpy implementation's to the last bit.

/// An empty vector with room for `n` items, on transparent huge pages when it is large:
/// the kernels index their per-link and per-flow tables at random, and on 4 KiB pages
/// most of those accesses would miss the TLB (numpy asks for huge pages the same way).
pub fn room<T>(n: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    let bytes = n * std::mem::size_of::<T>();
    if bytes >= 1 << 21 {
        let p = v.as_mut_ptr() as usize;
        let start = (p + 4095) & !4095;
        if p + bytes > start {
            // SAFETY: advice on pages inside the allocation just made; no data there yet.
            unsafe {
                libc::madvise(
                    start as *mut libc::c_void,
                    p + bytes - start,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    v
}

/// `n` copies of `v` (see [`room`]).
pub fn table<T: Clone>(n: usize, v: T) -> Vec<T> {
    let mut t = room(n);
    t.resize(n, v);
    t
}

/// `f(0), .., f(n - 1)` (see [`room`]).
pub fn table_from<T>(n: usize, f: impl FnMut(usize) -> T) -> Vec<T> {
    let mut t = room(n);
    t.extend((0..n).map(f));
    t
}

/// A CSR index type (scipy stores int32 or int64).
pub trait Ix: Copy {
    fn ix(self) -> usize;
    fn valid(self, bound: usize) -> bool;
}

impl Ix for i32 {
    #[inline(always)]
    fn ix(self) -> usize {
        self as usize
    }
    fn valid(self, bound: usize) -> bool {
        self >= 0 && (self as usize) <= bound
    }
}

impl Ix for i64 {
    #[inline(always)]
    fn ix(self) -> usize {
        self as usize
    }
    fn valid(self, bound: usize) -> bool {
        self >= 0 && (self as u64) <= bound as u64
    }
}

/// The binary F x L routing matrix R (flow f crosses the links `row(f)`).
pub struct Csr<'a, I: Ix> {
    indptr: &'a [I],
    indices: &'a [I],
    pub n_links: usize,
}

impl<'a, I: Ix> Csr<'a, I> {
    /// Checks the structure once, so that every later index is in bounds.
    pub fn new(indptr: &'a [I], indices: &'a [I], n_links: usize) -> Result<Self, String> {
        if indptr.is_empty() {
            return Err("routing: indptr is empty".into());
        }
        let nnz = indices.len();
        if nnz >= u32::MAX as usize
            || indptr.len() >= u32::MAX as usize
            || n_links >= u32::MAX as usize
        {
            return Err("routing: more than 2^32 - 1 flows, links or entries".into());
        }
        if indptr[0].ix() != 0 || !indptr[0].valid(0) {
            return Err("routing: indptr[0] must be 0".into());
        }
        for w in indptr.windows(2) {
            if !w[1].valid(nnz) || w[1].ix() < w[0].ix() {
                return Err("routing: indptr must be non-decreasing and within indices".into());
            }
        }
        if n_links > 0 {
            if let Some(bad) = indices.iter().position(|&l| !l.valid(n_links - 1)) {
                return Err(format!(
                    "routing: entry {bad} names a link outside 0..{n_links}"
                ));
            }
        } else if !indices.is_empty() {
            return Err("routing: entries but no links".into());
        }
        Ok(Csr {
            indptr,
            indices,
            n_links,
        })
    }

    /// The bytes of `indptr` and of `indices`, for alias checks.
    pub fn spans(&self) -> [std::ops::Range<usize>; 2] {
        [self.indptr, self.indices].map(|s| {
            let p = s.as_ptr() as usize;
            p..p + std::mem::size_of_val(s)
        })
    }

    pub fn nnz(&self) -> usize {
        self.indptr[self.n_flows()].ix()
    }

    #[inline(always)]
    pub fn n_flows(&self) -> usize {
        self.indptr.len() - 1
    }

    #[inline(always)]
    pub fn row(&self, f: usize) -> &'a [I] {
        let (a, b) = (self.indptr[f].ix(), self.indptr[f + 1].ix());
        // SAFETY: `new` checked 0 = indptr[0] <= indptr[f] <= indptr[f + 1] <= nnz.
        unsafe { self.indices.get_unchecked(a..b) }
    }

    /// (L,) Σ_{f ∋ l} x_f in entry order (numpy's `bincount(cols, weights=x[rows])`).
    pub fn link_sum(&self, x: &[f64]) -> Vec<f64> {
        let mut out = table(self.n_links, 0.0);
        for (f, &xf) in x.iter().enumerate().take(self.n_flows()) {
            for &l in self.row(f) {
                out[l.ix()] += xf;
            }
        }
        out
    }
}

/// `np.minimum` (NaN propagates).
#[inline(always)]
pub fn np_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || a <= b {
        a
    } else {
        b
    }
}

/// `np.maximum` (NaN propagates).
#[inline(always)]
pub fn np_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || a >= b {
        a
    } else {
        b
    }
}

/// Entries ahead of use at which a link's table entry is prefetched.
pub const AHEAD: usize = 24;

/// Asks for `t[i]` to be brought into the cache (the loops index link tables at random
/// a few entries ahead of use); no effect off x86-64 or out of range.
#[inline(always)]
pub fn prefetch<T>(t: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < t.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint; the address is inside `t`.
        unsafe { _mm_prefetch(t.as_ptr().add(i) as *const i8, _MM_HINT_T0) };
    }
}

/// The backfill pass of 000 §VI-C: leftover capacity of the bottlenecked links
/// (`is_bott`) goes to their flows in proportion to the previous pass's rates, only
/// among flows that can still grow (on a bottlenecked link, on no full link); the same
/// rounds as the numpy code. `load` is R^T x.
///
/// Works on the flows still in play only, the links renumbered (bottlenecked ones first);
/// dropping a blocked flow keeps the others in order, so every sum runs in numpy's order.
pub fn backfill<I: Ix>(
    r: &Csr<I>,
    cap: &[f64],
    x: &mut [f64],
    is_bott: &dyn Fn(usize) -> bool,
    load: Vec<f64>,
) {
    const MAX_ITER: u32 = 50;
    const RTOL: f64 = 1e-9;
    let nl = r.n_links;
    let nf = r.n_flows();
    // every link numbered, the bottlenecked ones first (below nb): what is left, C - R^T x,
    // and whether that is nothing (full)
    let mut map = table(nl, 0u32);
    let mut res_den: Vec<(f64, f64)> = room(nl); // (capacity left, Σ x of growable flows)
    let mut floor: Vec<f64> = room(nl);
    let mut full: Vec<bool> = room(nl);
    let (mut nb, mut top) = (0, 0.0);
    for pass in [true, false] {
        for l in (0..nl).filter(|&l| is_bott(l) == pass) {
            map[l] = res_den.len() as u32;
            res_den.push((cap[l] - load[l], 0.0));
            floor.push(RTOL * cap[l]);
            full.push(cap[l] - load[l] <= RTOL * cap[l]);
            if pass {
                top = np_max(top, cap[l]);
            }
        }
        if pass {
            nb = res_den.len() as u32;
        }
    }
    let (n, top) = (nl, RTOL * top);
    drop(load);
    // the growable flows (on a bottlenecked link, on no full link) and their entries
    let mut flows: Vec<u32> = room(nf);
    let mut ptr: Vec<u32> = room(nf + 1);
    ptr.push(0);
    let mut ent: Vec<u32> = room(r.nnz());
    let mut cnt = table(n, 0u32); // growable flows per bottlenecked link
    for f in 0..nf {
        let row = r.row(f);
        let (mut b, mut blocked) = (false, false);
        for &l in row {
            let c = map[l.ix()];
            b |= c < nb;
            blocked |= full[c as usize];
        }
        if b && !blocked {
            for &l in row {
                let c = map[l.ix()];
                ent.push(c);
                if c < nb {
                    cnt[c as usize] += 1;
                }
            }
            flows.push(f as u32);
            ptr.push(ent.len() as u32);
        }
    }
    drop(map);
    if flows.is_empty() {
        return;
    }
    let mut xc: Vec<f64> = table_from(flows.len(), |k| x[flows[k] as usize]);
    let mut inc: Vec<f64> = table(flows.len(), 0.0);
    let mut inc_load = table(n, 0.0);
    let mut factor = table(n, 1.0); // of the cut links
    let mut mark = table(n, 0u8); // 1: the link is cut, 2: a flow on it was
    for _ in 0..MAX_ITER {
        // drop the flows blocked by a full link (the others keep their order), and sum
        // x of the growable flows on each bottlenecked link (den is 0 here)
        let (mut w, mut we, mut a) = (0usize, 0usize, 0usize);
        for k in 0..flows.len() {
            let b = ptr[k + 1] as usize;
            if ent[a..b].iter().any(|&c| full[c as usize]) {
                x[flows[k] as usize] = xc[k];
                for &c in &ent[a..b] {
                    if c < nb {
                        cnt[c as usize] -= 1;
                    }
                }
                a = b;
                continue;
            }
            let xf = xc[k];
            for e in a..b {
                if let Some(&ahead) = ent.get(e + AHEAD) {
                    prefetch(&res_den, ahead as usize);
                }
                let c = ent[e];
                ent[we] = c;
                we += 1;
                if c < nb {
                    res_den[c as usize].1 += xf;
                }
            }
            flows[w] = flows[k];
            xc[w] = xf;
            ptr[w + 1] = we as u32;
            w += 1;
            a = b;
        }
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
            for e in a..b {
                if let Some(&ahead) = ent.get(e + AHEAD) {
                    prefetch(&res_den, ahead as usize);
                    prefetch(&inc_load, ahead as usize);
                }
            }
            for &c in es {
                if c < nb {
                    let (res, den) = res_den[c as usize];
                    let share = if den > 0.0 {
                        res * xf / den
                    } else {
                        res / cnt[c as usize] as f64
                    };
                    m = np_min(m, share);
                    seen = true;
                }
            }
            let v = if seen { m } else { 0.0 };
            inc[k] = v;
            for &c in es {
                inc_load[c as usize] += v;
            }
        }
        // cut increases down so that no link goes over capacity; a flow on no cut link
        // keeps its increase (x 1.0), so only the sums of the links of flows on a cut link
        // are redone, over all their flows in order
        let mut any_cut = false;
        for c in 0..n {
            let (res, load) = (res_den[c].0, inc_load[c]);
            let cut = load > res;
            mark[c] = cut as u8;
            if cut {
                factor[c] = res / load;
                any_cut = true;
            }
        }
        if any_cut {
            for k in 0..w {
                let es = &ent[ptr[k] as usize..ptr[k + 1] as usize];
                if es.iter().any(|&c| mark[c as usize] & 1 != 0) {
                    let mut m = f64::INFINITY;
                    for &c in es {
                        let c = c as usize;
                        m = np_min(m, if mark[c] & 1 != 0 { factor[c] } else { 1.0 });
                        if mark[c] & 2 == 0 {
                            mark[c] |= 2;
                            inc_load[c] = 0.0;
                        }
                    }
                    inc[k] *= m;
                }
            }
            for k in 0..w {
                let v = inc[k];
                for &c in &ent[ptr[k] as usize..ptr[k + 1] as usize] {
                    if mark[c as usize] & 2 != 0 {
                        inc_load[c as usize] += v;
                    }
                }
            }
        }
        let mut inc_max = 0.0;
        for k in 0..w {
            xc[k] += inc[k];
            inc_max = np_max(inc_max, inc[k]);
        }
        // a full link's leftover counts as 0 from now on (numpy: res[fl] = 0); the sums
        // start again from 0
        for c in 0..n {
            let rd = &mut res_den[c];
            rd.0 -= inc_load[c];
            if rd.0 <= floor[c] {
                full[c] = true;
                rd.0 = 0.0;
            }
            rd.1 = 0.0;
            inc_load[c] = 0.0;
        }
        if inc_max <= top {
            break;
        }
    }
    for (k, &f) in flows.iter().enumerate() {
        x[f as usize] = xc[k];
    }
}

/// The contract of `alloc/base.py`: inf for flows crossing no link, >= 0 elsewhere.
pub fn finish<I: Ix>(r: &Csr<I>, x: &[f64], out: &mut [f64]) {
    for f in 0..r.n_flows() {
        out[f] = if r.row(f).is_empty() {
            f64::INFINITY
        } else {
            np_max(x[f], 0.0)
        };
    }
}

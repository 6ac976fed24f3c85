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
}

/// A per-link table (`n_links` items) indexed by link numbers taken from R's rows or
/// copied from them: `Csr::new` checked every one below `n_links`, so the hot loops
/// index without a bounds check (checked in debug builds).
pub struct Links<T>(pub Vec<T>);

impl<T> std::ops::Index<usize> for Links<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, c: usize) -> &T {
        debug_assert!(c < self.0.len());
        // SAFETY: c < n_links = len (above)
        unsafe { self.0.get_unchecked(c) }
    }
}

impl<T> std::ops::IndexMut<usize> for Links<T> {
    #[inline(always)]
    fn index_mut(&mut self, c: usize) -> &mut T {
        debug_assert!(c < self.0.len());
        // SAFETY: as in `index`
        unsafe { self.0.get_unchecked_mut(c) }
    }
}

impl<T> std::ops::Index<u32> for Links<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, c: u32) -> &T {
        &self[c as usize]
    }
}

impl<T> std::ops::IndexMut<u32> for Links<T> {
    #[inline(always)]
    fn index_mut(&mut self, c: u32) -> &mut T {
        &mut self[c as usize]
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
/// a few entries ahead of use); no effect off x86-64. Any `i`: a prefetch never faults,
/// so it is not checked.
#[inline(always)]
pub fn prefetch<T>(t: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint and never faults, whatever the address; the
        // pointer is not dereferenced.
        unsafe { _mm_prefetch(t.as_ptr().wrapping_add(i) as *const i8, _MM_HINT_T0) };
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

/// Phase timers behind the `timers` feature: each `lap` prints the thread CPU time since
/// the last one to stderr (profiling builds only; compiled away otherwise).
pub struct Laps {
    #[cfg(feature = "timers")]
    t: f64,
}

impl Laps {
    #[cfg(feature = "timers")]
    fn now() -> f64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec for the kernel to fill
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    }

    #[inline(always)]
    pub fn start() -> Self {
        Laps {
            #[cfg(feature = "timers")]
            t: Self::now(),
        }
    }

    #[inline(always)]
    pub fn lap(&mut self, _name: &str) {
        #[cfg(feature = "timers")]
        {
            let t = Self::now();
            eprintln!("lap {_name} {:.3}", (t - self.t) * 1e3);
            self.t = Self::now();
        }
    }
}

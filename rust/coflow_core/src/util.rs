//! Small pieces the loops share: an id hasher, a prefetch hint, the running minima of a vector of times
//! (`BlockMin`), an indexed min-heap, and a receiver's bytes over time (`Hist`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::model::NONE;

/// A multiplicative hasher for u64 keys.
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

/// Ask the CPU to bring `v[i]`'s cache line near (a hint, nothing if `i` is out of
/// range): loops over a list of groups prefetch the groups a few places ahead, since
/// the groups of a list lie anywhere in the per-group arrays.
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

/// The smallest of `xs` (times, never NaN), inf if empty: eight running minima, so
/// that the pass is vectorized (the minimum is exact in any order).
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
/// one of its times was set since the last read, so the smallest time (or every index
/// at most a horizon) costs the blocks set plus one pass over the blocks' minima.
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

    #[inline]
    fn span(&self, b: usize) -> std::ops::Range<usize> {
        b * Self::B..((b + 1) * Self::B).min(self.v.len())
    }

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

/// Where each id of an `IdHeap` is in it (NONE when in none): the caller's per-id place.
pub trait Places {
    fn place_of(&self, id: u32) -> u32;
    fn set_place(&mut self, id: u32, i: u32);
}

/// A min-heap of ids by key, ties by id, with each id's place kept by the caller (`Places`;
/// NONE when not in a heap), so that any id can leave in O(log n). An entry holds its id's
/// key, which does not change while the id is in the heap, so that sifting compares
/// entries without reading the caller's per-id arrays (a bundle's key was a cache miss
/// per heap level visited: perf, stream on the big switch, 9 % of the samples in `up`
/// and `remove`); the places live in the caller's array (one per id, shared by many
/// heaps).
#[derive(Default, Clone)]
pub struct IdHeap {
    pub e: Vec<(f64, u32)>,
}

impl IdHeap {
    #[cfg(feature = "counts")]
    #[inline]
    pub fn len(&self) -> usize {
        self.e.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.e.is_empty()
    }

    /// The least entry: (key, id).
    #[inline]
    pub fn top(&self) -> Option<(f64, u32)> {
        self.e.first().copied()
    }

    #[inline]
    fn less(a: (f64, u32), b: (f64, u32)) -> bool {
        a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
    }

    fn up<P: Places + ?Sized>(&mut self, mut i: usize, pos: &mut P) {
        let x = self.e[i];
        while i > 0 {
            let p = (i - 1) / 2;
            let y = self.e[p];
            if !Self::less(x, y) {
                break;
            }
            self.e[i] = y;
            pos.set_place(y.1, i as u32);
            i = p;
        }
        self.e[i] = x;
        pos.set_place(x.1, i as u32);
    }

    fn down<P: Places + ?Sized>(&mut self, mut i: usize, pos: &mut P) {
        let n = self.e.len();
        let x = self.e[i];
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && Self::less(self.e[r], self.e[l]) { r } else { l };
            let y = self.e[c];
            if !Self::less(y, x) {
                break;
            }
            self.e[i] = y;
            pos.set_place(y.1, i as u32);
            i = c;
        }
        self.e[i] = x;
        pos.set_place(x.1, i as u32);
    }

    /// Add `id` with key `key`.
    pub fn push<P: Places + ?Sized>(&mut self, id: u32, key: f64, pos: &mut P) {
        self.e.push((key, id));
        let i = self.e.len() - 1;
        self.up(i, pos);
    }

    pub fn remove<P: Places + ?Sized>(&mut self, id: u32, pos: &mut P) {
        let i = pos.place_of(id) as usize;
        pos.set_place(id, NONE);
        let last = self.e.pop().unwrap();
        if i < self.e.len() {
            self.e[i] = last;
            pos.set_place(last.1, i as u32);
            self.up(i, pos);
            let j = pos.place_of(last.1) as usize;
            self.down(j, pos);
        }
    }

    /// Every id whose key is at most `h`, into `out` (any order).
    pub fn at_most(&self, h: f64, out: &mut Vec<u32>) {
        let mut stack: Vec<usize> = Vec::new();
        if !self.e.is_empty() {
            stack.push(0);
        }
        while let Some(i) = stack.pop() {
            let (key, id) = self.e[i];
            if key > h {
                continue;
            }
            out.push(id);
            for c in [2 * i + 1, 2 * i + 2] {
                if c < self.e.len() {
                    stack.push(c);
                }
            }
        }
    }
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

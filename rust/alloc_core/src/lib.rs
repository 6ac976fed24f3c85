//! Compiled kernels of streamband's allocation policies (`streamband.alloc`): the
//! app-aware allocation of 000 Algorithm 1 with the backfill of §VI-C, and max-min fair
//! sharing with demands. Each is a pure function of the routing matrix R (CSR: `indptr`,
//! `indices`, int32 or int64), the link capacities and the flows' state; it writes one
//! rate per flow (bit/s) into `out`. The numpy implementations in `streamband.alloc`
//! are the reference; tests compare both to the last bit.

// pyo3 0.22's #[pyfunction] expansion converts PyErr into itself (clippy >= 1.84)
#![allow(clippy::useless_conversion)]

mod appaware;
mod backfill;
mod common;
mod maxmin;

use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::ops::Range;

use common::{Csr, Ix};

/// A read-only view of a contiguous 1-d buffer of `n` items (checked).
fn view<'a, T: Element>(b: &'a PyBuffer<T>, name: &str, n: Option<usize>) -> PyResult<&'a [T]> {
    if !b.is_c_contiguous() || b.dimensions() > 1 {
        return Err(PyValueError::new_err(format!(
            "{name}: expected a contiguous 1-d array"
        )));
    }
    if let Some(n) = n {
        if b.item_count() != n {
            return Err(PyValueError::new_err(format!(
                "{name}: expected {n} values, got {}",
                b.item_count()
            )));
        }
    }
    // SAFETY: contiguous, aligned (checked by PyBuffer::get_bound), item_count items,
    // alive while `b` is; the GIL is held for the whole call.
    Ok(unsafe { std::slice::from_raw_parts(b.buf_ptr() as *const T, b.item_count()) })
}

/// The bytes a slice covers.
fn span<T>(s: &[T]) -> Range<usize> {
    let p = s.as_ptr() as usize;
    p..p + std::mem::size_of_val(s)
}

/// The writable `out` array of `n` float64, sharing no byte with the `inputs`.
fn view_mut<'a>(
    b: &'a mut PyBuffer<f64>,
    n: usize,
    inputs: &[Range<usize>],
) -> PyResult<&'a mut [f64]> {
    if b.readonly() {
        return Err(PyValueError::new_err("out: expected a writable array"));
    }
    let o = span(view(b, "out", Some(n))?);
    if inputs.iter().any(|i| i.start < o.end && o.start < i.end) {
        return Err(PyValueError::new_err("out: shares memory with an input"));
    }
    // SAFETY: as in `view`; writable; no other view of these bytes exists in this call.
    Ok(unsafe { std::slice::from_raw_parts_mut(b.buf_ptr() as *mut f64, n) })
}

/// Calls `$body` with `$r` bound to the CSR view, for int32 or int64 indices.
macro_rules! with_csr {
    ($indptr:expr, $indices:expr, $nl:expr, |$r:ident| $body:expr) => {{
        if let (Ok(p), Ok(i)) = (
            PyBuffer::<i32>::get_bound($indptr),
            PyBuffer::<i32>::get_bound($indices),
        ) {
            let $r = csr(&p, &i, $nl)?;
            $body
        } else {
            let p = PyBuffer::<i64>::get_bound($indptr)?;
            let i = PyBuffer::<i64>::get_bound($indices)?;
            let $r = csr(&p, &i, $nl)?;
            $body
        }
    }};
}

fn csr<'a, I: Ix + Element>(
    p: &'a PyBuffer<I>,
    i: &'a PyBuffer<I>,
    n_links: usize,
) -> PyResult<Csr<'a, I>> {
    Csr::new(view(p, "indptr", None)?, view(i, "indices", None)?, n_links)
        .map_err(PyValueError::new_err)
}

/// Max-min fair rates with demands: `demand` (bit/s, may be inf) per flow, `capacity`
/// (bit/s) per link; writes the rates into `out` (inf for flows crossing no link).
#[pyfunction(name = "maxmin")]
fn py_maxmin(
    indptr: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    capacity: PyBuffer<f64>,
    demand: PyBuffer<f64>,
    mut out: PyBuffer<f64>,
) -> PyResult<()> {
    let cap = view(&capacity, "capacity", None)?;
    with_csr!(indptr, indices, cap.len(), |r| {
        let nf = r.n_flows();
        let dem = view(&demand, "demand", Some(nf))?;
        let [p, i] = r.spans();
        let ins = [span(cap), span(dem), p, i];
        maxmin::maxmin(&r, cap, dem, view_mut(&mut out, nf, &ins)?);
        Ok(())
    })
}

/// 000 Algorithm 1 and the backfill of §VI-C. `kind` per link (0 uplink, 1 downlink,
/// 2 internal), the five state metrics per flow in bytes, `dt` in seconds,
/// `bottlenecked` one uint8 per link or None (detected from the demands).
#[pyfunction(name = "appaware")]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (indptr, indices, capacity, kind, ls0, ls1, lr0, lr1, sent, dt, bottlenecked, out))]
fn py_appaware(
    indptr: &Bound<'_, PyAny>,
    indices: &Bound<'_, PyAny>,
    capacity: PyBuffer<f64>,
    kind: PyBuffer<i8>,
    ls0: PyBuffer<f64>,
    ls1: PyBuffer<f64>,
    lr0: PyBuffer<f64>,
    lr1: PyBuffer<f64>,
    sent: PyBuffer<f64>,
    dt: f64,
    bottlenecked: Option<PyBuffer<u8>>,
    mut out: PyBuffer<f64>,
) -> PyResult<()> {
    let cap = view(&capacity, "capacity", None)?;
    let nl = cap.len();
    let kind = view(&kind, "kind", Some(nl))?;
    let bott = match &bottlenecked {
        Some(b) => Some(view(b, "bottlenecked", Some(nl))?),
        None => None,
    };
    with_csr!(indptr, indices, nl, |r| {
        let nf = r.n_flows();
        let s = appaware::State {
            ls0: view(&ls0, "ls0", Some(nf))?,
            ls1: view(&ls1, "ls1", Some(nf))?,
            lr0: view(&lr0, "lr0", Some(nf))?,
            lr1: view(&lr1, "lr1", Some(nf))?,
            sent: view(&sent, "sent", Some(nf))?,
            dt,
        };
        let [p, i] = r.spans();
        let mut ins = vec![span(cap), span(kind), p, i, span(bott.unwrap_or_default())];
        ins.extend([s.ls0, s.ls1, s.lr0, s.lr1, s.sent].map(span));
        appaware::appaware(&r, cap, kind, &s, bott, view_mut(&mut out, nf, &ins)?);
        Ok(())
    })
}

#[pymodule]
fn streamband_alloc_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(py_maxmin, m)?)?;
    m.add_function(wrap_pyfunction!(py_appaware, m)?)?;
    Ok(())
}

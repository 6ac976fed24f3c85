//! Compiled event loops of streamband's coflow simulator (paper 004 §IV-B). The
//! Python engine (`streamband.sim.coflow.engine` with the scheduler classes) is the
//! readable reference; tests compare the two to 1e-9 relative.
//!
//! - `fabric_run`: any fabric given as a link table, strict priority between levels and
//!   max-min inside a level, under `fs`, `fs-static`, `stream` (decentralized or
//!   oracle Information-Relay), `aalo` or `baraat` (`engine.rs`, `fill.rs`, `rules.rs`);
//!   or `varys` (clairvoyant SEBF + MADD with max-min backfill, `varys.rs`);
//! - `bigswitch_run`: `fs` / `fs-static` on a big switch by port pairs (`bigswitch.rs`).
//!
//! Scheduler parameters arrive as one typed object, `SchedParams`; the workload as a
//! dict of named native-endian int64 / float64 buffers. Both loops run without the GIL;
//! every `progress_s` seconds of wall time at most they take it back to check Python's
//! signals and call `progress(t, flows_done)`, whose error (KeyboardInterrupt on ctrl-C
//! too) stops the run and is raised (`progress.rs`).

// Allowed lints, with their reasons:
// - `!(x > 0.0)` is meant: it is true for NaN, which must count as "no rate";
// - index loops over several parallel arrays read better than zipped iterators;
// - PyO3's macros convert `PyErr` into itself in generated code.
#![allow(clippy::neg_cmp_op_on_partial_ord)]
#![allow(clippy::needless_range_loop)]
#![allow(clippy::useless_conversion)]

mod bigswitch;
mod counts;
mod engine;
mod fill;
mod model;
mod progress;
mod rules;
mod util;
mod varys;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use model::{Input, Params, Policy, Relay, NONE};
use progress::Progress;

fn as_i64(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().unwrap())).collect()
}
fn as_f64(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect()
}

fn as_u32(b: &[u8], what: &str, bound: usize) -> PyResult<Vec<u32>> {
    let v = as_i64(b);
    for (i, &x) in v.iter().enumerate() {
        if x < 0 || x as usize >= bound {
            return Err(PyValueError::new_err(format!("{what}[{i}] = {x}: outside 0..{bound}")));
        }
    }
    Ok(v.into_iter().map(|x| x as u32).collect())
}

/// A coflow scheduler and its parameters, checked once on construction.
///
/// `policy`: fs, fs-static, stream, aalo, baraat, varys; `tau`: the K demotion thresholds in
/// bytes, the last one inf (stream, aalo); `alpha`, `beta`: eq. (2)-(5) of 004;
/// `starve_s`: stream's starvation timer; `relay`: decentralized, oracle or none;
/// `info_delay_s`: the decentralized relay's information delay; `heavy_bytes`:
/// Baraat's heavy-coflow threshold.
#[pyclass(frozen, module = "streamband_coflow_core")]
#[derive(Clone)]
struct SchedParams {
    inner: Params,
}

#[pymethods]
impl SchedParams {
    #[new]
    #[pyo3(signature = (policy, *, tau = vec![f64::INFINITY], alpha = 0.0, beta = 1.0,
                        starve_s = f64::INFINITY, relay = "none", info_delay_s = 0.0,
                        heavy_bytes = f64::INFINITY))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        policy: &str,
        tau: Vec<f64>,
        alpha: f64,
        beta: f64,
        starve_s: f64,
        relay: &str,
        info_delay_s: f64,
        heavy_bytes: f64,
    ) -> PyResult<Self> {
        let policy = match policy {
            "fs" => Policy::Fs,
            "fs-static" => Policy::FsStatic,
            "stream" => Policy::Stream,
            "aalo" => Policy::Aalo,
            "baraat" => Policy::Baraat,
            "varys" => Policy::Varys,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "policy: expected fs, fs-static, stream, aalo, baraat or varys, got {policy}"
                )))
            }
        };
        let relay = match relay {
            "decentralized" => Relay::Decentralized,
            "oracle" => Relay::Oracle,
            "none" => Relay::None,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "relay: expected decentralized, oracle or none, got {relay}"
                )))
            }
        };
        if tau.is_empty() || tau.len() > 16 || tau.last() != Some(&f64::INFINITY) {
            return Err(PyValueError::new_err("tau: expected 1..16 thresholds, the last inf"));
        }
        let finite_ge0 = |x: f64| x.is_finite() && x >= 0.0;
        if !finite_ge0(alpha) || !finite_ge0(beta) || !finite_ge0(info_delay_s) {
            return Err(PyValueError::new_err(
                "alpha, beta, info_delay_s: expected finite numbers >= 0",
            ));
        }
        if !(starve_s > 0.0) || !(heavy_bytes > 0.0) {
            return Err(PyValueError::new_err("starve_s, heavy_bytes: expected > 0"));
        }
        Ok(SchedParams {
            inner: Params { policy, tau, alpha, beta, starve_s, relay, info_delay_s, heavy_bytes },
        })
    }

    fn __repr__(&self) -> String {
        format!("SchedParams({:?})", self.inner)
    }
}

/// The workload: named native-endian buffers (int64 for indices, float64 otherwise).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Workload<'py> {
    cap: Bound<'py, PyBytes>,
    plinks: Bound<'py, PyBytes>,
    width: usize,
    f_path: Bound<'py, PyBytes>,
    f_unit: Bound<'py, PyBytes>,
    f_cof: Bound<'py, PyBytes>,
    f_group: Bound<'py, PyBytes>,
    f_src: Bound<'py, PyBytes>,
    f_size: Bound<'py, PyBytes>,
    u_cof: Bound<'py, PyBytes>,
    u_group: Bound<'py, PyBytes>,
    u_w: Bound<'py, PyBytes>,
    c_rank: Bound<'py, PyBytes>,
    g_arrival: Bound<'py, PyBytes>,
    g_deps: Bound<'py, PyBytes>,
    g_par_ptr: Bound<'py, PyBytes>,
    g_par: Bound<'py, PyBytes>,
}

impl Workload<'_> {
    fn input(&self) -> PyResult<Input> {
        let capv = as_f64(self.cap.as_bytes());
        let nl = capv.len();
        let width = self.width;
        let plb = self.plinks.as_bytes();
        if width == 0 || plb.len() % (8 * width) != 0 {
            return Err(PyValueError::new_err("plinks: expected n_paths x width int64"));
        }
        let pl: Vec<u32> = as_i64(plb)
            .into_iter()
            .map(|x| if x < 0 || x as usize >= nl { NONE } else { x as u32 })
            .collect();
        let n_paths = pl.len() / width;
        let u_w = as_f64(self.u_w.as_bytes());
        let nu = u_w.len();
        let nc = self.c_rank.as_bytes().len() / 8;
        let g_arrival = as_f64(self.g_arrival.as_bytes());
        let ng = g_arrival.len();
        let par_ptr: Vec<usize> =
            as_i64(self.g_par_ptr.as_bytes()).into_iter().map(|x| x.max(0) as usize).collect();
        let g_par = as_u32(self.g_par.as_bytes(), "group parents", ng)?;
        if par_ptr.len() != ng + 1 || par_ptr[ng] != g_par.len() {
            return Err(PyValueError::new_err("group parents: bad CSR pointer"));
        }
        let inp = Input {
            cap: capv,
            plinks: pl,
            width,
            f_path: as_u32(self.f_path.as_bytes(), "flow path", n_paths)?,
            f_unit: as_u32(self.f_unit.as_bytes(), "flow unit", nu)?,
            f_cof: as_u32(self.f_cof.as_bytes(), "flow coflow", nc)?,
            f_group: as_u32(self.f_group.as_bytes(), "flow group", ng)?,
            f_src: as_u32(self.f_src.as_bytes(), "flow sender", u32::MAX as usize)?,
            f_size: as_f64(self.f_size.as_bytes()),
            u_cof: as_u32(self.u_cof.as_bytes(), "unit coflow", nc)?,
            u_group: as_u32(self.u_group.as_bytes(), "unit group", ng)?,
            u_w,
            c_rank: as_u32(self.c_rank.as_bytes(), "coflow rank", nc.max(1))?,
            g_arrival,
            g_deps: as_u32(self.g_deps.as_bytes(), "group deps", usize::MAX >> 1)?,
            g_par_ptr: par_ptr,
            g_par,
        };
        let nf = inp.f_size.len();
        if inp.f_path.len() != nf || inp.f_unit.len() != nf || inp.f_cof.len() != nf
            || inp.f_group.len() != nf || inp.f_src.len() != nf || inp.u_cof.len() != nu
            || inp.u_group.len() != nu || inp.g_deps.len() != ng
        {
            return Err(PyValueError::new_err("flow / unit / group arrays: unequal lengths"));
        }
        Ok(inp)
    }
}

fn finish_bytes<'py>(py: Python<'py>, finish: &[f64]) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = finish.iter().flat_map(|x| x.to_ne_bytes()).collect();
    PyBytes::new_bound(py, &bytes)
}

/// Run `body` without the GIL, with a `Progress` whose hook, every `progress_s` seconds
/// of wall time at most and once at the end, takes the GIL back, checks Python's
/// signals and calls `progress(t, flows_done)` if given. The first error of either
/// stops the run and is returned; `body`'s own errors are ValueErrors.
fn with_progress<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    progress_s: f64,
    body: impl FnOnce(&mut Progress) -> Result<T, String> + Send,
) -> PyResult<T> {
    if !(0.0..=86400.0).contains(&progress_s) {
        let msg = format!("progress_s: expected 0..86400 s, got {progress_s}");
        return Err(PyValueError::new_err(msg));
    }
    if progress.as_ref().is_some_and(|cb| !cb.bind(py).is_callable()) {
        return Err(PyTypeError::new_err("progress: expected a callable (t, flows_done)"));
    }
    let period = std::time::Duration::from_secs_f64(progress_s);
    let mut raised: Option<PyErr> = None;
    let out = py.allow_threads(|| {
        let mut hook = |t: f64, done: u64| {
            Python::with_gil(|py| {
                let r = py.check_signals().and_then(|_| match &progress {
                    Some(cb) => cb.call1(py, (t, done)).map(drop),
                    None => Ok(()),
                });
                r.map_err(|e| raised = Some(e)).is_ok()
            })
        };
        body(&mut Progress::new(&mut hook, period))
    });
    match raised {
        Some(e) => Err(e),
        None => out.map_err(PyValueError::new_err),
    }
}

/// Run `workload` under `params`. Returns (finish time per flow as float64 bytes,
/// number of events). `progress(t_sim_s, flows_done)`, if given, is called every
/// `progress_s` seconds of wall time at most and once at the end; it only observes.
#[pyfunction]
#[pyo3(signature = (params, workload, progress = None, progress_s = 0.25))]
fn fabric_run<'py>(
    py: Python<'py>,
    params: &SchedParams,
    workload: Workload<'py>,
    progress: Option<Py<PyAny>>,
    progress_s: f64,
) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let inp = workload.input()?;
    let par = params.inner.clone();
    let (finish, events) = with_progress(py, progress, progress_s, |prog| {
        if par.policy == Policy::Varys {
            return varys::run(&inp, prog);
        }
        let mut sim = engine::Sim::new(inp, par);
        sim.run(prog).map(|_| (sim.finish, sim.events))
    })?;
    Ok((finish_bytes(py, &finish), events))
}

/// Run the flows on a `ports`-port big switch of `port_bytes_per_s` per port.
/// `src`, `dst` (int64), `size`, `release` (float64) are raw native-endian buffers.
/// Returns (finish times as float64 bytes, number of events). `progress`,
/// `progress_s`: as for `fabric_run`.
#[pyfunction]
#[pyo3(signature = (ports, port_bytes_per_s, src, dst, size, release, policy,
                    progress = None, progress_s = 0.25))]
#[allow(clippy::too_many_arguments)]
fn bigswitch_run<'py>(
    py: Python<'py>,
    ports: usize,
    port_bytes_per_s: f64,
    src: &[u8],
    dst: &[u8],
    size: &[u8],
    release: &[u8],
    policy: &str,
    progress: Option<Py<PyAny>>,
    progress_s: f64,
) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let work_conserving = match policy {
        "fs" => true,
        "fs-static" => false,
        _ => return Err(PyValueError::new_err(format!("policy: expected fs or fs-static, got {policy}"))),
    };
    let (src, dst, size, release) = (as_i64(src), as_i64(dst), as_f64(size), as_f64(release));
    let nf = size.len();
    if src.len() != nf || dst.len() != nf || release.len() != nf {
        return Err(PyValueError::new_err("src, dst, size, release: expected equal lengths"));
    }
    for i in 0..nf {
        if src[i] < 0 || dst[i] < 0 || src[i] as usize >= ports || dst[i] as usize >= ports {
            return Err(PyValueError::new_err(format!("flow {i}: port outside 0..{ports}")));
        }
    }
    let (finish, events) = with_progress(py, progress, progress_s, |prog| {
        bigswitch::Loop::new(ports, port_bytes_per_s, work_conserving)
            .run(&src, &dst, &size, &release, prog)
            .map_err(String::from)
    })?;
    Ok((finish_bytes(py, &finish), events))
}

/// The engine's work counts since the last call, as (name, count) pairs (empty unless
/// the core was built with the `counts` feature).
#[pyfunction]
#[pyo3(name = "counts")]
fn work_counts() -> Vec<(String, u64)> {
    counts::take()
}

#[pymodule]
fn streamband_coflow_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SchedParams>()?;
    m.add_function(wrap_pyfunction!(fabric_run, m)?)?;
    m.add_function(wrap_pyfunction!(bigswitch_run, m)?)?;
    m.add_function(wrap_pyfunction!(work_counts, m)?)?;
    Ok(())
}

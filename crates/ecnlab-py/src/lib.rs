//! `ecnlab._native`: the Python bindings: argument conversion, typed exceptions, no simulation logic.

use ecnlab::experiment::{self, Options, ScaleKind};
use ecnlab::scenario::Source;
use ecnlab::thresholds;
use ecnlab::{builtin, Cancel, Error, RunOptions, RunReport, Scenario};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Raises the matching class of `ecnlab.errors`: ConfigError(message, field), RunError, else EcnlabError; an
/// interrupted run (`cancel_all`) as KeyboardInterrupt, what Ctrl-C raises.
fn py_err(py: Python<'_>, e: Error) -> PyErr {
    if let Error::Interrupted = e {
        return PyKeyboardInterrupt::new_err("interrupted");
    }
    let msg = e.to_string();
    let made = py.import("ecnlab.errors").and_then(|m| match &e {
        Error::Config { path, .. } => m.getattr("ConfigError")?.call1((msg, path.clone())),
        Error::Run(_) => m.getattr("RunError")?.call1((msg,)),
        _ => m.getattr("EcnlabError")?.call1((msg,)),
    });
    match made {
        Ok(v) => PyErr::from_value(v),
        Err(err) => err,
    }
}

/// A scenario from `source`, read as `kind`: "path", "name" (shipped), "toml" (text), "json" (a document as
/// JSON, from a Python dict), or "auto" (an existing file, else a shipped name, else TOML text): the library's
/// loader, which the CLI shares.
fn load(source: &str, kind: &str, sets: &[String]) -> Result<Scenario, Error> {
    let src = match kind {
        "auto" => Source::Auto(source),
        "path" => Source::Path(Path::new(source)),
        "name" => Source::Name(source),
        "toml" => Source::Toml(source),
        "json" => Source::Json(source),
        k => return Err(Error::config("kind", format!("`{k}`: one of auto, path, name, toml, json"))),
    };
    Scenario::load(&src, sets)
}

/// Bumped by `cancel_all`: a waiting call that started under an older value cancels its run.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// How long a call waits for its run between looks at Python's signals: Ctrl-C is answered within about this
/// plus the run's own reaction (2^16 events, a few ms).
const SLICE: Duration = Duration::from_millis(50);

/// Runs `work` on a worker thread with the GIL released, and raises KeyboardInterrupt soon after Ctrl-C.
/// Python runs signal handlers only when the main thread executes bytecode, which it does not while it sits in
/// native code: so this thread waits in slices, and between them takes the GIL to run `check_signals` (the
/// handlers: KeyboardInterrupt, or whatever the user installed) and to watch `cancel_all`'s epoch (the only way
/// to reach runs on other threads, where signals never arrive). Either cancels the run's token; the worker then
/// stops within milliseconds and is joined before the exception is returned, so no run outlives its call.
fn interruptible<T: Send>(py: Python<'_>, work: impl FnOnce(Cancel) -> Result<T, Error> + Send) -> PyResult<T> {
    let epoch = EPOCH.load(Ordering::SeqCst);
    let cancel = Cancel::new();
    let (result, raised) = std::thread::scope(|s| {
        let token = cancel.clone();
        let caller = std::thread::current();
        let worker = s.spawn(move || {
            // Wakes the waiting caller when the work ends, by return or by panic.
            struct Wake(std::thread::Thread);
            impl Drop for Wake {
                fn drop(&mut self) {
                    self.0.unpark();
                }
            }
            let _wake = Wake(caller);
            work(token)
        });
        let mut raised: Option<PyErr> = None;
        loop {
            // An unpark before the park makes it return at once: no lost wake-up.
            py.allow_threads(|| std::thread::park_timeout(SLICE));
            if worker.is_finished() {
                break;
            }
            if raised.is_none() && !cancel.is_cancelled() {
                if let Err(e) = py.check_signals() {
                    raised = Some(e);
                    cancel.cancel();
                } else if EPOCH.load(Ordering::SeqCst) != epoch {
                    cancel.cancel();
                }
            }
        }
        match py.allow_threads(|| worker.join()) {
            Ok(r) => (r, raised),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    match raised {
        // The handler's exception (KeyboardInterrupt), whatever the cut-short run returned.
        Some(e) => Err(e),
        None => result.map_err(|e| py_err(py, e)),
    }
}

/// Cancels every run of this module in progress in this process (on any thread): each raises KeyboardInterrupt.
/// Runs that start afterwards are unaffected. For `sweep(backend="threads")` on Ctrl-C.
#[pyfunction]
fn cancel_all() {
    EPOCH.fetch_add(1, Ordering::SeqCst);
}

/// A finished run, held in Rust; Python reads its tables as CSV text. Beside it, the notes on deprecated keys its
/// scenario used.
#[pyclass(module = "ecnlab._native", frozen)]
struct Report(RunReport, Vec<String>);

#[pymethods]
impl Report {
    fn summary_json(&self) -> String {
        self.0.summary.to_string()
    }
    fn deprecated(&self) -> Vec<String> {
        self.1.clone()
    }
    fn config_toml(&self) -> &str {
        &self.0.config_toml
    }
    fn fct_csv(&self) -> String {
        self.0.fct_csv()
    }
    fn trace_csv(&self) -> String {
        self.0.trace_csv()
    }
    fn series_names(&self) -> Vec<String> {
        self.0.series.iter().map(|s| s.name.clone()).collect()
    }
    fn series_csv(&self, name: &str) -> Option<String> {
        self.0.series.iter().find(|s| s.name == name).map(|s| s.to_csv())
    }
    /// The run directory `ecnlab-sim run --out DIR` writes (never over a directory ecnlab did not write).
    fn write_dir(&self, py: Python<'_>, dir: PathBuf) -> PyResult<()> {
        py.allow_threads(|| self.0.write_dir(&dir)).map(drop).map_err(|e| py_err(py, e))
    }
}

/// Checks that `dir` may become a run directory (new, empty, or an ecnlab run directory to replace) and that
/// its location is writable, leaving nothing behind: `ecnlab run --out` calls it before simulating.
#[pyfunction]
fn check_run_dir(py: Python<'_>, dir: PathBuf) -> PyResult<()> {
    ecnlab::outdir::Staged::new(&dir).map(drop).map_err(|e| py_err(py, e))
}

/// Validates the scenario and builds (not runs) it; returns the resolved scenario as TOML, and the notes on
/// deprecated keys it used. Interruptible (a large topology takes a while to build), though a build cannot stop
/// midway: Ctrl-C waits for it.
#[pyfunction]
fn resolve(py: Python<'_>, source: String, kind: &str, sets: Vec<String>) -> PyResult<(String, Vec<String>)> {
    interruptible(py, |_| {
        let sc = load(&source, kind, &sets)?;
        ecnlab::Sim::new(&sc)?;
        Ok((sc.to_toml(), sc.deprecated.clone()))
    })
}

/// Runs one scenario on a worker thread with the GIL released; Ctrl-C (or `cancel_all`) stops it.
#[pyfunction]
fn run(py: Python<'_>, source: String, kind: &str, sets: Vec<String>) -> PyResult<Report> {
    interruptible(py, |cancel| {
        let sc = load(&source, kind, &sets)?;
        let report = ecnlab::run_with(&sc, &RunOptions { progress: false, cancel, no_fast_paths: false })?;
        Ok(Report(report, sc.deprecated))
    })
}

/// (name, TOML text) of every shipped scenario.
#[pyfunction]
fn scenarios() -> Vec<(&'static str, &'static str)> {
    builtin::SCENARIOS.to_vec()
}

/// Every shipped experiment as JSON: id, paper, title, setup, result, axes, metrics.
#[pyfunction]
fn experiments(py: Python<'_>) -> PyResult<String> {
    let mut out = vec![];
    for id in experiment::registry::ids() {
        let d = experiment::registry::get(id).map_err(|e| py_err(py, e))?;
        out.push(serde_json::json!({
            "id": d.id, "paper": d.paper, "title": d.title, "setup": d.setup, "result": d.result,
            "axes": d.axis.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
            "metrics": d.metrics.keys().collect::<Vec<_>>(),
        }));
    }
    Ok(serde_json::Value::Array(out).to_string())
}

/// Reproduces experiment `id` into `out` (table.csv, check.md, check.json) with the GIL released; Ctrl-C stops
/// it, keeping the finished points in `out/runs/` (the next call resumes from them).
#[pyfunction]
fn reproduce(py: Python<'_>, id: String, scale: &str, jobs: usize, out: PathBuf, progress: bool) -> PyResult<String> {
    let scale = match scale {
        "quick" => ScaleKind::Quick,
        "default" => ScaleKind::Default,
        "paper" => ScaleKind::Paper,
        s => return Err(py_err(py, Error::config("scale", format!("`{s}`: one of quick, default, paper")))),
    };
    let o = interruptible(py, |cancel| {
        experiment::reproduce(&id, &Options { jobs: jobs.max(1), progress, cancel, ..Options::new(scale, out) })
    })?;
    let v = serde_json::json!({
        "pass": o.pass(), "verdict": o.verdict(), "runs": o.runs, "runs_executed": o.runs_executed, "wall_time_s": o.wall_time_s,
    });
    Ok(v.to_string())
}

/// The threshold calculator's rules (what `ecnlab-sim thresholds --json` prints) as JSON.
#[pyfunction(name = "thresholds")]
#[pyo3(signature = (rate, rtt=None, rtt_file=None, percentile=None, flows=1, weights=None, buffer=None,
                    mtu=None, k=None, lambda=1.0))]
#[allow(clippy::too_many_arguments)]
fn threshold_rules(
    py: Python<'_>,
    rate: String,
    rtt: Option<String>,
    rtt_file: Option<PathBuf>,
    percentile: Option<f64>,
    flows: u32,
    weights: Option<Vec<u64>>,
    buffer: Option<String>,
    mtu: Option<String>,
    k: Option<String>,
    lambda: f64,
) -> PyResult<String> {
    // The library's parser (shared with `ecnlab-sim thresholds`) takes text: typed values cross as the text they
    // print as, which parses back to the same value (Rust's float formatting round-trips).
    let args = thresholds::Args {
        rate: Some(rate),
        rtt,
        rtt_file,
        percentile: percentile.map(|p| p.to_string()),
        flows: Some(flows.to_string()),
        weights: weights.map(|w| w.iter().map(u64::to_string).collect::<Vec<_>>().join(",")),
        buffer,
        mtu,
        k,
        lambda: Some(lambda.to_string()),
    };
    // Errors name the parameters: `rtt-file` is `rtt_file` here.
    let (inp, rules) = args.rules(&|n| n.replace('-', "_")).map_err(|e| py_err(py, e))?;
    Ok(serde_json::Value::Array(rules.iter().map(|r| r.to_json(inp.link.rate)).collect()).to_string())
}

/// The busiest port of a summary (JSON text with a `ports` object): its name, or None when it lists none. The
/// library's rule (`ecnlab::sim::busiest_port`), which `ecnlab-sim bench` uses for its bottleneck.
#[pyfunction]
fn busiest_port(py: Python<'_>, summary_json: &str) -> PyResult<Option<String>> {
    let v: serde_json::Value =
        serde_json::from_str(summary_json).map_err(|e| py_err(py, Error::config("summary", e.to_string())))?;
    Ok(ecnlab::sim::busiest_port(&v).map(|(name, _)| name.to_string()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Report>()?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check_run_dir, m)?)?;
    m.add_function(wrap_pyfunction!(cancel_all, m)?)?;
    m.add_function(wrap_pyfunction!(scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(threshold_rules, m)?)?;
    m.add_function(wrap_pyfunction!(busiest_port, m)?)?;
    let info = PyDict::new(m.py());
    info.set_item("version", env!("CARGO_PKG_VERSION"))?;
    m.add("BUILD", info)?;
    Ok(())
}

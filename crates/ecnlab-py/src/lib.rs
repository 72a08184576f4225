//! `ecnlab._native`: the Python bindings: argument conversion, typed exceptions, no simulation logic.

use ecnlab::experiment::{self, Options, ScaleKind};
use ecnlab::thresholds::{self, Inputs, Link, RttDist, RttSummary};
use ecnlab::units::{Bytes, QueueLen, Rate, Time};
use ecnlab::{builtin, Error, RunReport, Scenario};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};

/// Raises the matching class of `ecnlab.errors`: ConfigError(message, field), RunError, else EcnlabError.
fn py_err(py: Python<'_>, e: Error) -> PyErr {
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
/// JSON, from a Python dict), or "auto" (an existing file, else a shipped name, else TOML text).
fn load(source: &str, kind: &str, sets: &[String]) -> Result<Scenario, Error> {
    let kind = match kind {
        "auto" if Path::new(source).is_file() => "path",
        "auto" if builtin::scenario(source).is_some() => "name",
        "auto" if source.contains('=') => "toml",
        k => k,
    };
    match kind {
        "path" => Scenario::from_file(Path::new(source), sets),
        "name" => match builtin::scenario(source) {
            Some(text) => Scenario::from_toml(text, sets),
            None => Err(Error::config("scenario", format!("no shipped scenario `{source}`"))),
        },
        "toml" => Scenario::from_toml(source, sets),
        "json" => {
            let v: serde_json::Value =
                serde_json::from_str(source).map_err(|e| Error::config("scenario", e.to_string()))?;
            let doc = toml::Value::try_from(v).map_err(|e| Error::config("scenario", e.to_string()))?;
            Scenario::from_toml(&toml::to_string(&doc).map_err(|e| Error::config("scenario", e.to_string()))?, sets)
        }
        _ => {
            let names: Vec<&str> = builtin::SCENARIOS.iter().map(|(n, _)| *n).collect();
            Err(Error::config(
                "scenario",
                format!("`{source}` is neither a file, a shipped scenario ({}), nor TOML text", names.join(", ")),
            ))
        }
    }
}

/// A finished run, held in Rust; Python reads its tables as CSV text.
#[pyclass(module = "ecnlab._native", frozen)]
struct Report(RunReport);

#[pymethods]
impl Report {
    fn summary_json(&self) -> String {
        self.0.summary.to_string()
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

/// Validates the scenario and builds (not runs) it; returns the resolved scenario as TOML.
#[pyfunction]
fn resolve(py: Python<'_>, source: String, kind: &str, sets: Vec<String>) -> PyResult<String> {
    py.allow_threads(|| {
        let sc = load(&source, kind, &sets)?;
        ecnlab::Sim::new(&sc)?;
        Ok(sc.to_toml())
    })
    .map_err(|e| py_err(py, e))
}

/// Runs one scenario with the GIL released.
#[pyfunction]
fn run(py: Python<'_>, source: String, kind: &str, sets: Vec<String>) -> PyResult<Report> {
    py.allow_threads(|| ecnlab::run(&load(&source, kind, &sets)?)).map(Report).map_err(|e| py_err(py, e))
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

/// Reproduces experiment `id` into `out` (table.csv, check.md, check.json) with the GIL released.
#[pyfunction]
fn reproduce(py: Python<'_>, id: String, scale: &str, jobs: usize, out: PathBuf, progress: bool) -> PyResult<String> {
    let scale = match scale {
        "quick" => ScaleKind::Quick,
        "default" => ScaleKind::Default,
        "paper" => ScaleKind::Paper,
        s => return Err(py_err(py, Error::config("scale", format!("`{s}`: one of quick, default, paper")))),
    };
    let opts = Options { scale, jobs: jobs.max(1), out, progress };
    let o = py.allow_threads(|| experiment::reproduce(&id, &opts)).map_err(|e| py_err(py, e))?;
    let v = serde_json::json!({
        "pass": o.pass(), "runs": o.runs, "runs_executed": o.runs_executed, "wall_time_s": o.wall_time_s,
    });
    Ok(v.to_string())
}

/// Parses an optional argument with `FromStr`, naming the argument in the error.
fn arg<T: std::str::FromStr>(name: &str, v: Option<String>) -> Result<Option<T>, Error>
where
    T::Err: std::fmt::Display,
{
    v.map(|s| {
        s.parse::<T>().map_err(|e| {
            let e = e.to_string();
            Error::config(name, if e.contains(&format!("`{s}`")) { e } else { format!("`{s}`: {e}") })
        })
    })
    .transpose()
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
    let go = || -> Result<String, Error> {
        let rate: Rate = arg("rate", Some(rate))?.expect("given");
        let link = Link::new(rate, arg::<Bytes>("mtu", mtu)?.unwrap_or(Bytes(1500)))?;
        let rtt_sum = match (arg::<Time>("rtt", rtt)?, rtt_file) {
            (Some(t), None) if percentile.is_none() => RttSummary::fixed(t)?,
            (None, Some(f)) => RttSummary::from_dist(&RttDist::from_file(&f)?, percentile.unwrap_or(90.0))?,
            (Some(_), None) => return Err(Error::config("percentile", "applies to rtt_file only")),
            _ => return Err(Error::config("rtt", "give exactly one of rtt and rtt_file")),
        };
        let k = arg::<QueueLen>("k", k)?.map(|q| q.resolve(link.mtu, link.rate));
        let inp = Inputs { link, rtt: rtt_sum, flows, weights, buffer: arg("buffer", buffer)?, k, lambda };
        let rules = thresholds::rules(&inp)?;
        Ok(serde_json::Value::Array(rules.iter().map(|r| r.to_json(link.rate)).collect()).to_string())
    };
    go().map_err(|e| py_err(py, e))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Report>()?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check_run_dir, m)?)?;
    m.add_function(wrap_pyfunction!(scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(threshold_rules, m)?)?;
    let info = PyDict::new(m.py());
    info.set_item("version", env!("CARGO_PKG_VERSION"))?;
    m.add("BUILD", info)?;
    Ok(())
}

//! Runs an experiment's grid on all cores: one run per point (or a bisection per combination), cached
//! under `DIR/runs/` so a re-run on the same DIR skips what is complete.

use super::def::{value_of, value_sets, Definition, Scale};
use super::expr::{self, Scope, Value};
use crate::error::Error;
use crate::scenario::Scenario;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Axis name → value for one grid point (seed included as `seed`).
pub type Binding = BTreeMap<String, Value>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleKind {
    Quick,
    Default,
    Paper,
}

impl ScaleKind {
    pub fn name(self) -> &'static str {
        match self {
            ScaleKind::Quick => "quick",
            ScaleKind::Default => "default",
            ScaleKind::Paper => "paper",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    pub scale: ScaleKind,
    pub jobs: usize,
    pub out: PathBuf,
    /// Progress lines on stderr (only when stderr is a terminal unless forced).
    pub progress: bool,
    /// Stops the grid: no further point starts, running ones end with `Error::Interrupted`; finished points
    /// stay in the cache (`runs/`), so running the same grid again resumes it.
    pub cancel: crate::Cancel,
    /// Every point run with every fast path off (`RunOptions::no_fast_paths`): the same table, slower.
    pub no_fast_paths: bool,
    /// What runs each point: the simulator when `None`.
    pub backend: Option<Backend>,
}

/// Runs one resolved scenario and returns its summary.json.
pub type RunPoint = dyn Fn(&Scenario, &crate::Cancel) -> Result<serde_json::Value, Error> + Send + Sync;

/// Something other than the simulator that runs an experiment's points (the software switch with real TCP
/// stacks, in ecnlab-switch, which depends on this crate). Its name is part of every cached point's key, so a
/// point is never taken from another backend's cache.
#[derive(Clone)]
pub struct Backend {
    pub name: &'static str,
    pub run: std::sync::Arc<RunPoint>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend").field("name", &self.name).finish()
    }
}

impl Options {
    /// `scale` into `out`: one job, no progress line, a fresh cancel token, the fast paths on. Set the rest by
    /// struct update: `Options { jobs: 4, ..Options::new(ScaleKind::Quick, dir) }`.
    pub fn new(scale: ScaleKind, out: impl Into<PathBuf>) -> Options {
        Options {
            scale,
            jobs: 1,
            out: out.into(),
            progress: false,
            cancel: Default::default(),
            no_fast_paths: false,
            backend: None,
        }
    }
}

/// One completed run: its coordinates and metrics (NaN where the summary had no value).
#[derive(Clone, Debug)]
pub struct PointResult {
    pub binding: Binding,
    pub metrics: BTreeMap<String, f64>,
    /// The simulator build that ran this point (`BUILD`; an older cached record may name another build only
    /// if its sources were the same).
    pub build: String,
}

/// This simulator build, as recorded with every point: version, git commit (`-dirty` for uncommitted
/// changes) and the hash of the simulator's sources, which is what decides whether a cached point is reused.
pub const BUILD: &str =
    concat!(env!("CARGO_PKG_VERSION"), "+", env!("ECNLAB_COMMIT"), ".src-", env!("ECNLAB_SOURCE_HASH"));

/// The checksum a cache record carries over its key and its metrics, so that a record edited by hand, or
/// truncated, is run again rather than read.
fn record_checksum(hash: &str, metrics: &serde_json::Value) -> String {
    crate::sim::report::fnv(&format!("{hash}|{metrics}"))
}

pub struct GridResult {
    pub points: Vec<PointResult>,
    /// Search outcomes: the combination's binding (seed included) and the value found.
    pub searched: Vec<(Binding, f64)>,
    pub axes: Vec<String>,
    pub runs_executed: usize,
    pub runs_cached: usize,
}

/// Scope over a binding plus constants (for templates and `where`).
pub struct BindingScope<'a> {
    pub binding: &'a Binding,
    pub constants: &'a BTreeMap<String, f64>,
}

impl Scope for BindingScope<'_> {
    fn lookup(&self, name: &str, sel: &[(String, Value)]) -> Result<Value, String> {
        if !sel.is_empty() {
            return Err(format!("`{name}[…]`: selectors are only for metrics"));
        }
        if let Some(v) = self.binding.get(name) {
            return Ok(v.clone());
        }
        self.constants.get(name).map(|&x| Value::Num(x)).ok_or_else(|| format!("unknown name `{name}`"))
    }
}

pub(crate) fn key_of(b: &Binding) -> String {
    b.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
        .chars()
        .map(|c| if c.is_alphanumeric() || "=,.-_".contains(c) { c } else { '_' })
        .collect()
}

/// One axis of a grid: (name, values, the axis's set templates, per-value set templates).
pub type AxisPlan = (String, Vec<Value>, Vec<String>, Vec<Vec<String>>);

pub struct Plan<'a> {
    def: &'a Definition,
    scale: Scale,
    pub axes: Vec<AxisPlan>,
}

impl<'a> Plan<'a> {
    pub fn new(def: &'a Definition, kind: ScaleKind) -> Result<Plan<'a>, Error> {
        let scale = def.scale.get(kind.name()).cloned().unwrap_or_default();
        let mut axes = vec![];
        for a in &def.axis {
            let vals = scale.axis.get(&a.name).unwrap_or(&a.values);
            axes.push((
                a.name.clone(),
                vals.iter().map(value_of).collect(),
                a.set.clone(),
                vals.iter().map(value_sets).collect(),
            ));
        }
        for k in scale.axis.keys() {
            if !def.axis.iter().any(|a| &a.name == k) {
                return Err(Error::config(format!("{}: scale.{}.axis.{k}", def.id, kind.name()), "no such axis"));
            }
        }
        let seeds = scale.seeds.unwrap_or(1).max(1);
        let seed_values: Vec<Value> = (1..=seeds).map(|s| Value::Num(s as f64)).collect();
        let n = seed_values.len();
        axes.push(("seed".into(), seed_values, vec!["seed={seed}".into()], vec![vec![]; n]));
        Ok(Plan { def, scale, axes })
    }

    /// Every combination of axis values not excluded by `skip`.
    pub fn combos(&self) -> Result<Vec<Binding>, Error> {
        let mut out: Vec<Binding> = vec![Binding::new()];
        for (name, vals, _, _) in &self.axes {
            out = out
                .into_iter()
                .flat_map(|b| {
                    vals.iter().map(move |v| {
                        let mut b = b.clone();
                        b.insert(name.clone(), v.clone());
                        b
                    })
                })
                .collect();
        }
        if let Some(skip) = &self.def.skip {
            let e = expr::parse(skip).map_err(|m| Error::config(format!("{}: skip", self.def.id), m))?;
            let mut kept = vec![];
            for b in out {
                let sc = BindingScope { binding: &b, constants: &self.def.constants };
                match e.eval(&sc) {
                    Ok(Value::Bool(true)) => {}
                    Ok(_) => kept.push(b),
                    Err(m) => return Err(Error::config(format!("{}: skip", self.def.id), m)),
                }
            }
            out = kept;
        }
        Ok(out)
    }

    /// The overrides for one point: definition, scale, axis templates, search templates.
    fn sets(&self, b: &Binding) -> Result<Vec<String>, Error> {
        let sc = BindingScope { binding: b, constants: &self.def.constants };
        let mut sets: Vec<String> = self.def.set.clone();
        sets.extend(self.scale.set.iter().cloned());
        for (name, vals, tpl, per_value) in &self.axes {
            if let Some(v) = b.get(name) {
                sets.extend(tpl.iter().cloned());
                if let Some(i) = vals.iter().position(|x| x == v) {
                    sets.extend(per_value[i].iter().cloned());
                }
            }
        }
        if let Some(s) = &self.def.search {
            if b.contains_key(&s.param) {
                sets.extend(s.set.iter().cloned());
            }
        }
        sets.extend(self.def.final_set.iter().cloned());
        sets.iter()
            .map(|t| expr::substitute(t, &sc).map_err(|m| Error::config(format!("{}: set `{t}`", self.def.id), m)))
            .collect()
    }

    pub fn scenario(&self, b: &Binding) -> Result<Scenario, Error> {
        let sets = self.sets(b)?;
        Scenario::from_toml(&self.def.base, &sets)
            .map_err(|e| Error::config(format!("{} at {}", self.def.id, key_of(b)), e.to_string()))
    }

    pub fn search_bounds(&self) -> Option<(i64, i64, Vec<i64>)> {
        let s = self.def.search.as_ref()?;
        Some((
            self.scale.search_lo.unwrap_or(s.lo),
            self.scale.search_hi.unwrap_or(s.hi),
            self.scale.search_also.clone().unwrap_or_else(|| s.also.clone()),
        ))
    }
}

fn extract(def: &Definition, summary: &serde_json::Value) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for (name, spec) in &def.metrics {
        if spec.starts_with('=') {
            continue;
        }
        let ptr = format!("/{}", spec.trim_start_matches('/'));
        m.insert(name.clone(), summary.pointer(&ptr).and_then(|v| v.as_f64()).unwrap_or(f64::NAN));
    }
    // Derived metrics, in name order, may use raw ones.
    struct M<'a>(&'a BTreeMap<String, f64>);
    impl Scope for M<'_> {
        fn lookup(&self, n: &str, _: &[(String, Value)]) -> Result<Value, String> {
            self.0.get(n).map(|&x| Value::Num(x)).ok_or_else(|| format!("unknown metric `{n}`"))
        }
    }
    for (name, spec) in &def.metrics {
        if let Some(e) = spec.strip_prefix('=') {
            let v = expr::parse(e).and_then(|e| e.eval(&M(&m)));
            let x = match v {
                Ok(Value::Num(x)) => x,
                _ => f64::NAN,
            };
            m.insert(name.clone(), x);
        }
    }
    m
}

struct Ctx<'a> {
    plan: &'a Plan<'a>,
    dir: PathBuf,
    executed: AtomicUsize,
    cached: AtomicUsize,
    done: AtomicUsize,
    total: usize,
    started: Instant,
    progress: bool,
    cancel: crate::Cancel,
    no_fast_paths: bool,
    backend: Option<Backend>,
}

impl Ctx<'_> {
    /// Runs one point, or reads it from the cache when its resolved scenario is unchanged.
    fn point(&self, b: &Binding) -> Result<PointResult, Error> {
        self.cancel.check()?; // a bisection's next point, or a cached one, after Ctrl-C
        let sc = self.plan.scenario(b)?;
        // A cached point is reused only for the same resolved scenario, metric definitions, ecnlab version and
        // simulator sources (a hash of the crate's `src/` and `data/` taken at build time: any change to the
        // simulator re-runs every point), and only if its checksum matches its metrics.
        let metrics = format!("{:?}", self.plan.def.metrics);
        let backend = self.backend.as_ref().map_or("", |b| b.name);
        let hash = crate::sim::report::fnv(
            &(sc.to_toml() + &metrics + env!("CARGO_PKG_VERSION") + env!("ECNLAB_SOURCE_HASH") + backend),
        );
        let file = self.dir.join(format!("{}.json", key_of(b)));
        if let Some(p) = self.cached_point(&file, &hash, b) {
            self.cached.fetch_add(1, Ordering::Relaxed);
            return Ok(p);
        }
        let summary = match &self.backend {
            None => {
                let opts = crate::RunOptions {
                    progress: false,
                    cancel: self.cancel.clone(),
                    no_fast_paths: self.no_fast_paths,
                };
                crate::run_with(&sc, &opts).map(|r| r.summary)
            }
            Some(backend) => (backend.run)(&sc, &self.cancel),
        }
        .map_err(|e| match e {
            Error::Interrupted => e, // stays distinct: the caller reports an interruption, not a failed point
            e => Error::Run(format!("{} at {}: {e}", self.plan.def.id, key_of(b))),
        })?;
        let metrics = extract(self.plan.def, &summary);
        let values: serde_json::Map<_, _> = metrics
            .iter()
            .map(|(k, v)| (k.clone(), if v.is_finite() { serde_json::json!(v) } else { serde_json::Value::Null }))
            .collect();
        let values = serde_json::Value::Object(values);
        let rec = serde_json::json!({
            "binding": key_of(b),
            "scenario_hash": hash,
            "build": BUILD,
            "checksum": record_checksum(&hash, &values),
            "metrics": values,
            "wall_time_s": summary["wall_time_s"],
        });
        crate::outdir::write_atomic(&file, rec.to_string())?;
        self.executed.fetch_add(1, Ordering::Relaxed);
        Ok(PointResult { binding: b.clone(), metrics, build: BUILD.into() })
    }

    /// The point cached in `file`, if it was made for `hash` and its checksum holds.
    fn cached_point(&self, file: &Path, hash: &str, b: &Binding) -> Option<PointResult> {
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
        if v["scenario_hash"] != hash || v["checksum"] != record_checksum(hash, &v["metrics"]).as_str() {
            return None;
        }
        let metrics =
            v["metrics"].as_object()?.iter().map(|(k, x)| (k.clone(), x.as_f64().unwrap_or(f64::NAN))).collect();
        Some(PointResult { binding: b.clone(), metrics, build: v["build"].as_str()?.to_string() })
    }

    fn tick(&self, what: &str) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if self.progress {
            let el = self.started.elapsed().as_secs_f64();
            let eta = el / done as f64 * (self.total - done) as f64;
            eprint!("\r\x1b[2K[{done}/{}] {:.0}s elapsed, ETA {:.0}s — {what}", self.total, el, eta);
            if done == self.total {
                eprintln!();
            }
        }
    }
}

/// Runs the whole grid of `def` at `opts.scale`.
pub fn run_grid(def: &Definition, opts: &Options) -> Result<GridResult, Error> {
    let plan = Plan::new(def, opts.scale)?;
    let combos = plan.combos()?;
    let dir = opts.out.join("runs");
    std::fs::create_dir_all(&dir).map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?;
    let ctx = Ctx {
        plan: &plan,
        dir,
        executed: AtomicUsize::new(0),
        cached: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        total: combos.len(),
        started: Instant::now(),
        progress: opts.progress && std::io::stderr().is_terminal(),
        cancel: opts.cancel.clone(),
        no_fast_paths: opts.no_fast_paths,
        backend: opts.backend.clone(),
    };
    let next = AtomicUsize::new(0);
    let points = Mutex::new(Vec::new());
    let searched = Mutex::new(Vec::new());
    let first_err: Mutex<Option<Error>> = Mutex::new(None);
    let bounds = plan.search_bounds();
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.max(1).min(combos.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= combos.len() || first_err.lock().unwrap().is_some() {
                    break;
                }
                if ctx.cancel.is_cancelled() {
                    // A point left unrun makes the grid incomplete: an interruption, even if no run was cut short.
                    first_err.lock().unwrap().get_or_insert(Error::Interrupted);
                    break;
                }
                let b = &combos[i];
                let r = match (&def.search, &bounds) {
                    (Some(search), Some((lo, hi, also))) => {
                        bisect(&ctx, b, &search.param, &search.metric, search.at_least, *lo, *hi, also).map(
                            |(pts, v)| {
                                points.lock().unwrap().extend(pts);
                                searched.lock().unwrap().push((b.clone(), v));
                            },
                        )
                    }
                    _ => ctx.point(b).map(|p| points.lock().unwrap().push(p)),
                };
                if let Err(e) = r {
                    first_err.lock().unwrap().get_or_insert(e);
                }
                ctx.tick(&key_of(b));
            });
        }
    });
    if let Some(e) = first_err.into_inner().unwrap() {
        return Err(e);
    }
    let mut points = points.into_inner().unwrap();
    points.sort_by_cached_key(|p| key_order(&plan, &p.binding));
    let mut searched = searched.into_inner().unwrap();
    searched.sort_by_cached_key(|s| key_order(&plan, &s.0));
    let mut axes: Vec<String> = plan.axes.iter().map(|a| a.0.clone()).collect();
    if let Some(s) = &def.search {
        axes.push(s.param.clone());
    }
    Ok(GridResult {
        points,
        searched,
        axes,
        runs_executed: ctx.executed.into_inner(),
        runs_cached: ctx.cached.into_inner(),
    })
}

/// Orders bindings by the position of each value in its axis (then the search parameter).
fn key_order(plan: &Plan, b: &Binding) -> Vec<i64> {
    let mut k: Vec<i64> = plan
        .axes
        .iter()
        .map(|(n, vals, _, _)| vals.iter().position(|v| Some(v) == b.get(n)).map_or(-1, |i| i as i64))
        .collect();
    if let Some(s) = &plan.def.search {
        if let Some(Value::Num(x)) = b.get(&s.param) {
            k.push(*x as i64);
        }
    }
    k
}

/// Largest n in [lo, hi] with metric ≥ threshold, lo − 1 if none. The metric may first rise with n (a
/// small window limits few senders) and then fall (incast collapse): a coarse pass over `also`, lo, hi and the
/// powers of two finds the largest good n and the first bad one above it; bisection then narrows the edge.
#[allow(clippy::too_many_arguments)]
fn bisect(
    ctx: &Ctx,
    base: &Binding,
    param: &str,
    metric: &str,
    at_least: f64,
    lo: i64,
    hi: i64,
    also: &[i64],
) -> Result<(Vec<PointResult>, f64), Error> {
    let mut pts: BTreeMap<i64, PointResult> = BTreeMap::new();
    let eval = |n: i64, pts: &mut BTreeMap<i64, PointResult>| -> Result<bool, Error> {
        if let std::collections::btree_map::Entry::Vacant(slot) = pts.entry(n) {
            let mut b = base.clone();
            b.insert(param.into(), Value::Num(n as f64));
            slot.insert(ctx.point(&b)?);
        }
        Ok(pts[&n].metrics.get(metric).copied().unwrap_or(f64::NAN) >= at_least)
    };
    let mut coarse: Vec<i64> = also.iter().copied().chain([lo, hi]).collect();
    coarse.extend((0..63).map(|k| 1i64 << k).take_while(|&p| p < hi).filter(|&p| p > lo));
    coarse.sort_unstable();
    coarse.dedup();
    let mut good = None;
    for &n in &coarse {
        if eval(n, &mut pts)? {
            good = Some(n);
        }
    }
    let found = match good {
        None => lo - 1,
        Some(g) => match coarse.iter().copied().find(|&n| n > g) {
            None => g,
            Some(mut bad) => {
                let mut good = g;
                while bad - good > 1 {
                    let mid = good + (bad - good) / 2;
                    if eval(mid, &mut pts)? {
                        good = mid;
                    } else {
                        bad = mid;
                    }
                }
                good
            }
        },
    };
    Ok((pts.into_values().collect(), found as f64))
}

/// Writes table.csv (one row per run) and, for searches, search.csv.
pub fn write_tables(def: &Definition, g: &GridResult, out: &Path) -> Result<(), Error> {
    let names: Vec<&String> = def.metrics.keys().collect();
    let mut s = g.axes.join(",");
    for n in &names {
        s.push(',');
        s.push_str(n);
    }
    s.push_str(",build\n");
    let cell = |v: Option<&Value>| v.map(|v| v.to_string()).unwrap_or_default();
    for p in &g.points {
        let mut row: Vec<String> = g.axes.iter().map(|a| cell(p.binding.get(a))).collect();
        for n in &names {
            let x = p.metrics.get(*n).copied().unwrap_or(f64::NAN);
            row.push(if x.is_finite() { crate::observe::fmt_num(x) } else { String::new() });
        }
        row.push(p.build.clone());
        s.push_str(&row.join(","));
        s.push('\n');
    }
    crate::outdir::write_atomic(&out.join("table.csv"), s)?;
    if let Some(search) = &def.search {
        let axes: Vec<&String> = g.axes.iter().filter(|a| **a != search.param).collect();
        let mut s = axes.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(",");
        s.push_str(&format!(",{}\n", search.name));
        for (b, v) in &g.searched {
            let mut row: Vec<String> = axes.iter().map(|a| cell(b.get(*a))).collect();
            row.push(crate::observe::fmt_num(*v));
            s.push_str(&row.join(","));
            s.push('\n');
        }
        crate::outdir::write_atomic(&out.join("search.csv"), s)?;
    }
    Ok(())
}

/// Reads back what `write_tables` wrote: DIR/table.csv (with or without the trailing `build` column that
/// tables before it lack) and, for searches, DIR/search.csv. Axis cells take the type of the definition's
/// value that prints the same (any scale's); other cells are numbers where they parse, else strings.
pub fn read_tables(def: &Definition, dir: &Path) -> Result<GridResult, Error> {
    let read = |name: &str| {
        let p = dir.join(name);
        std::fs::read_to_string(&p).map_err(|e| Error::config(p.display().to_string(), format!("cannot read: {e}")))
    };
    let mut known: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for a in &def.axis {
        known.entry(a.name.clone()).or_default().extend(a.values.iter().map(value_of));
    }
    for s in def.scale.values() {
        for (a, vs) in &s.axis {
            known.entry(a.clone()).or_default().extend(vs.iter().map(value_of));
        }
    }
    let typed = |axis: &str, cell: &str| -> Value {
        if let Some(v) = known.get(axis).and_then(|vs| vs.iter().find(|v| v.to_string() == cell)) {
            return v.clone();
        }
        cell.parse::<f64>().map(Value::Num).unwrap_or_else(|_| Value::Str(cell.to_string()))
    };
    let text = read("table.csv")?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let bad = |m: String| Error::config(dir.join("table.csv").display().to_string(), m);
    let is_metric = |c: &str| def.metrics.contains_key(c);
    let axes: Vec<String> = header.iter().filter(|c| !is_metric(c) && **c != "build").map(|c| c.to_string()).collect();
    if let Some(m) = def.metrics.keys().find(|m| !header.contains(&m.as_str())) {
        return Err(bad(format!("no column `{m}`: the table is not this definition's")));
    }
    let mut points = vec![];
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.len() != header.len() {
            return Err(bad(format!("row {}: {} cells, the header has {}", i + 1, cells.len(), header.len())));
        }
        let mut binding = Binding::new();
        let mut metrics = BTreeMap::new();
        let mut build = String::new();
        for (c, cell) in header.iter().zip(&cells) {
            if *c == "build" {
                build = cell.to_string();
            } else if is_metric(c) {
                let x = if cell.is_empty() {
                    f64::NAN
                } else {
                    cell.parse::<f64>().map_err(|_| bad(format!("row {}: `{c}` = `{cell}` is not a number", i + 1)))?
                };
                metrics.insert(c.to_string(), x);
            } else {
                binding.insert(c.to_string(), typed(c, cell));
            }
        }
        points.push(PointResult { binding, metrics, build });
    }
    let mut searched = vec![];
    if let Some(search) = &def.search {
        let text = read("search.csv")?;
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
        for line in lines.filter(|l| !l.is_empty()) {
            let cells: Vec<&str> = line.split(',').collect();
            let mut b = Binding::new();
            let mut v = f64::NAN;
            for (c, cell) in header.iter().zip(&cells) {
                if *c == search.name {
                    v = cell.parse().unwrap_or(f64::NAN);
                } else {
                    b.insert(c.to_string(), typed(c, cell));
                }
            }
            searched.push((b, v));
        }
    }
    Ok(GridResult { points, searched, axes, runs_executed: 0, runs_cached: 0 })
}

//! `ecnlab-sim`: a thin command-line front over the ecnlab library.

use ecnlab::scenario::Source;
use ecnlab::{builtin, Error, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `println!` that ends the program quietly when its output is a closed pipe (`ecnlab-sim list | head`: the
/// reader has what it wanted), where `println!` would panic. Any other write error ends it with a message.
macro_rules! out {
    ($($arg:tt)*) => {
        emit(format_args!($($arg)*))
    };
}

fn emit(line: std::fmt::Arguments) {
    use std::io::Write;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(1);
    }
}

const USAGE: &str = "\
ecnlab-sim — fast deterministic simulator for ECN marking in datacenter switches

USAGE:
  ecnlab-sim run SCENARIO --out DIR [--seed N] [--set path=value]...
  ecnlab-sim validate SCENARIO [--set path=value]...
  ecnlab-sim emulate SCENARIO --out DIR [--set path=value]...   (root: real TCP stacks through ecnlab's ports)
  ecnlab-sim emulate --cleanup   (removes namespaces and DCTCP registrations left by killed emulations)
  ecnlab-sim emulate --bench [--rate R]... [--seconds S]   (the software switch's forwarding benchmark)
  ecnlab-sim list
  ecnlab-sim bench [--scenario NAME|FILE] [--json] [--set path=value]...
  ecnlab-sim reproduce ID|all [--quick | --paper] [--jobs N] [--out DIR]   (default DIR: results/ID)
  ecnlab-sim reproduce ID|all --recheck [--out DIR]   (re-evaluate checks from DIR/table.csv; runs nothing)
  ecnlab-sim reproduce ID --emulate [--quick] [--out DIR]   (root: the [emulate] points in the simulator and on real
                        TCP stacks through the software switch; default DIR: results/ID/emulated, with compare.md)
  ecnlab-sim thresholds --rate R (--rtt T | --rtt-file F.csv [--percentile P]) [--flows N] [--weights 1,1,2]
                        [--buffer B] [--mtu 1500B] [--k K] [--lambda L] [--json]
  ecnlab-sim thresholds --pias --cdf NAME|F.csv --load L [--levels 4] [--json]

SCENARIO is a TOML file, the name of a shipped scenario (see `list`), or TOML text. `run`, `bench` and `reproduce`
take --no-fast-paths: every fast path off (lazy departures, idle pass-through, one-sided pumps); the same results, slower.
Exit codes: 0 success, 1 run failure or failed checks, 2 invalid input (and `emulate` without root), 130 interrupted (Ctrl-C; 143 on
SIGTERM): `run` and `emulate` then write no directory; `reproduce` keeps finished points in DIR/runs/ and resumes from them.";

struct Args {
    rest: Vec<String>,
}

impl Args {
    fn flag(&mut self, name: &str) -> bool {
        let before = self.rest.len();
        self.rest.retain(|a| a != name);
        before != self.rest.len()
    }
    fn value(&mut self, name: &str) -> Result<Option<String>, Error> {
        let Some(i) = self.rest.iter().position(|a| a == name) else {
            return Ok(None);
        };
        if i + 1 >= self.rest.len() {
            return Err(Error::config(name, "needs a value"));
        }
        let v = self.rest.remove(i + 1);
        self.rest.remove(i);
        Ok(Some(v))
    }
    fn values(&mut self, name: &str) -> Result<Vec<String>, Error> {
        let mut out = vec![];
        while let Some(v) = self.value(name)? {
            out.push(v);
        }
        Ok(out)
    }
    fn positional(&mut self, what: &str) -> Result<String, Error> {
        if self.rest.is_empty() || self.rest[0].starts_with("--") {
            return Err(Error::config(what, "missing"));
        }
        Ok(self.rest.remove(0))
    }
    fn done(&self) -> Result<(), Error> {
        match self.rest.first() {
            Some(a) => Err(Error::config(a.as_str(), "unexpected argument")),
            None => Ok(()),
        }
    }
}

/// The scenario argument through the library's loader (`Scenario::load`, shared with Python), its errors about
/// the argument itself at `SCENARIO`, as this command line spells it.
fn load(spec: &str, sets: &[String]) -> Result<Scenario, Error> {
    let sc = Scenario::load(&Source::Auto(spec), sets).map_err(|e| match e {
        Error::Config { path, msg } if path == "scenario" => Error::Config { path: "SCENARIO".into(), msg },
        e => e,
    })?;
    for note in &sc.deprecated {
        eprintln!("warning: {note}");
    }
    Ok(sc)
}

fn cmd_run(mut a: Args) -> Result<(), Error> {
    interrupt::install();
    let out = a.value("--out")?.ok_or_else(|| Error::config("--out", "missing: where to write the run directory"))?;
    let no_fast_paths = a.flag("--no-fast-paths");
    let seed = a.value("--seed")?;
    let mut sets = a.values("--set")?;
    if let Some(s) = seed {
        sets.push(format!("seed={s}"));
    }
    let spec = a.positional("SCENARIO")?;
    a.done()?;
    let sc = load(&spec, &sets)?;
    // The output location is checked, and its staging directory made, before the simulation: a bad `--out`
    // costs no run, and a failed or interrupted run removes what it staged.
    let staged = ecnlab::outdir::Staged::new(Path::new(&out))?;
    let report = ecnlab::run_with(&sc, &interrupt::run_options(no_fast_paths))?;
    interrupt::token().check()?; // a signal after the last check: still no directory
    report.write_staged(staged)?;
    let s = &report.summary;
    eprintln!(
        "ran {} ({} simulated s, traffic until {:.6} s) in {:.2} s wall, {} events; goodput {:.3} Gb/s → {}",
        if sc.name.is_empty() { &spec } else { &sc.name },
        s["sim_time_s"],
        s["traffic_end_s"].as_f64().unwrap_or(0.0),
        s["wall_time_s"].as_f64().unwrap_or(0.0),
        s["events"],
        s["goodput"]["total_gbps"].as_f64().unwrap_or(0.0),
        out
    );
    Ok(())
}

/// The software switch's errors as this front reports them: what the user must change (privileges, settings)
/// exits 2, failures of the run 1.
fn switch_err(e: ecnlab_switch::Error) -> Error {
    use ecnlab_switch::Error as E;
    match e {
        E::Ecnlab(e) => e,
        E::Config { field, msg } => Error::config(field, msg),
        e @ E::Permission { .. } => Error::config("privileges", e.to_string()),
        e => Error::Run(e.to_string()),
    }
}

/// `emulate`: the scenario on the software switch with the hosts' kernels (docs/EMULATION.md), written as the
/// simulator's run directory plus pcap/ and an `emulation` block in summary.json.
fn cmd_emulate(mut a: Args) -> Result<(), Error> {
    // The harness's own signal cleanup first, then this command's handler over it: Ctrl-C cancels the run,
    // which then removes everything itself and exits 130 (a second Ctrl-C ends at once; `--cleanup` removes
    // what that leaves).
    ecnlab_switch::netns::install_signal_cleanup().map_err(switch_err)?;
    interrupt::install();
    if a.flag("--cleanup") {
        a.done()?;
        let removed = ecnlab_switch::emulate::cleanup().map_err(switch_err)?;
        for r in &removed {
            out!("removed {r}");
        }
        eprintln!("emulate --cleanup: {} removed", removed.len());
        return Ok(());
    }
    if a.flag("--bench") {
        return emulate_bench(a);
    }
    let out = a.value("--out")?.ok_or_else(|| Error::config("--out", "missing: where to write the run directory"))?;
    let sets = a.values("--set")?;
    let spec = a.positional("SCENARIO")?;
    a.done()?;
    let sc = load(&spec, &sets)?;
    // Everything that refuses the run does so before a directory is staged.
    sc.check_emulatable()?;
    ecnlab_switch::netns::require_capabilities().map_err(switch_err)?;
    let staged = ecnlab::outdir::Staged::new(Path::new(&out))?;
    let opts = ecnlab_switch::emulate::Options {
        cancel: interrupt::token(),
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
    };
    let pcap = ecnlab_switch::emulate::pcap_dir(staged.dir());
    let run = ecnlab_switch::emulate::run(&sc, Some(&pcap), &opts).map_err(switch_err)?;
    interrupt::token().check()?;
    run.write_staged(staged)?;
    let s = &run.summary;
    let port = ecnlab::sim::busiest_port(s).map(|(n, p)| (n.to_string(), p["occupancy"]["mean_pkts"].clone()));
    eprintln!(
        "emulated {} ({} s, hosts' TCP: {}) in {:.2} s wall; goodput {:.4} Gb/s{}; ring drops {}, late offers {} → {}",
        if sc.name.is_empty() { &spec } else { &sc.name },
        s["sim_time_s"],
        s["emulation"]["host_cc"].as_str().unwrap_or("?"),
        s["wall_time_s"].as_f64().unwrap_or(0.0),
        s["goodput"]["total_gbps"].as_f64().unwrap_or(0.0),
        port.map(|(n, q)| format!(", {n} mean queue {:.2} pkts", q.as_f64().unwrap_or(0.0))).unwrap_or_default(),
        s["emulation"]["ring_drops"],
        s["emulation"]["late_offers"],
        out
    );
    Ok(())
}

/// `emulate --bench`: the forwarding benchmark at each `--rate` (default 100 Mb/s and 1 Gb/s), a table on
/// stderr and one JSON object per rate on stdout.
fn emulate_bench(mut a: Args) -> Result<(), Error> {
    let rates: Vec<ecnlab::units::Rate> = a
        .values("--rate")?
        .iter()
        .map(|r| parse::<ecnlab::units::Rate>("--rate", Some(r.clone()), "a rate such as 100Mbps or 1Gbps"))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect();
    let secs: f64 = parse("--seconds", a.value("--seconds")?, "seconds, 0.5 to 60")?.unwrap_or(2.0);
    a.done()?;
    if !(0.5..=60.0).contains(&secs) {
        return Err(Error::config("--seconds", format!("{secs}: allowed 0.5 to 60")));
    }
    let rates = if rates.is_empty() {
        vec![ecnlab::units::Rate(100_000_000), ecnlab::units::Rate(1_000_000_000)]
    } else {
        rates
    };
    if let Some(r) = rates.iter().find(|r| r.0 < 1_000_000 || r.0 > 10_000_000_000) {
        return Err(Error::config("--rate", format!("{r}: allowed 1 Mb/s to 10 Gb/s")));
    }
    ecnlab_switch::netns::require_capabilities().map_err(switch_err)?;
    for rate in rates {
        interrupt::token().check()?;
        let b = ecnlab_switch::bench::forwarding(rate, std::time::Duration::from_secs_f64(secs)).map_err(switch_err)?;
        let p = &b.port;
        eprintln!(
            "{rate}: {:.4} Gb/s = {:.4} of the rate, {:.0} packets/s (port utilization {:.4}); departure gap p50 {:.3} us \
             (ideal {:.3}), p99 {:.3} us; added RTT p50 {:.1} us, p99 {:.1} us (over a {:.1} us model); ring drops {}, \
             late offers {}",
            b.received_bps / 1e9,
            b.achieved,
            b.received_pps,
            p.utilization,
            p.gap_ns.p50 / 1e3,
            p.ideal_gap_ns.p50 / 1e3,
            p.gap_ns.p99 / 1e3,
            b.added_rtt_ns.p50 / 1e3,
            b.added_rtt_ns.p99 / 1e3,
            b.model_rtt.as_secs_f64() * 1e6,
            p.ring_drops,
            b.switch.late_offers,
        );
        out!("{}", b.to_json());
    }
    Ok(())
}

fn cmd_validate(mut a: Args) -> Result<(), Error> {
    let sets = a.values("--set")?;
    let spec = a.positional("SCENARIO")?;
    a.done()?;
    let sc = load(&spec, &sets)?;
    ecnlab::Sim::new(&sc)?;
    out!("ok: {spec}");
    Ok(())
}

fn cmd_list(a: Args) -> Result<(), Error> {
    a.done()?;
    out!("scenarios:");
    for (n, text) in builtin::SCENARIOS {
        let first = text.lines().next().unwrap_or("").trim_start_matches('#').trim();
        out!("  {n:<24} {first}");
    }
    out!("experiments:");
    for id in ecnlab::experiment::registry::ids() {
        let d = ecnlab::experiment::registry::get(id)?;
        out!("  {id:<24} {}", d.title);
    }
    Ok(())
}

/// A `Key:  N kB` line of a /proc/self file (Linux), in MiB.
fn proc_mib(file: &str, key: &str) -> Option<f64> {
    let s = std::fs::read_to_string(file).ok()?;
    let line = s.lines().find(|l| l.starts_with(key))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The environment variable that turns the huge-page heap off (`0`) or on (`1`, the default).
const HUGEPAGES_VAR: &str = "ECNLAB_HUGEPAGES";

/// Set in the re-executed process, so that it never re-executes again.
const REEXECUTED_VAR: &str = "ECNLAB_HUGEPAGES_REEXECUTED";

/// Backs the heap with transparent huge pages for the commands that simulate (`run`, `bench`, `reproduce`).
/// At tens of thousands of flows the simulation touches tens of MiB (flow records, packets, queues) in no
/// particular order, and with 4 KiB pages many of those touches also miss the TLB. glibc (≥ 2.35) puts its
/// heap on huge pages when started with the tunable `glibc.malloc.hugetlb=1`, and the kernel grants them to
/// such requests in its usual THP mode (`madvise`). glibc reads tunables only at start-up, so the binary
/// re-executes itself once with the tunable added to `GLIBC_TUNABLES` (unless that already sets
/// `glibc.malloc.hugetlb`). Results do not depend on it (addresses never reach the simulation); wall time
/// drops by about 5 % at 50 000 flows and 11 % on a 1 024-host fat-tree.
#[cfg_attr(not(all(target_os = "linux", target_env = "gnu")), allow(unused_variables))]
fn use_huge_pages(cmd: &str) -> Result<(), Error> {
    match std::env::var_os(HUGEPAGES_VAR) {
        None => {}
        Some(v) if v == "1" => {}
        Some(v) if v == "0" => return Ok(()),
        Some(v) => {
            return Err(Error::config(HUGEPAGES_VAR, format!("must be 0 (off) or 1 (on), got {v:?}")));
        }
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if matches!(cmd, "run" | "bench" | "reproduce") && std::env::var_os(REEXECUTED_VAR).is_none() {
        use std::os::unix::process::CommandExt;
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        let Some(tunables) = std::env::var_os("GLIBC_TUNABLES").unwrap_or_default().into_string().ok() else {
            return Ok(()); // not text: the user's, left alone
        };
        // Started through the dynamic loader by hand, /proc/self/exe is the loader: nothing to re-execute.
        let by_loader = std::fs::read_link("/proc/self/exe")
            .is_ok_and(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("ld-")));
        if !mode.contains("[madvise]") || tunables.contains("glibc.malloc.hugetlb") || by_loader {
            return Ok(());
        }
        let tunables = match tunables.as_str() {
            "" => "glibc.malloc.hugetlb=1".to_string(),
            other => format!("{other}:glibc.malloc.hugetlb=1"),
        };
        let mut args = std::env::args_os();
        // /proc/self/exe: the running binary, even if its file has been replaced since it started.
        let mut again = std::process::Command::new("/proc/self/exe");
        if let Some(name) = args.next() {
            again.arg0(name);
        }
        // `exec` returns only if it failed; then the run goes on with small pages.
        let _ = again.args(args).env("GLIBC_TUNABLES", tunables).env(REEXECUTED_VAR, "1").exec();
    }
    Ok(())
}

fn cmd_bench(mut a: Args) -> Result<(), Error> {
    interrupt::install();
    let json = a.flag("--json");
    let no_fast_paths = a.flag("--no-fast-paths");
    let spec = a.value("--scenario")?.unwrap_or_else(|| "dctcp-8flows".into());
    let sets = a.values("--set")?;
    a.done()?;
    let sc = load(&spec, &sets)?;
    let report = ecnlab::run_with(&sc, &interrupt::run_options(no_fast_paths))?;
    let s = &report.summary;
    let wall = s["wall_time_s"].as_f64().unwrap_or(f64::NAN);
    // The bottleneck: the run's busiest port (the library's rule, which `ecnlab.sweep` shares).
    let (name, port) = report.busiest_port().map(|(n, v)| (n.to_string(), v.clone())).unwrap_or_default();
    let pkts = port["counters"]["sent_pkts"].as_u64().unwrap_or(0);
    let arrived = port["counters"]["arrived_pkts"].as_u64().unwrap_or(0).max(1);
    let out = serde_json::json!({
        "sim": "ecnlab",
        "build": build_kind(),
        "scenario": spec,
        "bottleneck_port": name,
        "sim_time_s": s["sim_time_s"],
        "traffic_end_s": s["traffic_end_s"],
        "wall_time_s": wall,
        "events": s["events"],
        "events_per_s": s["events_per_s"],
        "bottleneck_pkts": pkts,
        "bottleneck_pkts_per_s": pkts as f64 / wall,
        "peak_rss_mib": proc_mib("/proc/self/status", "VmHWM:"),
        "huge_pages_mib": proc_mib("/proc/self/smaps_rollup", "AnonHugePages:"),
        // Whether this process asked glibc for a huge-page heap (what `use_huge_pages` controls); how much the
        // kernel granted is `huge_pages_mib`, its decision at each fault.
        "huge_pages_requested": std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.hugetlb=1")),
        "goodput_gbps": s["goodput"]["total_gbps"],
        "queue_mean_pkts": port["occupancy"]["mean_pkts"],
        "queue_p99_pkts": port["occupancy"]["p99_pkts"],
        "marked_fraction": port["counters"]["marked_pkts"].as_u64().unwrap_or(0) as f64 / arrived as f64,
        "drops": port["counters"]["dropped_pkts"],
    });
    if json {
        out!("{out}");
    } else {
        for (k, v) in out.as_object().expect("object") {
            out!("{k:<24} {v}");
        }
    }
    Ok(())
}

/// Which build measured a benchmark: `debug`, `release`, or what the build script named it (`bench/pgo.sh`
/// sets ECNLAB_BUILD=pgo-native or pgo for its profile-guided binary).
fn build_kind() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        option_env!("ECNLAB_BUILD").unwrap_or("release")
    }
}

fn cmd_reproduce(mut a: Args) -> Result<(), Error> {
    if a.rest.iter().any(|x| x == "--emulate") {
        // As `emulate`: the harness's signal cleanup under this command's handler.
        ecnlab_switch::netns::install_signal_cleanup().map_err(switch_err)?;
    }
    interrupt::install();
    use ecnlab::experiment::{self, Options, ScaleKind};
    let quick = a.flag("--quick");
    let paper = a.flag("--paper");
    let recheck = a.flag("--recheck");
    let no_fast_paths = a.flag("--no-fast-paths");
    let emulate = a.flag("--emulate");
    let jobs = match a.value("--jobs")? {
        Some(j) => j
            .parse::<usize>()
            .ok()
            .filter(|&j| j >= 1)
            .ok_or_else(|| Error::config("--jobs", "must be an integer ≥ 1"))?,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let out = a.value("--out")?;
    let id = a.positional("ID")?;
    a.done()?;
    if quick && paper {
        return Err(Error::config("--quick", "choose one of --quick and --paper"));
    }
    let scale = if quick {
        ScaleKind::Quick
    } else if paper {
        ScaleKind::Paper
    } else {
        ScaleKind::Default
    };
    if emulate {
        if recheck || id == "all" || no_fast_paths {
            return Err(Error::config("--emulate", "runs one experiment ID (without --recheck or --no-fast-paths)"));
        }
        let dir = out.map_or_else(|| PathBuf::from("results").join(&id).join("emulated"), PathBuf::from);
        return reproduce_emulated(&id, scale, jobs, dir);
    }
    let ids: Vec<&str> = if id == "all" { experiment::registry::ids() } else { vec![id.as_str()] };
    let dir_of = |i: &str| match (&out, id == "all") {
        (Some(o), true) => PathBuf::from(o).join(i),
        (Some(o), false) => PathBuf::from(o),
        (None, _) => PathBuf::from("results").join(i),
    };
    for i in &ids {
        // Unknown ids and output directories ecnlab may not write fail before anything runs.
        experiment::registry::get(i)?;
        ecnlab::outdir::check_experiment(&dir_of(i))?;
    }
    let mut failed = vec![];
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for i in ids {
        let dir = dir_of(i);
        interrupt::token().check()?; // `all`: no next experiment after Ctrl-C
        let o = if recheck {
            // The table's own scale (check.json) unless --quick/--paper says otherwise.
            experiment::recheck(i, &dir, (quick || paper).then_some(scale))?
        } else {
            let opts = Options {
                jobs,
                progress: true,
                cancel: interrupt::token(),
                no_fast_paths,
                ..Options::new(scale, &dir)
            };
            experiment::reproduce(i, &opts)?
        };
        let passed = o.checks.iter().filter(|c| c.passed()).count();
        let directions = o.checks.iter().filter(|c| !c.info).count();
        let reported = o.checks.len() - directions;
        let within = o.magnitudes.iter().filter(|m| m.within()).count();
        let worst = o
            .magnitudes
            .iter()
            .filter(|m| !m.within())
            .max_by(|a, b| {
                let d = |m: &experiment::check::MagnitudeOutcome| m.deviation.map_or(f64::INFINITY, f64::abs);
                d(a).total_cmp(&d(b))
            })
            .map(|m| format!("; worst: {} paper {} ecnlab {}", m.name, m.show(Some(m.paper)), m.show(m.ecnlab)))
            .unwrap_or_default();
        *counts.entry(o.verdict()).or_default() += 1;
        eprintln!(
            "{i}: {} — {passed}/{directions} checks pass{}, {within}/{} magnitudes within tolerance{worst} ({} runs, {}) → {}",
            o.verdict(),
            if reported > 0 { format!(" ({reported} reported)") } else { String::new() },
            o.magnitudes.len(),
            o.runs,
            if recheck { "rechecked from table.csv".to_string() } else { format!("{} executed, {:.1} s", o.runs_executed, o.wall_time_s) },
            dir.join("check.md").display()
        );
        for c in o.checks.iter().filter(|c| c.failed()) {
            eprintln!(
                "  FAIL {}: {}",
                c.name,
                c.rows.iter().map(|r| format!("[{}] {}", r.at, r.measured)).collect::<Vec<_>>().join("; ")
            );
        }
        if !o.pass() {
            failed.push(i);
        }
    }
    if id == "all" {
        eprintln!(
            "verdicts: {} reproduced, {} direction only, {} not reproduced",
            counts.get("reproduced").unwrap_or(&0),
            counts.get("direction").unwrap_or(&0),
            counts.get("not_reproduced").unwrap_or(&0)
        );
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::CheckFailed(format!("checks failed in: {}", failed.join(", "))))
    }
}

/// `reproduce ID --emulate`: the points at the experiment's `[emulate]` settings in the simulator and on the
/// software switch with the hosts' kernels (root), and DIR/compare.md beside them.
fn reproduce_emulated(id: &str, scale: ecnlab::experiment::ScaleKind, jobs: usize, dir: PathBuf) -> Result<(), Error> {
    use ecnlab::experiment::{self, Backend, Options};
    // What refuses the run does so before anything is built or written: no [emulate], then no root.
    experiment::for_emulation(&experiment::registry::get(id)?, scale)?;
    ecnlab_switch::netns::require_capabilities().map_err(switch_err)?;
    let run = |sc: &Scenario, cancel: &ecnlab::Cancel| {
        let opts = ecnlab_switch::emulate::Options { cancel: cancel.clone(), progress: false };
        ecnlab_switch::emulate::run(sc, None, &opts).map(|e| e.summary).map_err(switch_err)
    };
    let backend = Backend { name: "emulated", run: std::sync::Arc::new(run) };
    let opts = Options { jobs, progress: true, cancel: interrupt::token(), ..Options::new(scale, dir.clone()) };
    let (sim, real) = experiment::reproduce_emulated(id, &opts, backend)?;
    eprintln!(
        "{id} emulated: simulator {} ({} runs), real stack {} ({} runs, {:.0} s) → {}",
        sim.verdict(),
        sim.runs,
        real.verdict(),
        real.runs,
        real.wall_time_s,
        dir.join("compare.md").display()
    );
    Ok(())
}

/// Library errors name fields as the flags are spelled without `--`.
fn flag_err(e: Error) -> Error {
    match e {
        Error::Config { path, msg } => Error::Config { path: format!("--{path}"), msg },
        e => e,
    }
}

/// The value of `flag`, if given, parsed as a `T`; the error names the flag and says what it takes (`hint`).
fn parse<T: std::str::FromStr>(flag: &str, v: Option<String>, hint: &str) -> Result<Option<T>, Error>
where
    T::Err: std::fmt::Display,
{
    v.map(|s| {
        s.parse::<T>().map_err(|e| {
            let e = e.to_string();
            let e = if e.contains(&format!("`{s}`")) { e } else { format!("`{s}`: {e}") };
            Error::config(flag, format!("{e}; {hint}"))
        })
    })
    .transpose()
}

/// Prints `rows` under `head` in aligned columns: the first `left` columns padded on the right, the others on the
/// left, except the last, which is not padded.
fn print_table<const N: usize>(head: [&str; N], rows: &[[String; N]], left: usize) {
    let mut w = head.map(|h| h.chars().count());
    for row in rows {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |c: &[String; N]| {
        let cells: Vec<String> = (0..N)
            .map(|i| {
                let pad = " ".repeat(w[i] - c[i].chars().count());
                match i {
                    _ if i + 1 == N => c[i].clone(),
                    _ if i < left => format!("{}{pad}", c[i]),
                    _ => format!("{pad}{}", c[i]),
                }
            })
            .collect();
        out!("{}", cells.join("  ").trim_end());
    };
    line(&head.map(String::from));
    for row in rows {
        line(row);
    }
}

/// Marking thresholds and buffer sizes from the papers' rules (ecnlab::thresholds), as a table or JSON; with
/// `--pias`, PIAS demotion thresholds instead.
fn cmd_thresholds(mut a: Args) -> Result<(), Error> {
    use ecnlab::thresholds;
    if a.flag("--pias") {
        return cmd_pias_thresholds(a);
    }
    let json = a.flag("--json");
    let args = thresholds::Args {
        rate: a.value("--rate")?,
        rtt: a.value("--rtt")?,
        rtt_file: a.value("--rtt-file")?.map(PathBuf::from),
        percentile: a.value("--percentile")?,
        flows: a.value("--flows")?,
        weights: a.value("--weights")?,
        buffer: a.value("--buffer")?,
        mtu: a.value("--mtu")?,
        k: a.value("--k")?,
        lambda: a.value("--lambda")?,
    };
    a.done()?;
    // The library parses (shared with Python's `thresholds`); errors name the flags.
    let (inp, rules) = args.rules(&|n| format!("--{n}"))?;
    let (link, rtt_sum, rtt_file) = (inp.link, inp.rtt, &args.rtt_file);

    let rtt_desc = match (rtt_sum.percentile, rtt_file) {
        (Some(p), Some(f)) => format!("mean {}, p{p} {} (from {})", rtt_sum.mean, rtt_sum.high, f.display()),
        _ => format!("{}", rtt_sum.mean),
    };
    if json {
        let out = serde_json::json!({
            "rate": link.rate.to_string(),
            "mtu_bytes": link.mtu.0,
            "rtt_mean": rtt_sum.mean.to_string(),
            "rtt_high": rtt_sum.high.to_string(),
            "percentile": rtt_sum.percentile,
            "lambda": inp.lambda,
            "rules": rules.iter().map(|r| r.to_json(link.rate)).collect::<Vec<_>>(),
        });
        out!("{}", serde_json::to_string_pretty(&out).expect("JSON values serialize"));
        return Ok(());
    }
    out!("C = {}, MTU = {}, λ = {}, RTT {rtt_desc}", link.rate, link.mtu, inp.lambda);
    let rows: Vec<[String; 6]> = rules
        .iter()
        .map(|r| {
            [
                r.name.clone(),
                r.equation.to_string(),
                r.bytes(link.rate).map_or("-".into(), |b| b.to_string()),
                r.packets.map_or("-".into(), |p| format!("{p:.2}")),
                r.time(link.rate).to_string(),
                r.note.clone(),
            ]
        })
        .collect();
    print_table(["rule", "equation", "bytes", "packets", "time", "note"], &rows, 2);
    Ok(())
}

/// PIAS demotion thresholds minimising the mean FCT of the M/G/1 multilevel-feedback model (transport::pias::derive,
/// PIAS §4.2) for a flow-size CDF and a load, as a table or JSON.
fn cmd_pias_thresholds(mut a: Args) -> Result<(), Error> {
    use ecnlab::transport::pias::{derive, Model, DEFAULT_LEVELS};
    let json = a.flag("--json");
    let cdf_spec = a.value("--cdf")?;
    let load: Option<f64> = parse("--load", a.value("--load")?, "a number in (0, 1)")?;
    let levels: Option<usize> = parse("--levels", a.value("--levels")?, "an integer in [2, 8]")?;
    a.done()?;
    let cdf_spec = cdf_spec.ok_or_else(|| {
        Error::config(
            "--cdf",
            format!("missing: a flow-size CDF, one of {} or a CSV file", ecnlab::dist::FlowSizeCdf::BUILTIN.join(", ")),
        )
    })?;
    let load = load.ok_or_else(|| Error::config("--load", "missing: the load the thresholds are for, in (0, 1)"))?;
    let levels = levels.unwrap_or(DEFAULT_LEVELS);
    let cdf = ecnlab::dist::load_cdf(&cdf_spec).map_err(|e| e.at("--cdf"))?;
    let d = derive(&cdf, load, levels).map_err(flag_err)?;
    let th = d.pias.thresholds();
    let given_default =
        Model::new(&cdf, load).map_err(flag_err)?.mean_fct(ecnlab::transport::Pias::default().thresholds());
    let bounds: Vec<(u64, Option<u64>)> =
        (0..d.pias.levels()).map(|j| (if j == 0 { 0 } else { th[j - 1] }, th.get(j).copied())).collect();
    if json {
        let out = serde_json::json!({
            "cdf": cdf_spec,
            "load": load,
            "levels": levels,
            "levels_used": d.pias.levels(),
            "thresholds_bytes": th,
            "mean_fct": d.mean_fct,
            "mean_fct_fifo": d.fifo_fct,
            "mean_fct_default_thresholds": given_default,
            "per_level": bounds.iter().enumerate().map(|(j, &(from, to))| serde_json::json!({
                "priority": j,
                "from_bytes": from,
                "to_bytes": to,
                "flows": d.flows[j],
                "bytes": d.bytes[j],
            })).collect::<Vec<_>>(),
        });
        out!("{}", serde_json::to_string_pretty(&out).expect("JSON values serialize"));
        return Ok(());
    }
    out!(
        "PIAS thresholds for `{cdf_spec}` at load {load}, {} of at most {levels} priorities (M/G/1 multilevel-FIFO model, PIAS §4.2)",
        d.pias.levels()
    );
    let rows: Vec<[String; 5]> = bounds
        .iter()
        .enumerate()
        .map(|(j, &(from, to))| {
            [
                j.to_string(),
                format!("{from}B"),
                to.map_or("∞".into(), |t| format!("{t}B")),
                format!("{:.1} %", 100.0 * d.flows[j]),
                format!("{:.1} %", 100.0 * d.bytes[j]),
            ]
        })
        .collect();
    print_table(["priority", "bytes sent from", "to", "flows ending here", "bytes carried"], &rows, 1);
    out!(
        "model mean FCT in units of E[size]/C: {:.3} (one FIFO queue: {:.3}; default 100KB/1MB/10MB: {:.3})",
        d.mean_fct,
        d.fifo_fct,
        given_default
    );
    let list: Vec<String> = th.iter().map(|t| format!("\"{t}B\"")).collect();
    out!("transport.pias = {{ thresholds = [{}] }}", list.join(", "));
    Ok(())
}

/// The command line as text: an argument that is not UTF-8 is invalid input (exit 2), never a panic.
fn args() -> Result<Vec<String>, Error> {
    std::env::args_os()
        .skip(1)
        .enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|a| {
                Error::config(
                    format!("argument {}", i + 1),
                    format!("{:?} is not UTF-8 text; ecnlab-sim takes UTF-8 paths and values", a),
                )
            })
        })
        .collect()
}

/// Ctrl-C (SIGINT) and SIGTERM while simulating: the handler only sets the run's `Cancel` token (an atomic store,
/// safe in a handler); the run loop sees it within a few ms and returns `Error::Interrupted`, which `main` reports as
/// one line and exit code 128 + signal. Nothing is written after that (the run directory only follows a complete
/// run). A second signal ends the process at once, for the case where the first is not being noticed.
mod interrupt {
    use std::os::raw::c_int;
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::OnceLock;

    static TOKEN: OnceLock<ecnlab::Cancel> = OnceLock::new();
    /// The first signal received, for the exit code.
    static SIGNAL: AtomicI32 = AtomicI32::new(0);
    const SIGINT: c_int = 2; // the same numbers on Linux and the BSDs/macOS
    const SIGTERM: c_int = 15;

    /// The process's token: cancelled by the handlers once `install` has run, never otherwise.
    pub fn token() -> ecnlab::Cancel {
        TOKEN.get_or_init(ecnlab::Cancel::new).clone()
    }

    /// Options for a run this signal handling can stop; `no_fast_paths` from `--no-fast-paths`.
    pub fn run_options(no_fast_paths: bool) -> ecnlab::RunOptions {
        ecnlab::RunOptions {
            progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            cancel: token(),
            no_fast_paths,
        }
    }

    /// The exit code for an interrupted run: 130 after Ctrl-C, as shells report a process the signal ended.
    pub fn exit_code() -> u8 {
        128 + SIGNAL.load(Ordering::Relaxed).clamp(1, 127) as u8
    }

    #[cfg(unix)]
    extern "C" {
        // libc's, which std links anyway: no crate for two calls. glibc's `signal` keeps the handler installed
        // and restarts interrupted system calls (BSD semantics).
        fn signal(sig: c_int, handler: extern "C" fn(c_int)) -> usize;
        fn _exit(code: c_int) -> !;
    }

    #[cfg(unix)]
    extern "C" fn on_signal(sig: c_int) {
        // Only async-signal-safe work: atomics (OnceLock::get is one load once set, and `install` sets it first).
        if let Some(t) = TOKEN.get() {
            if t.is_cancelled() {
                unsafe { _exit(128 + SIGNAL.load(Ordering::Relaxed).clamp(1, 127)) }
            }
            let _ = SIGNAL.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
            t.cancel();
        }
    }

    /// Routes SIGINT and SIGTERM to the token: first thing in the commands that simulate (after `use_huge_pages`'
    /// re-execution, which would reset the handlers); the others keep the default (the signal ends them).
    pub fn install() {
        token();
        #[cfg(unix)]
        unsafe {
            signal(SIGINT, on_signal);
            signal(SIGTERM, on_signal);
        }
    }
}

fn main() -> ExitCode {
    let mut argv = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if argv.is_empty() || argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help" {
        out!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let cmd = argv.remove(0);
    let a = Args { rest: argv };
    let r = use_huge_pages(&cmd).and_then(|()| match cmd.as_str() {
        "run" => cmd_run(a),
        "validate" => cmd_validate(a),
        "emulate" => cmd_emulate(a),
        "list" => cmd_list(a),
        "bench" => cmd_bench(a),
        "reproduce" => cmd_reproduce(a),
        "thresholds" => cmd_thresholds(a),
        _ => Err(Error::config("COMMAND", format!("unknown command `{cmd}`; see --help"))),
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Error::Interrupted) => {
            if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                eprint!("\r\x1b[2K"); // clears an unfinished progress line
            }
            eprintln!("interrupted");
            ExitCode::from(interrupt::exit_code())
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(match e {
                Error::Config { .. } => 2,
                _ => 1,
            })
        }
    }
}

//! The `ecnlab-sim` binary: exit codes, errors that name the field, no output on bad input, replayable runs.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Shortens the shipped 1.1 s scenario to a quick run.
const QUICK: [&str; 4] = ["--set", "duration=20ms", "--set", "observe.warmup=5ms"];

fn sim(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ecnlab-sim")).args(args).output().expect("the binary starts")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A summary with the fields that measure the machine, not the run (wall time, events per wall second), nulled.
fn without_wall_time(mut s: Value) -> Value {
    s["wall_time_s"] = Value::Null;
    s["events_per_s"] = Value::Null;
    s
}

/// A fresh, empty directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The hidden siblings a run directory is staged in or set aside as (`.NAME.ecnlab-*`), still present.
fn leftovers(dir: &Path) -> Vec<String> {
    let prefix = format!(".{}.ecnlab-", dir.file_name().unwrap().to_string_lossy());
    std::fs::read_dir(dir.parent().unwrap())
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

/// Bad overrides of the shipped scenario and the field path each error must name.
const BAD: &[(&str, &str)] = &[
    ("topology.kind=ring_of_fire", "topology.kind"),
    ("topology.bogus=1", "topology.bogus"),
    ("topology.rate=0Gbps", "topology.rate"),
    ("topology.rate=-10Gbps", "topology.rate"),
    ("topology.rate=10Gbp", "topology.rate"),
    ("topology.delay=-5us", "topology.delay"),
    ("topology.delay=1.2.3us", "topology.delay"),
    ("topology.hosts=0", "topology.hosts"),
    ("switch.buffer=0B", "switch.buffer"),
    ("switch.marker.threshold=301KB", "switch.marker.threshold"),
    ("switch.marker.kind=no_such_marker", "switch.marker.kind"),
    ("transport.cc.kind=no_such_cc", "transport.cc.kind"),
    ("workloads.0.dst=9", "workloads.0.dst"),
    ("workloads.0.src=1-12", "workloads.0.src"),
    ("workloads.0.size=0B", "workloads.0.size"),
    ("duration=0s", "duration"),
    ("duration=-1s", "duration"),
    ("observe.ports=[\"s0->h9\"]", "observe.ports.0"),
    ("bogus=1", "bogus"),
];

#[test]
fn validate_accepts_the_shipped_scenario_by_name_and_as_a_file() {
    let o = sim(&["validate", "dctcp-8flows"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("ok:"));
    let dir = scratch("validate-file");
    let file = dir.join("s.toml");
    std::fs::write(&file, ecnlab::builtin::scenario("dctcp-8flows").unwrap()).unwrap();
    let o = sim(&["validate", path_str(&file), "--set", "switch.marker.threshold=0pkt"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The scenario loader is the library's, shared with Python (`Scenario::load`): TOML text is a scenario too.
    let o = sim(&["validate", ecnlab::builtin::scenario("dctcp-8flows").unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn validate_rejects_each_bad_field_with_exit_2_and_its_path() {
    let wrong: Vec<String> = BAD
        .iter()
        .filter_map(|&(set, path)| {
            let o = sim(&["validate", "dctcp-8flows", "--set", set]);
            let want = format!("error: config error at `{path}`: ");
            (code(&o) != 2 || !stderr(&o).starts_with(&want))
                .then(|| format!("{set}: exit {}, stderr {:?}; want exit 2 and {want:?}", code(&o), stderr(&o)))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn malformed_or_missing_scenario_files_exit_2() {
    let dir = scratch("malformed");
    let file = dir.join("broken.toml");
    std::fs::write(&file, "duration = \n[topology\n").unwrap();
    let o = sim(&["validate", path_str(&file)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    // A TOML syntax error names the file, line and column.
    let at = format!("error: config error at `{}:1:", path_str(&file));
    assert!(stderr(&o).starts_with(&at), "{}", stderr(&o));
    let o = sim(&["validate", path_str(&dir.join("absent.toml"))]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).starts_with("error: config error at `SCENARIO`"), "{}", stderr(&o));
    // The message lists what SCENARIO may be; TOML text since the loader is shared with Python.
    assert!(stderr(&o).contains("is neither a file, a shipped scenario (dctcp-8flows, "), "{}", stderr(&o));
    assert!(stderr(&o).contains("nor TOML text"), "{}", stderr(&o));
}

#[test]
fn a_bad_run_exits_2_and_writes_no_directory() {
    let dir = scratch("bad-run");
    for (i, &(set, path)) in BAD.iter().enumerate() {
        let out = dir.join(format!("run{i}"));
        // The bad override comes last: a later `--set` of the same field wins.
        let mut args = vec!["run", "dctcp-8flows", "--out", path_str(&out)];
        args.extend(QUICK);
        args.extend(["--set", set]);
        let o = sim(&args);
        assert_eq!(code(&o), 2, "{set}: {}", stderr(&o));
        assert!(stderr(&o).contains(&format!("config error at `{path}`")), "{set}: {}", stderr(&o));
        assert!(!out.exists() && leftovers(&out).is_empty(), "{set}: left {}", out.display());
    }
}

#[test]
fn a_run_writes_its_directory_and_the_written_config_replays_it() {
    let dir = scratch("replay");
    let (a, b) = (dir.join("a"), dir.join("b"));
    let mut args = vec!["run", "dctcp-8flows", "--out", path_str(&a)];
    args.extend(QUICK);
    let o = sim(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for f in ["config.toml", "summary.json", "fct.csv"] {
        assert!(a.join(f).is_file(), "{f} missing");
    }
    assert!(leftovers(&a).is_empty(), "the staging directory is renamed away");
    let summary = |d: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).expect("summary.json parses")
    };
    let s = summary(&a);
    assert!(s["wall_time_s"].as_f64().is_some_and(|w| w > 0.0));
    assert_eq!(s["sim_time_s"].as_f64(), Some(0.02));
    assert!(s["events"].as_u64().is_some_and(|e| e > 0));

    let config = a.join("config.toml");
    let o = sim(&["run", path_str(&config), "--out", path_str(&b)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        without_wall_time(summary(&a)),
        without_wall_time(summary(&b)),
        "replaying config.toml gives the same summary"
    );
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    assert_eq!(read(&a, "fct.csv"), read(&b, "fct.csv"));
    assert_eq!(read(&a, "config.toml"), read(&b, "config.toml"), "the resolved config is a fixed point");
}

#[test]
fn unknown_commands_and_arguments_exit_2() {
    for args in [
        &["frobnicate"][..],
        &["run", "dctcp-8flows"],
        &["run", "dctcp-8flows", "--out"],
        &["validate"],
        &["validate", "dctcp-8flows", "--bogus"],
        &["validate", "no-such-scenario"],
        &["list", "extra"],
    ] {
        let o = sim(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("error: config error at `"), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn an_unknown_experiment_exits_2_before_creating_its_directory() {
    let dir = scratch("reproduce");
    let out = dir.join("out");
    let o = sim(&["reproduce", "no-such-experiment", "--quick", "--out", path_str(&out)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).starts_with("error: config error at `ID`"), "{}", stderr(&o));
    assert!(!out.exists());
}

#[test]
fn list_names_the_shipped_scenarios_and_help_exits_0() {
    let o = sim(&["list"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).lines().any(|l| l.split_whitespace().next() == Some("dctcp-8flows")), "{}", stdout(&o));
    let o = sim(&["--help"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("USAGE"));
}

#[test]
fn bench_prints_one_json_record_whose_rates_agree_with_its_counts() {
    let mut args = vec!["bench", "--json"];
    args.extend(QUICK);
    let o = sim(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object on stdout");
    // The binary is built with the test's own profile: "debug" exactly when debug assertions are on.
    assert_eq!(v["build"] == "debug", cfg!(debug_assertions), "build {}", v["build"]);
    assert_eq!(v["scenario"], "dctcp-8flows");
    let wall = v["wall_time_s"].as_f64().expect("wall time");
    let (events, pkts) = (v["events"].as_u64().expect("events"), v["bottleneck_pkts"].as_u64().expect("packets"));
    // 8 flows share one 10 Gb/s port for 20 ms: at most 20 ms × 10 Gb/s / 1500 B ≈ 16 667 packets, and most of them.
    assert!((10_000..=16_700).contains(&pkts), "{pkts} bottleneck packets");
    assert!(events > pkts, "every packet is at least one event");
    let rate = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{k}"));
    assert!((rate("events_per_s") * wall / events as f64 - 1.0).abs() < 0.01);
    assert!((rate("bottleneck_pkts_per_s") * wall / pkts as f64 - 1.0).abs() < 1e-9);
    assert!(rate("peak_rss_mib") > 0.0);
}

#[test]
fn pias_thresholds_print_a_table_json_and_a_setting_that_validates() {
    let args = ["thresholds", "--pias", "--cdf", "websearch", "--load", "0.5"];
    let o = sim(&[&args[..], &["--json"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let j: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let th: Vec<u64> = j["thresholds_bytes"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!((j["levels"].as_u64(), j["levels_used"].as_u64(), th.len()), (Some(4), Some(4), 3));
    assert!(th.windows(2).all(|w| w[0] < w[1]));
    let flows: f64 = j["per_level"].as_array().unwrap().iter().map(|l| l["flows"].as_f64().unwrap()).sum();
    assert!((flows - 1.0).abs() < 1e-9);
    assert!(j["mean_fct"].as_f64().unwrap() < j["mean_fct_fifo"].as_f64().unwrap());

    let o = sim(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let setting = out.lines().find(|l| l.starts_with("transport.pias = ")).expect("a setting line");
    for t in &th {
        assert!(setting.contains(&format!("\"{t}B\"")), "{setting}");
    }
    let set = setting.replacen(" = ", "=", 1);
    let o = sim(&["validate", "dctcp-8flows", "--set", "switch.queues=4", "--set", &set]);
    assert_eq!(code(&o), 0, "{set}: {}", stderr(&o));
}

#[test]
fn pias_thresholds_reject_bad_flags_naming_them() {
    let cases: [(&[&str], &str); 8] = [
        (&["--cdf", "websearch"], "--load"),
        (&["--load", "0.5"], "--cdf"),
        (&["--cdf", "websearch", "--load", "1.5"], "--load"),
        (&["--cdf", "websearch", "--load", "half"], "--load"),
        (&["--cdf", "websearch", "--load", "0.5", "--levels", "9"], "--levels"),
        (&["--cdf", "websearch", "--load", "0.5", "--levels", "-2"], "--levels"),
        (&["--cdf", "no_such_cdf", "--load", "0.5"], "--cdf"),
        (&["--cdf", "websearch", "--load", "0.5", "--rate", "10Gbps"], "--rate"),
    ];
    for (extra, flag) in cases {
        let o = sim(&[&["thresholds", "--pias"][..], extra].concat());
        assert_eq!(code(&o), 2, "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with(&format!("error: config error at `{flag}`")), "{extra:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{extra:?}");
    }
}

#[test]
fn thresholds_reject_bad_flags_naming_them() {
    // The parser is the library's (`thresholds::Args`, shared with Python); the CLI spells its fields as flags.
    let cases: [(&[&str], &str, &str); 11] = [
        (&["--rtt", "85us"], "--rate", "missing"),
        (&["--rate", "fast", "--rtt", "85us"], "--rate", "such as 10Gbps"),
        (&["--rate", "10Gbps"], "--rtt", "or --rtt-file F.csv"),
        (&["--rate", "10Gbps", "--rtt", "85us", "--rtt-file", "r.csv"], "--rtt", "one of --rtt and --rtt-file"),
        (&["--rate", "10Gbps", "--rtt", "85us", "--percentile", "90"], "--percentile", "applies to --rtt-file"),
        (&["--rate", "10Gbps", "--rtt-file", "/nonexistent/r.csv"], "--rtt-file", "cannot read"),
        (&["--rate", "10Gbps", "--rtt", "85us", "--weights", "1,x"], "--weights", "comma-separated"),
        (&["--rate", "10Gbps", "--rtt", "85us", "--weights", "1,0"], "--weights", "weight 0"),
        (&["--rate", "10Gbps", "--rtt", "85us", "--flows", "0"], "--flows", "≥ 1"),
        (&["--rate", "10Gbps", "--rtt", "85us", "--lambda", "2"], "--lambda", "(0, 1]"),
        (&["--rate", "10Gbps", "--rtt", "85us", "--mtu", "0B"], "--mtu", "> 0"),
    ];
    for (extra, flag, says) in cases {
        let o = sim(&[&["thresholds"][..], extra].concat());
        assert_eq!(code(&o), 2, "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with(&format!("error: config error at `{flag}`")), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{extra:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{extra:?}");
    }
    let o = sim(&["thresholds", "--rate", "10Gbps", "--rtt", "85.2us", "--weights", "1,1,2", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["rules"][0]["bytes"], 106500, "{j}");
}

/// `sim` with `ECNLAB_HUGEPAGES` set and none of the caller's `GLIBC_TUNABLES`.
fn sim_huge(args: &[&str], setting: &str) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ecnlab-sim"))
        .args(args)
        .env("ECNLAB_HUGEPAGES", setting)
        .env_remove("GLIBC_TUNABLES")
        .env_remove("ECNLAB_HUGEPAGES_REEXECUTED")
        .output()
        .expect("the binary starts")
}

/// The huge-page heap (`ECNLAB_HUGEPAGES`, on by default) is a matter of speed only: a leaf-spine run gives
/// byte-identical results with it off and on, and the process asks for it where the machine offers it.
#[test]
fn huge_pages_change_speed_not_results() {
    let dir = scratch("hugepages");
    let small = ["--set", "workloads.0.flows=200"];
    let (off, on) = (dir.join("off"), dir.join("on"));
    for (setting, out) in [("0", &off), ("1", &on)] {
        let o = sim_huge(&[&["run", "leafspine-mqecn", "--out", path_str(out)], &small[..]].concat(), setting);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    let summary = |d: &Path| without_wall_time(serde_json::from_str(&read(d, "summary.json")).unwrap());
    assert_eq!(summary(&off), summary(&on));
    assert_eq!(read(&off, "fct.csv"), read(&on, "fct.csv"));

    let bench = |setting: &str| -> Value {
        let o = sim_huge(&[&["bench", "--json", "--scenario", "leafspine-mqecn"], &small[..]].concat(), setting);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        serde_json::from_str(stdout(&o).trim()).expect("one JSON object")
    };
    // In THP mode `always` the kernel backs large mappings with huge pages unasked, so "off" means 0 only
    // elsewhere.
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let off = bench("0");
    assert_eq!(off["huge_pages_requested"], false, "not requested when turned off");
    if let Some(mib) = off["huge_pages_mib"].as_f64().filter(|_| !mode.contains("[always]")) {
        assert_eq!(mib, 0.0, "no huge pages when turned off");
    }
    let glibc = std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output().ok();
    let minor = glibc
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().strip_prefix("glibc 2.")?.parse::<u32>().ok());
    if mode.contains("[madvise]") && minor.is_some_and(|m| m >= 35) {
        // Where the kernel grants them on request and glibc has the tunable (≥ 2.35), the process asks for them.
        // How many it gets is the kernel's decision at each fault: in session 32 runs under `cargo test` got
        // none, three times in a row, while the same binary run by hand got 60 MiB with no THP fallback counted
        // in /proc/vmstat; so the grant is reported (`huge_pages_mib`), not asserted.
        let on = bench("1");
        assert_eq!(on["huge_pages_requested"], true, "requested when on: {on}");
        eprintln!("huge pages granted with ECNLAB_HUGEPAGES=1: {} MiB", on["huge_pages_mib"]);
    }

    let o = sim_huge(&["list"], "yes");
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("`ECNLAB_HUGEPAGES`: must be 0 (off) or 1 (on)"), "{}", stderr(&o));
}

/// A reader that stops early (`ecnlab-sim list | head`) ends the program quietly, not with a panic.
#[test]
fn a_closed_output_pipe_ends_the_program_quietly() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ecnlab-sim"))
        .arg("list")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the binary starts");
    assert_eq!(code(&o), 0, "stderr: {}", stderr(&o));
    assert!(stderr(&o).is_empty(), "stderr: {}", stderr(&o));
}

/// Every file and directory under `root`, relative, with each file's contents: what must survive a refused run.
fn tree(root: &Path) -> Vec<(String, Option<String>)> {
    let mut out = vec![];
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
                out.push((rel, None));
            } else {
                out.push((rel, Some(std::fs::read_to_string(&p).unwrap_or_default())));
            }
        }
    }
    out.sort();
    out
}

/// `ecnlab-sim run` of the quick scenario into `out`, started in `cwd`.
fn run_in(cwd: &Path, out: &str) -> Output {
    let mut args = vec!["run", "dctcp-8flows", "--out", out];
    args.extend(QUICK);
    std::process::Command::new(env!("CARGO_BIN_EXE_ecnlab-sim"))
        .args(&args)
        .current_dir(cwd)
        .output()
        .expect("the binary starts")
}

#[test]
fn no_out_form_deletes_or_overwrites_what_ecnlab_did_not_write() {
    // The user's tree: sentinels in the working directory, its parent, a sibling named like a staging
    // directory, a file, and a directory of their own.
    let root = scratch("sentinels");
    let cwd = root.join("a/b");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(root.join("a/runs/results.tmp")).unwrap();
    std::fs::create_dir_all(root.join("a/mine")).unwrap();
    for f in ["sentinel", "a/sentinel", "a/b/sentinel", "a/runs/results.tmp/sentinel", "a/mine/data.csv", "a/notes"] {
        std::fs::write(root.join(f), format!("user data: {f}")).unwrap();
    }
    let cwd_abs = cwd.canonicalize().unwrap();
    let refused = [
        ".".to_string(),
        "..".into(),
        "".into(),
        "../..".into(),
        "./".into(),
        "../b".into(),
        cwd_abs.display().to_string(),
        "/".into(),
        "../notes".into(),
        "../mine".into(),
        "../mine/".into(),
    ];
    let before = tree(&root);
    for out in &refused {
        let o = run_in(&cwd, out);
        assert_eq!(code(&o), 2, "--out {out:?} was not refused: {}", stderr(&o));
        assert!(stderr(&o).contains("config error at `--out`"), "--out {out:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("ran dctcp"), "--out {out:?} ran the simulation first");
        assert_eq!(tree(&root), before, "--out {out:?} changed the user's files");
    }
    // Names that merely look like ecnlab's own: a sibling `results.tmp` survives, and `x.tmp` is a run directory
    // like any other.
    for out in ["../runs/results.v2", "../runs/results", "x.tmp"] {
        let o = run_in(&cwd, out);
        assert_eq!(code(&o), 0, "--out {out}: {}", stderr(&o));
        assert!(cwd.join(out).join("summary.json").is_file(), "--out {out}: no run directory");
        assert!(leftovers(&cwd.join(out)).is_empty());
    }
    assert_eq!(
        std::fs::read_to_string(root.join("a/runs/results.tmp/sentinel")).unwrap(),
        "user data: a/runs/results.tmp/sentinel"
    );
    let mut after = tree(&root);
    let ours = ["a/runs/results.v2", "a/runs/results", "a/b/x.tmp"];
    after.retain(|(p, _)| !ours.iter().any(|r| p == r || p.starts_with(&format!("{r}/"))));
    assert_eq!(after, before, "only the three run directories were added");
    // A run directory is replaced by the next run into it, and an empty directory may be the target.
    std::fs::create_dir(cwd.join("empty")).unwrap();
    for out in ["x.tmp", "empty"] {
        assert_eq!(code(&run_in(&cwd, out)), 0);
        assert!(cwd.join(out).join("fct.csv").is_file());
    }
}

#[test]
fn an_unwritable_output_location_fails_before_the_simulation() {
    let dir = scratch("unwritable");
    // /proc takes no new directories, even for root (CI runs as root, so permission bits would not do).
    let t0 = std::time::Instant::now();
    let mut args = vec!["run", "dctcp-8flows", "--out", "/proc/ecnlab-no-such/run"];
    args.extend(["--set", "duration=30s"]); // minutes of simulation if it ran
    let o = sim(&args);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("/proc/ecnlab-no-such"), "{}", stderr(&o));
    assert!(t0.elapsed() < std::time::Duration::from_secs(10), "it simulated first");
    let _ = dir;
}

#[test]
fn a_kill_during_the_swap_leaves_the_old_or_the_new_run_directory_never_a_partial_one() {
    let dir = scratch("swap");
    let target = dir.join("run");
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.json")).ok();
    // A 10 ms run of the shipped scenario into the target, with the given seed.
    let args = |seed: &'static str| -> Vec<String> {
        let short = ["dctcp-8flows", "--set", "duration=10ms", "--set", "observe.warmup=2ms", "--seed", seed];
        [&["run", "--out", path_str(&target)][..], &short[..]].concat().into_iter().map(String::from).collect()
    };
    let run = |seed| {
        let a = args(seed);
        sim(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    for step in ["before", "between", "after"] {
        let _ = std::fs::remove_dir_all(&target);
        let o = run("1");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let old = summary(&target).expect("the first run directory is complete");
        let flag = dir.join(format!("held-{step}"));
        let _ = std::fs::remove_file(&flag);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ecnlab-sim"))
            .args(args("2"))
            .env("ECNLAB_TEST_HOLD_SWAP", format!("{step}:{}", flag.display()))
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while !flag.exists() {
            assert!(t0.elapsed().as_secs() < 60, "{step}: the run never reached the swap");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child.kill().unwrap(); // SIGKILL: no handler, no cleanup
        child.wait().unwrap();
        match (step, summary(&target)) {
            ("before", Some(s)) => assert_eq!(s, old, "killed before the swap: the old directory stays"),
            ("between", None) => assert!(!target.exists(), "killed between the renames: no target at all"),
            ("after", Some(s)) => assert_ne!(s, old, "killed after the swap: the new directory is in place"),
            (step, s) => panic!("killed at {step}: target summary {s:?}"),
        }
        if let Some(s) = summary(&target) {
            for f in ["config.toml", "fct.csv", ".ecnlab"] {
                assert!(target.join(f).is_file(), "{step}: a complete-looking directory without {f}: {s}");
            }
        }
        // The next run removes the dead writer's leftovers and writes a complete directory.
        let o = run("3");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(leftovers(&target).is_empty(), "{step}: leftovers {:?}", leftovers(&target));
    }
}

#[test]
fn reproduce_refuses_a_directory_it_did_not_write_before_running_anything() {
    let dir = scratch("reproduce-out");
    let mine = dir.join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("table.csv"), "user data").unwrap();
    let o = sim(&["reproduce", "pmsb-fig14", "--quick", "--out", path_str(&mine)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("not an ecnlab directory"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(mine.join("table.csv")).unwrap(), "user data");
    assert!(!mine.join("runs").exists());
    // A run directory is not an experiment directory either, and `all` checks every target first.
    let run = dir.join("run");
    assert_eq!(
        code(&sim(&[
            "run",
            "dctcp-8flows",
            "--out",
            path_str(&run),
            "--set",
            "duration=5ms",
            "--set",
            "observe.warmup=1ms"
        ])),
        0
    );
    std::fs::create_dir_all(dir.join("all")).unwrap();
    std::fs::create_dir(dir.join("all/pmsb-fig14")).unwrap();
    std::fs::write(dir.join("all/pmsb-fig14/x"), "user data").unwrap();
    let o = sim(&["reproduce", "all", "--quick", "--out", path_str(&dir.join("all"))]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(dir.join("all")).unwrap().count(), 1, "nothing ran before the refusal");
}

#[test]
fn arguments_and_scenario_files_that_are_not_text_exit_2() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("not-text");
    let bad = std::ffi::OsStr::from_bytes(b"x\xffy.toml");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ecnlab-sim")).arg("validate").arg(bad).output().unwrap();
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("argument 2") && stderr(&o).contains("not UTF-8"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
    let latin1 = dir.join("latin1.toml");
    std::fs::write(&latin1, b"name = \"caf\xe9\"\n").unwrap();
    let o = sim(&["validate", path_str(&latin1)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("`{}:1:12`", path_str(&latin1))), "{}", stderr(&o));
    let o = sim(&["validate", path_str(&dir)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    // TOML errors say where: a duplicate key and a number too large for TOML's 64-bit integers.
    let shipped = sim(&["validate", "dctcp-8flows"]);
    assert_eq!(code(&shipped), 0);
    for (text, line) in [("seed = 1\nseed = 2\n", 2), ("duration = \"1s\"\n\nseed = 99999999999999999999\n", 3)] {
        let f = dir.join("t.toml");
        std::fs::write(&f, text).unwrap();
        let o = sim(&["validate", path_str(&f)]);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains(&format!("`{}:{line}:", path_str(&f))), "{text}: {}", stderr(&o));
    }
}

/// Starts `ecnlab-sim ARGS` on a run far too long to finish, sends it `signal` after a second, and returns its
/// output and how long it took to exit after the signal.
fn interrupted(args: &[&str], signal: &str) -> (Output, std::time::Duration) {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_ecnlab-sim"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    std::thread::sleep(std::time::Duration::from_secs(1));
    let sent = std::time::Instant::now();
    let kill = std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().expect("kill runs");
    assert!(kill.success());
    let o = child.wait_with_output().expect("the binary ends");
    (o, sent.elapsed())
}

#[test]
fn ctrl_c_stops_a_run_with_exit_130_one_line_and_no_directory() {
    let dir = scratch("interrupted");
    let out = dir.join("run");
    // 100 simulated seconds: minutes of wall time, so the signal always arrives mid-run.
    let (o, took) = interrupted(&["run", "dctcp-8flows", "--out", path_str(&out), "--set", "duration=100s"], "-INT");
    assert_eq!(code(&o), 130, "stderr: {}", stderr(&o));
    assert_eq!(stderr(&o), "interrupted\n");
    assert!(took.as_secs_f64() < 2.0, "exited {took:?} after the signal");
    assert!(!out.exists() && leftovers(&out).is_empty(), "left {}", out.display());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing written beside it either");
    // SIGTERM the same way, with its own code (128 + 15), here on `bench`.
    let (o, _) = interrupted(&["bench", "--set", "duration=100s"], "-TERM");
    assert_eq!(code(&o), 143, "stderr: {}", stderr(&o));
    assert_eq!(stderr(&o), "interrupted\n");
    assert!(stdout(&o).is_empty(), "no benchmark record: {}", stdout(&o));
}

// ---- emulate: the scenario on the software switch with real kernel TCP (docs/EMULATION.md) ----

/// Emulations busy-poll a core each and share the machine's namespaces: one at a time in this binary (the
/// command itself also waits for any other emulation on the machine).
static EMULATION: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lock for a test that emulates, or `None` (and why, printed) without the privileges it needs.
fn emulation_guard() -> Option<std::sync::MutexGuard<'static, ()>> {
    if let Err(e) = ecnlab_switch::netns::require_capabilities() {
        eprintln!("skipped: {e}");
        return None;
    }
    Some(EMULATION.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Every key path of a JSON value, array indices included, as `a.b.0.c`.
fn key_paths(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    let join = |k: &str| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") };
    match v {
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            out.insert(join(k));
            key_paths(x, &join(k), out);
        }),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| key_paths(x, &join(&i.to_string()), out)),
        _ => {}
    }
}

/// Namespaces of the harness that exist now.
fn ecnlab_namespaces() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<String>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|n: &String| n.starts_with(ecnlab_switch::netns::PREFIX))
        .collect()
}

const EMU_SHORT: [&str; 4] = ["--set", "duration=2s", "--set", "observe.warmup=500ms"];

/// Emulates and simulates the shipped scenario `name` (shortened) and checks that the emulated summary.json
/// has every key the simulator's has but the simulator-only ones, and no other outside its `emulation` block,
/// and that the run directory holds the simulator's files plus the capture `pcap`; both summaries.
fn emulated_and_simulated_with_the_same_keys(name: &str, pcap: &str) -> (Value, Value) {
    let dir = scratch(&format!("emulate-keys-{name}"));
    let (emu, simulated) = (dir.join("emu"), dir.join("sim"));
    let o = sim(&[&["emulate", name, "--out", path_str(&emu)], &EMU_SHORT[..]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = sim(&[&["run", name, "--out", path_str(&simulated)], &EMU_SHORT[..]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let read = |d: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap()
    };
    let (e, s) = (read(&emu), read(&simulated));
    let (mut ke, mut ks) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    key_paths(&e, "", &mut ke);
    key_paths(&s, "", &mut ks);
    // A simulator-only path (`*` for any port) covers itself and everything under it.
    let simulator_only = |k: &str| {
        ecnlab_switch::emulate::SIMULATOR_ONLY.iter().any(|p| {
            let (kp, pp): (Vec<&str>, Vec<&str>) = (k.split('.').collect(), p.split('.').collect());
            kp.len() >= pp.len() && pp.iter().zip(&kp).all(|(p, k)| *p == "*" || p == k)
        })
    };
    let missing: Vec<&String> = ks.difference(&ke).filter(|k| !simulator_only(k)).collect();
    assert!(missing.is_empty(), "keys the simulator writes and the emulation does not: {missing:?}");
    let extra: Vec<&String> = ke.difference(&ks).filter(|k| !k.starts_with("emulation")).collect();
    assert!(extra.is_empty(), "keys only the emulation writes outside its own block: {extra:?}");
    // The run directory is the simulator's, plus the capture the scenario asks for.
    for f in ["config.toml", "fct.csv", "series/queues.csv", "series/delivered.csv", ".ecnlab"] {
        assert!(emu.join(f).is_file(), "{f}");
    }
    let pcap = std::fs::read(emu.join(pcap)).unwrap();
    assert_eq!(&pcap[..4], &0xa1b2_3c4du32.to_ne_bytes(), "a nanosecond libpcap file");
    assert!(ecnlab_namespaces().iter().all(|n| !n.contains(&format!("-{}-", std::process::id()))));
    (e, s)
}

#[test]
fn emulate_writes_every_summary_key_the_simulator_writes_except_the_simulator_only_ones() {
    let Some(_g) = emulation_guard() else { return };
    let (e, s) = emulated_and_simulated_with_the_same_keys("emu-ecnstar-2flows", "pcap/s0-h0-egress.pcap");
    // Real stacks went through ecnlab's port: it marked, the hosts' Reno answered, nothing was lost.
    let port = &e["ports"]["s0->h0"];
    assert!(port["window_counters"]["marked_pkts"].as_u64().unwrap() > 0);
    assert_eq!(e["totals"]["dropped_pkts"], 0);
    assert_eq!(e["emulation"]["host_cc"], "reno");
    assert_eq!(e["emulation"]["tcp_ecn"], 1);
    assert!(e["goodput"]["total_gbps"].as_f64().unwrap() > 0.05, "{}", e["goodput"]);
    // The switch's RTT samples (the flows' per-ACK RTT seen from the senders' NICs): above the base RTT (about
    // 0.33 ms), and of the simulator's order (the queue near K = 20 packets, 2.4 ms, in both).
    let (re, rs) = (&e["rtt"]["0"], &s["rtt"]["0"]);
    assert!(re["count"].as_u64().unwrap() > 1000 && re["count"] == e["rtt"]["all"]["count"], "{re}");
    let (me, ms) = (re["mean_us"].as_f64().unwrap(), rs["mean_us"].as_f64().unwrap());
    assert!(me > 330.0 && me / ms > 0.5 && me / ms < 2.0, "emulated {re}, simulated {rs}");
}

#[test]
fn emulate_a_dumbbell_writes_the_simulators_keys_its_bottleneck_among_the_ports() {
    let Some(_g) = emulation_guard() else { return };
    let (e, s) = emulated_and_simulated_with_the_same_keys("emu-dumbbell-2flows", "pcap/s1-h2-egress.pcap");
    let names = |v: &Value| v["ports"].as_object().unwrap().keys().cloned().collect::<Vec<String>>();
    assert_eq!(names(&e), ["s0->h0", "s0->h1", "s0->s1", "s1->h2", "s1->s0"]);
    assert_eq!(names(&e), names(&s));
    // The bottleneck between the switches marked the real stacks' frames; nothing was lost.
    assert!(e["ports"]["s0->s1"]["window_counters"]["marked_pkts"].as_u64().unwrap() > 0);
    assert_eq!(e["totals"]["dropped_pkts"], 0);
    assert!(e["goodput"]["total_gbps"].as_f64().unwrap() > 0.05, "{}", e["goodput"]);
}

#[test]
fn a_scenario_that_cannot_be_emulated_is_refused_with_exit_2_and_no_directory() {
    // No privileges needed: the scenario is refused before anything is built or staged.
    let dir = scratch("emulate-refused");
    for (set, field) in [
        ("topology.rate=10Gbps", "topology.rate"),
        ("transport.cc={ kind = \"dcqcn\" }", "transport.cc.kind"),
        ("workloads.0={ kind = \"poisson\", load = 0.5, cdf = [\"websearch\"] }", "workloads.0.kind"),
        ("emulation.pcap=[{ port = \"s0->s1\" }]", "emulation.pcap.0.port"),
    ] {
        let out = dir.join("out");
        // The link between a dumbbell's switches is inside the forwarding thread: nothing to capture there.
        let scenario = if set.contains("s0->s1") { "emu-dumbbell-2flows" } else { "emu-ecnstar-2flows" };
        let mut args = vec!["emulate", scenario, "--out", path_str(&out), "--set", set];
        if set.contains("dcqcn") {
            args.extend(["--set", "transport.handshake=false"]);
        }
        let o = sim(&args);
        assert_eq!(code(&o), 2, "{set}: {}", stderr(&o));
        assert!(stderr(&o).contains(field), "{set}: {}", stderr(&o));
        assert!(!out.exists() && leftovers(&out).is_empty(), "{set}: nothing written");
    }
}

#[test]
fn emulate_interrupted_or_killed_leaves_nothing_that_cleanup_does_not_remove() {
    let Some(_g) = emulation_guard() else { return };
    let dir = scratch("emulate-killed");
    let start = |out: &Path, cc: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ecnlab-sim"))
            .args(["emulate", "emu-ecnstar-2flows", "--out", path_str(out), "--set", "duration=20s"])
            .args(["--set", &format!("transport.cc={{ kind = \"{cc}\" }}")])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("starts")
    };
    // Its namespaces exist once the run is under way.
    let running = |pid: u32| {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_secs(8) {
            if ecnlab_namespaces().iter().filter(|n| n.starts_with(&format!("ecnlab-{pid}-"))).count() == 4 {
                std::thread::sleep(std::time::Duration::from_millis(700));
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("emulate {pid} did not build its namespaces");
    };
    let ours = |pid: u32| ecnlab_namespaces().into_iter().filter(|n| n.starts_with(&format!("ecnlab-{pid}-"))).count();

    // Ctrl-C: exit 130, its namespaces removed by the run itself, no run directory.
    let out = dir.join("int");
    let child = start(&out, "ecnstar");
    let pid = child.id();
    running(pid);
    unsafe { libc_kill(pid as i32, 2) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(ours(pid), 0, "namespaces left after Ctrl-C");
    assert!(!out.exists() && leftovers(&out).is_empty(), "nothing written after Ctrl-C");

    // SIGKILL with ecnlab's DCTCP registered: the namespaces stay until `--cleanup`; the kernel unregisters the
    // algorithm with the process (a BPF link). (Its map object lingers while sockets of the dead run, closing
    // in the kernel, still refer to it: up to a minute of TIME_WAIT.)
    let out = dir.join("kill");
    let mut child = start(&out, "dctcp");
    let pid = child.id();
    running(pid);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(ours(pid), 4, "a killed run cannot remove its namespaces");
    let o = sim(&["emulate", "--cleanup"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("namespace ecnlab-{pid}-")), "{}", stdout(&o));
    assert_eq!(ours(pid), 0, "namespaces left after --cleanup");
    let t0 = std::time::Instant::now();
    let registered = || ecnlab_switch::cc::available().unwrap().iter().any(|a| a == ecnlab_switch::cc::DCTCP_NAME);
    while registered() && t0.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!registered(), "ecnlab_dctcp still registered");
    assert!(!out.exists(), "no run directory from a killed run");
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// `reproduce --emulate` refuses, with exit 2 and before writing anything, an experiment that has no `[emulate]`
/// section, `all`, and `--recheck`.
#[test]
fn reproduce_emulate_refuses_what_it_cannot_run_before_writing() {
    let dir = scratch("reproduce-emulate-refusals");
    let out = dir.join("x");
    let out = out.to_str().unwrap();
    for (args, want) in [
        (vec!["reproduce", "mqecn-fig1", "--emulate", "--out", out], "has no [emulate] section"),
        (vec!["reproduce", "all", "--emulate", "--out", out], "runs one experiment ID"),
        (vec!["reproduce", "ecnstar-fig2", "--emulate", "--recheck", "--out", out], "runs one experiment ID"),
    ] {
        let o = sim(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--emulate") && stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!Path::new(out).exists(), "{args:?} wrote {out}");
    }
}

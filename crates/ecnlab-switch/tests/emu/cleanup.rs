//! Nothing a run creates outlives it: not after a panic, not after SIGTERM, and what a SIGKILLed run left is
//! found and removed by `cleanup_leaked`.

use super::common::{emulate, exclusive, star};
use ecnlab_switch::netns::{cleanup_leaked, NETNS_DIR};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Names in /run/netns starting with `prefix`.
fn named(prefix: &str) -> Vec<String> {
    let Ok(d) = std::fs::read_dir(NETNS_DIR) else { return vec![] };
    d.flatten().filter_map(|e| e.file_name().into_string().ok()).filter(|n| n.starts_with(prefix)).collect()
}

/// Whether any thread of any process is inside a namespace with one of `inodes`.
fn occupied(inodes: &[u64]) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else { return false };
    procs.flatten().filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))).any(|p| {
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else { return false };
        tasks.flatten().any(|t| std::fs::metadata(t.path().join("ns/net")).is_ok_and(|m| inodes.contains(&m.ino())))
    })
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) != Some("Z"))
}

/// Waits up to 2 s for `cond`.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

#[test]
fn a_panicking_run_leaves_no_namespace_behind() {
    let Some(_guard) = exclusive() else { return };
    let mut seen = (String::new(), vec![]);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (tb, _sw) = emulate(&star(2, ""), &[]).expect("testbed");
        seen.0 = tb.prefix().to_string();
        seen.1 = tb.namespaces().iter().map(|ns| std::fs::metadata(ns.path()).unwrap().ino()).collect();
        assert_eq!(named(tb.prefix()).len(), 3, "the switch's and two hosts'");
        panic!("the test body fails with the testbed and the switch running");
    }));
    assert!(r.is_err());
    assert!(named(&seen.0).is_empty(), "names left: {:?}", named(&seen.0));
    // No thread is left inside them (the switch's thread ended with it), so they (and their veths) are gone.
    assert!(eventually(|| !occupied(&seen.1)), "a thread is still inside a namespace of the run");
}

/// Run as a child process by the tests below (`ECNLAB_SWITCH_CHILD` set): builds a testbed and a switch,
/// starts a process inside host 0, says where, and waits to be killed.
#[test]
#[ignore = "a child of the cleanup tests"]
// The sleeper is never waited for: this process is killed, and the cleanup under test kills the sleeper.
#[allow(clippy::zombie_processes)]
fn child_run() {
    if std::env::var_os("ECNLAB_SWITCH_CHILD").is_none() {
        return;
    }
    let (tb, _sw) = emulate(&star(2, ""), &[]).expect("testbed");
    let sleeper = tb.host(0).ns.command("sleep").unwrap().arg("30").spawn().expect("sleep in h0");
    println!("READY {} {}", tb.prefix(), sleeper.id());
    std::thread::sleep(Duration::from_secs(30));
}

/// Starts `child_run` in a child process; its prefix and its sleeper's pid once ready.
// The caller waits for the child; the panic below ends the test process with it.
#[allow(clippy::zombie_processes)]
fn start_child() -> (std::process::Child, String, i32) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["cleanup::child_run", "--exact", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("ECNLAB_SWITCH_CHILD", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("child");
    let out = BufReader::new(child.stdout.take().unwrap());
    for line in out.lines() {
        let line = line.expect("child's output");
        // With one test thread, the harness prints the test's name on the same line first.
        if let Some(rest) = line.split_once("READY ").map(|(_, r)| r) {
            let (prefix, pid) = rest.split_once(' ').unwrap();
            return (child, prefix.to_string(), pid.parse().unwrap());
        }
    }
    panic!("the child run ended before it was ready");
}

#[test]
fn a_killed_run_is_cleaned_up_by_cleanup_leaked_and_a_terminated_one_by_itself() {
    let Some(_guard) = exclusive() else { return };
    // SIGKILL: nothing of the child runs any more, so its namespaces and its process inside remain...
    let (mut child, prefix, sleeper) = start_child();
    assert_eq!(named(&prefix).len(), 3);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(named(&prefix).len(), 3, "SIGKILL leaves the namespaces");
    assert!(alive(sleeper), "and the process it started inside one");
    // ...until a cleanup finds them by their dead pid.
    let mut removed = cleanup_leaked().expect("cleanup");
    removed.retain(|n| n.starts_with(&prefix));
    removed.sort();
    let h = |i| format!("{prefix}h{i}");
    assert_eq!(removed, [h(0), h(1), format!("{prefix}sw")]);
    assert!(named(&prefix).is_empty());
    assert!(eventually(|| !alive(sleeper)), "the process left inside was killed");
    // SIGTERM: the run removes its own namespaces (and what runs inside them) before it dies.
    let (mut child, prefix, sleeper) = start_child();
    // SAFETY: sends SIGTERM to the child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child ended by its signal");
    assert!(named(&prefix).is_empty(), "left: {:?}", named(&prefix));
    assert!(eventually(|| !alive(sleeper)));
}

//! The simulator core on the canonical 8-flow DCTCP scenario: goodput, fairness, queue, determinism,
//! conservation under every marker.

use crate::common::*;

const K_PKTS: f64 = 65.0;

#[test]
fn dctcp_8flows_fills_the_link_fairly_with_the_queue_near_k() {
    let r = run_builtin("dctcp-8flows", &[]);
    let s = &r.summary;
    // The link carries 10 Gb/s of 1500 B frames with 1460 B payloads: at most 9.733 Gb/s of goodput.
    let goodput = f(&s["goodput"]["total_gbps"]);
    assert!((9.5..=10.0 * 1460.0 / 1500.0 + 1e-9).contains(&goodput), "goodput {goodput}");
    assert!(f(&s["goodput"]["jain_long_lived"]) >= 0.99);
    let p = port(&r, "s0->h0");
    let mean = f(&p["occupancy"]["mean_pkts"]);
    assert!((0.5 * K_PKTS..=1.5 * K_PKTS).contains(&mean), "queue mean {mean} pkts");
    assert_eq!(p["window_counters"]["dropped_pkts"], 0, "no drops after the first 100 ms");
}

#[test]
fn without_ecn_the_buffer_fills_and_drops_and_ecnstar_swings_wider_than_dctcp() {
    let off = run_builtin("dctcp-8flows", &["transport.cc.kind=reno", "duration=0.4s"]);
    let p = port(&off, "s0->h0");
    assert!(f(&p["window_counters"]["dropped_pkts"]) > 0.0, "drop-tail TCP overflows the buffer");
    let buffer_pkts = 300_000.0 / 1500.0;
    assert!(f(&p["occupancy"]["max_pkts"]) >= buffer_pkts - 1.0);
    let star = run_builtin("dctcp-8flows", &["transport.cc.kind=ecnstar", "duration=0.4s"]);
    let dctcp = run_builtin("dctcp-8flows", &["duration=0.4s"]);
    let std = |r: &ecnlab::RunReport| f(&port(r, "s0->h0")["occupancy"]["std_bytes"]);
    assert!(std(&star) > 2.0 * std(&dctcp), "ECN* std {} vs DCTCP {}", std(&star), std(&dctcp));
}

#[test]
fn occupancy_quantiles_off_drops_only_the_quantiles() {
    // The histograms only observe: without them the run and every exact statistic are the same.
    let with = run_builtin("dctcp-8flows", &["duration=0.2s"]);
    let without = run_builtin("dctcp-8flows", &["duration=0.2s", "observe.occupancy_quantiles=false"]);
    let (a, b) = (&port(&with, "s0->h0")["occupancy"], &port(&without, "s0->h0")["occupancy"]);
    for k in ["mean_bytes", "max_bytes", "min_bytes", "std_bytes", "max_all_bytes"] {
        assert_eq!(a[k], b[k], "{k}");
    }
    assert!(f(&a["p99_bytes"]) >= f(&a["p50_bytes"]));
    assert!(b["p50_bytes"].is_null() && b["p99_bytes"].is_null() && b["p99_pkts"].is_null());
    assert_eq!(with.flows.len(), without.flows.len());
    assert_eq!(with.summary["events"], without.summary["events"]);
}

#[test]
fn same_seed_gives_byte_identical_summaries() {
    let strip = |r: ecnlab::RunReport| {
        let mut s = r.summary.clone();
        s["wall_time_s"] = 0.into();
        s["events_per_s"] = 0.into();
        (serde_json::to_string(&s).unwrap(), r.fct_csv())
    };
    let sets = ["duration=50ms", "observe.warmup=10ms", "workloads.0.jitter=20us", "transport.recovery=newreno"];
    let a = strip(run_builtin("dctcp-8flows", &sets));
    let b = strip(run_builtin("dctcp-8flows", &sets));
    assert_eq!(a, b);
    let mut other = sets.to_vec();
    other.push("seed=2");
    assert_ne!(a.0, strip(run_builtin("dctcp-8flows", &other)).0, "the seed reaches the jitter streams");
}

#[test]
fn packets_are_conserved_under_every_marker_and_cc() {
    // `ecnlab::run` checks injected = consumed + dropped + in flight and, per port, arrived = dropped +
    // queued + sent; a violation is a run error. A small buffer forces drops through every path.
    let markers = [
        "{ kind = \"none\" }",
        "{ kind = \"threshold\", threshold = \"10pkt\", at = \"enqueue\" }",
        "{ kind = \"threshold\", threshold = \"10pkt\", at = \"dequeue\", compare = \"ge\" }",
        "{ kind = \"red\", min = \"5pkt\", max = \"15pkt\", max_p = 0.1, weight = 0.002, gentle = true }",
        "{ kind = \"red\", min = \"10pkt\", max = \"10pkt\", drop_above_max = true }",
    ];
    for m in markers {
        for cc in ["reno", "ecnstar", "dctcp"] {
            for non_ect in ["pass", "drop"] {
                let marker = format!("switch.marker={m}");
                let cc = format!("transport.cc.kind={cc}");
                let ne = format!("switch.non_ect={non_ect}");
                let r = run_builtin(
                    "dctcp-8flows",
                    &["duration=30ms", "observe.warmup=0s", "switch.buffer=30KB", &marker, &cc, &ne],
                );
                assert!(f(&r.summary["goodput"]["total_gbps"]) > 1.0, "{m} {cc} {ne}");
            }
        }
    }
}

/// Four incast senders answer host 0 while hosts 5–7 keep DCTCP flows into sender 1. With `non_ect = "drop"`
/// the marker drops every non-ECT packet that meets a queue above K, so requests to sender 1 are often lost on
/// its busy port: the receiver must time them out and ask again, and every round still completes.
const INCAST_WITH_LOST_REQUESTS: &str = r#"
duration = "0.5s"
[topology]
kind = "star"
hosts = 8
rate = "10Gbps"
delay = "5us"
[switch]
buffer = "300KB"
non_ect = "drop"
marker = { kind = "threshold", threshold = "20KB" }
[transport]
cc = { kind = "dctcp" }
[[workloads]]
kind = "incast"
senders = [1, 2, 3, 4]
receiver = 0
block = "32000B"
rounds = 20
[[workloads]]
kind = "flows"
src = [5, 6, 7]
dst = 1
"#;

#[test]
fn lost_incast_requests_are_resent_and_every_round_completes() {
    let r = run_text(INCAST_WITH_LOST_REQUESTS, &[]);
    let w = &r.summary["workloads"][0];
    assert!(f(&w["requests_resent"]) > 0.0, "no request was lost: the scenario does not test resending");
    assert_eq!(f(&w["rounds_completed"]), 20.0, "{w}");
    // A duplicate request must not make a sender write its block twice: each connection carried exactly
    // 20 blocks.
    let incast: Vec<_> = r.flows.iter().filter(|fl| fl.dst == 0).collect();
    assert_eq!(incast.len(), 4);
    for fl in incast {
        assert_eq!(fl.delivered_bytes, 20 * 32_000, "flow {}", fl.id);
    }
}

#[test]
fn a_cancelled_token_stops_a_run_soon_with_interrupted() {
    let sc = ecnlab::Scenario::from_toml(ecnlab::builtin::scenario("dctcp-8flows").unwrap(), &["duration=100s".into()])
        .unwrap();
    // Cancelled before it starts: nothing is built or run.
    let opts = ecnlab::RunOptions::default();
    opts.cancel.cancel();
    assert!(matches!(ecnlab::run_with(&sc, &opts), Err(ecnlab::Error::Interrupted)));
    // Cancelled from another thread mid-run (100 simulated seconds would take minutes): stops within a few ms of
    // the request; 2 s bounds a loaded machine.
    let opts = ecnlab::RunOptions::default();
    let cancel = opts.cancel.clone();
    let t0 = std::time::Instant::now();
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| ecnlab::run_with(&sc, &opts));
        std::thread::sleep(std::time::Duration::from_millis(200));
        let asked = std::time::Instant::now();
        cancel.cancel();
        let r = h.join().unwrap();
        assert!(asked.elapsed().as_secs_f64() < 2.0, "stopped {:?} after the request", asked.elapsed());
        r
    });
    assert!(matches!(r, Err(ecnlab::Error::Interrupted)), "{:?}", r.err());
    assert!(t0.elapsed().as_secs_f64() < 10.0);
}

/// `observe.fct_end = "acked"` times a flow to the sender's last acknowledgement, as the MQ-ECN authors' ns-2
/// scripts do: on an otherwise idle path that is one ACK's trip after the receiver's last byte, two hops of a
/// 40-byte ACK (32 ns each at 10 Gb/s) and two link delays, for every flow alike; nothing else in the run moves.
#[test]
fn a_flow_timed_to_its_last_acknowledgement_ends_one_ack_trip_later() {
    const ONE_AT_A_TIME: &str = r#"
duration = "20ms"
[topology]
kind = "star"
hosts = 2
rate = "10Gbps"
delay = "5us"
[transport]
cc = { kind = "dctcp" }
[[workloads]]
kind = "back_to_back"
src = 1
dst = 0
size = "100KB"
count = 5
"#;
    let received = run_text(ONE_AT_A_TIME, &[]);
    let acked = run_text(ONE_AT_A_TIME, &["observe.fct_end=\"acked\""]);
    let trip = 2.0 * (5e-6 + 40.0 * 8.0 / 10e9);
    assert_eq!(received.flows.len(), 5);
    for (r, a) in received.flows.iter().zip(&acked.flows) {
        let (r_fct, a_fct) = (r.fct_s.expect("finished"), a.fct_s.expect("acknowledged"));
        assert!((a_fct - r_fct - trip).abs() < 1e-12, "flow {}: {a_fct} − {r_fct} ≠ {trip}", r.id);
        assert_eq!((r.start_s, r.delivered_bytes, r.timeouts), (a.start_s, a.delivered_bytes, a.timeouts));
    }
}

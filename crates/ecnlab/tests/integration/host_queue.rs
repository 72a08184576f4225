//! Host egress ports like a switch's (`hosts.egress = "switch"`, as the MQ-ECN authors' ns-2 scripts
//! build every link's queue alike): where a lone sender's standing queue sits, TCP small queues on such a port,
//! the NIC's timing reproduced by a port with one FIFO, and the combinations refused.

use crate::common::*;
use ecnlab::{Error, Scenario, Sim};

/// One long-lived DCTCP flow h1 → h0 over 10 Gb/s links, per-queue threshold K = 20 packets.
const LONE_FLOW: &str = r#"
duration = "0.2s"
[topology]
kind = "star"
hosts = 2
rate = "10Gbps"
delay = "5us"
[switch]
marker = { kind = "threshold", threshold = "20pkt" }
[transport]
cc = { kind = "dctcp" }
[[workloads]]
kind = "flows"
src = [1]
dst = 0
"#;

const K_PKTS: f64 = 20.0;

#[test]
fn without_small_queues_a_lone_senders_queue_sits_at_its_own_host_port_and_is_marked_there() {
    // Every link runs at 10 Gb/s, so the first link is the bottleneck: the window beyond the path's BDP waits
    // in the sender's own egress queue, which DCTCP keeps near K (Alizadeh et al. 2010, §3.3), and the switch
    // downstream sees packets paced at line rate (never more than the one in transmission plus one).
    let r = run_text(LONE_FLOW, &["hosts.egress=\"switch\"", "hosts.tsq_limit=\"1GB\""]);
    let host = port(&r, "h1->s0");
    let mean = f(&host["occupancy"]["mean_pkts"]);
    assert!((0.5 * K_PKTS..=1.5 * K_PKTS).contains(&mean), "sender's queue mean {mean} pkts");
    assert!(f(&host["window_counters"]["marked_pkts"]) > 0.0, "DCTCP is held at K by marks at the host port");
    let switch = port(&r, "s0->h0");
    assert!(f(&switch["occupancy"]["max_pkts"]) <= 1.0, "the switch never queues paced packets");
    assert_eq!(f(&switch["counters"]["marked_pkts"]), 0.0);
    let marked = f(&r.summary["totals"]["marked_pkts"]);
    assert_eq!(marked, f(&host["counters"]["marked_pkts"]), "totals count the host port's marks");
    // The link stays full: 1460 of every 1500 bytes are payload.
    assert!(f(&r.summary["goodput"]["total_gbps"]) > 9.6);

    // A NIC (the default) holds back the sender instead (TCP small queues): nothing queues, nothing is marked,
    // and host ports are not in the summary.
    let nic = run_text(LONE_FLOW, &[]);
    assert_eq!(f(&nic.summary["totals"]["marked_pkts"]), 0.0);
    assert!(nic.summary["ports"].get("h1->s0").is_none());
    assert!(f(&nic.summary["goodput"]["total_gbps"]) > 9.6);
}

#[test]
fn small_queues_bound_a_host_port_like_a_switchs_to_the_limit_plus_one_segment() {
    // The sender hands over a segment only while at most `tsq_limit` bytes wait, so the backlog peaks at the
    // limit plus one full-size frame; woken as the port drains, the sender still fills the link.
    for limit in [0u64, 3000, 12_000] {
        let set = format!("hosts.tsq_limit=\"{limit}B\"");
        let r = run_text(LONE_FLOW, &["hosts.egress=\"switch\"", &set]);
        let host = port(&r, "h1->s0");
        let peak = f(&host["occupancy"]["max_all_bytes"]);
        assert!(peak <= (limit + 1500) as f64, "limit {limit}: backlog peaked at {peak} B");
        assert!(f(&r.summary["goodput"]["total_gbps"]) > 9.6, "limit {limit}: the link must stay full");
        assert_eq!(f(&r.summary["totals"]["marked_pkts"]), 0.0, "limit {limit}: below K nothing is marked");
    }
}

#[test]
fn host_ports_like_a_switchs_are_deterministic_and_take_per_port_overrides() {
    let sets = [
        "hosts.egress=\"switch\"",
        "hosts.tsq_limit=\"1GB\"",
        "ports=[{ port = \"h1->s0\", marker = { kind = \"threshold\", threshold = \"5pkt\" } }]",
        "duration=\"50ms\"",
    ];
    let strip = |r: ecnlab::RunReport| {
        let mut s = r.summary;
        s.as_object_mut().unwrap().retain(|k, _| !matches!(k.as_str(), "wall_time_s" | "events_per_s"));
        s
    };
    let a = strip(run_text(LONE_FLOW, &sets));
    assert_eq!(a, strip(run_text(LONE_FLOW, &sets)), "same scenario and seed, same summary");
    // The override holds the sender's queue near 5 packets, a quarter of the [switch] default's K.
    let mean = f(&a["ports"]["h1->s0"]["occupancy"]["mean_pkts"]);
    assert!((2.5..=7.5).contains(&mean), "overridden K = 5: queue mean {mean} pkts");
}

#[test]
fn the_switchs_shaper_never_shapes_a_host_port_named_only_for_another_override() {
    // `[switch]`'s shaper is the switches' own (SCENARIOS.md): a host port like a switch's keeps its line rate,
    // whether or not a `[[ports]]` entry names it. Naming it with an override equal to the default (a no-op)
    // must therefore change nothing: same host-port queue, same goodput, to the byte.
    let shaped = [
        "hosts.egress=\"switch\"",
        "hosts.tsq_limit=\"1GB\"",
        "duration=\"50ms\"",
        "switch.shaper={ rate = \"5Gbps\", bucket = \"3KB\" }",
    ];
    let named = [&shaped[..], &["ports=[{ port = \"h1->s0\", non_ect = \"pass\" }]"]].concat();
    let (plain, with_entry) = (run_text(LONE_FLOW, &shaped), run_text(LONE_FLOW, &named));
    assert_eq!(port(&plain, "h1->s0"), port(&with_entry, "h1->s0"));
    assert_eq!(plain.summary["goodput"], with_entry.summary["goodput"]);
    // The switch's port is shaped in both: 5 Gb/s of frames carry at most 4.87 Gb/s of payload.
    assert!(f(&plain.summary["goodput"]["total_gbps"]) < 4.9);
}

/// Web-search flows from 6 hosts to host 0 at 30 % of its link, each with an extra one-way delay drawn from
/// ECN♯'s long-tailed 70–210 us shape; one queue with a buffer no burst fills, and no marking.
const RTT_VARIED: &str = r#"
duration = "5s"
[topology]
kind = "star"
hosts = 7
rate = "10Gbps"
delay = "5us"
[switch]
buffer = "1GB"
queues = 1
marker = { kind = "none" }
[transport]
cc = { kind = "dctcp" }
[hosts]
tsq_limit = "1GB"
[[workloads]]
kind = "poisson"
hosts = "1-6"
dst = 0
load = 0.3
flows = 200
cdf = ["websearch"]
rtt = { dist = "longtail_70_210us", lo = "70us", hi = "210us" }
"#;

#[test]
fn a_host_port_like_a_switchs_with_one_fifo_and_no_marking_times_packets_as_a_nic_does() {
    // Two implementations of one thing: with a single FIFO, a buffer nothing fills and no marker, a host port
    // built like a switch's is the NIC's FIFO at line rate, and RTT variation's delay follows either. Every
    // flow must finish at the same picosecond.
    let nic = run_text(RTT_VARIED, &[]);
    let port = run_text(RTT_VARIED, &["hosts.egress=\"switch\""]);
    assert_eq!(nic.flows.len(), 200);
    let mut queued = 0.0;
    for (a, b) in nic.flows.iter().zip(&port.flows) {
        assert_eq!((a.start_s, a.finish_s), (b.start_s, b.finish_s), "flow {}", a.id);
    }
    for h in 1..=6 {
        queued += f(&port.summary["ports"][format!("h{h}->s0")]["occupancy"]["max_bytes"]);
    }
    assert!(queued > 0.0, "the senders' ports did queue, so the comparison covers the queue path");
}

#[test]
fn a_host_ports_codel_drops_at_dequeue_and_the_blocked_sender_still_finishes() {
    // Loss-based TCP (not ECN-capable) behind small queues: CoDel (RFC 8289) at the sender's own port drops at
    // dequeue once the 2–3 waiting packets sit above its 1 us target for 20 us. Every dequeue, a drop included,
    // may wake the blocked sender, and the flow completes with each drop repaired.
    let sets = [
        "hosts.egress=\"switch\"",
        "transport.cc={ kind = \"reno\" }",
        "switch.marker={ kind = \"codel\", target = \"1us\", interval = \"20us\" }",
        "workloads.0.size=\"2MB\"",
    ];
    let r = run_text(LONE_FLOW, &sets);
    let drops = f(&port(&r, "h1->s0")["counters"]["drops"]["aqm"]);
    assert!(drops > 0.0, "CoDel must act at the host port");
    assert!(r.flows[0].finish_s.is_some(), "the flow finishes");
    assert!(f(&r.summary["totals"]["retransmits"]) >= drops);
}

#[test]
fn host_ports_like_a_switchs_refuse_roce_and_pfc() {
    let cases: &[(&[&str], &str)] = &[
        (&["transport.cc={ kind = \"dcqcn\" }"], "RoCE"),
        (&["switch.scheduler={ kind = \"sp\" }", "switch.pfc={ xoff = \"100KB\" }"], "PFC"),
    ];
    for (sets, what) in cases {
        let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        all.push("hosts.egress=\"switch\"".into());
        let r = Scenario::from_toml(LONE_FLOW, &all).and_then(|sc| Sim::new(&sc).map(|_| ()));
        match r {
            Err(Error::Config { path, msg }) => {
                assert_eq!(path, "hosts.egress", "{sets:?}");
                assert!(msg.contains(what) && msg.contains("\"nic\""), "{sets:?}: {msg}");
            }
            other => panic!("{sets:?}: want a config error at hosts.egress, got {other:?}"),
        }
    }
}

/// `[hosts]` took `egress` and `tsq_limit` over from `[transport]`: a scenario written with the old keys, in
/// its text or by `--set`, is the same scenario as with the new ones, with a note naming each moved key; both
/// spellings of one setting are refused at the old key rather than one silently winning.
#[test]
fn the_old_transport_keys_still_read_as_hosts_keys_with_a_note() {
    let new = Scenario::from_toml(LONE_FLOW, &["hosts.egress=\"switch\"".into(), "hosts.tsq_limit=\"1GB\"".into()])
        .expect("valid");
    assert!(new.deprecated.is_empty(), "{:?}", new.deprecated);
    let old_text = LONE_FLOW.replace("[transport]\n", "[transport]\nhost_queue = \"switch\"\n");
    let old = Scenario::from_toml(&old_text, &["transport.nic_limit=\"1GB\"".into()]).expect("valid");
    assert_eq!((old.hosts, old.transport), (new.hosts, new.transport));
    assert_eq!(
        old.deprecated,
        [
            "transport.host_queue is deprecated: write hosts.egress (same values)",
            "transport.nic_limit is deprecated: write hosts.tsq_limit (same values)"
        ]
    );
    let both = Scenario::from_toml(&old_text, &["hosts.egress=\"nic\"".into()]).unwrap_err();
    match both {
        Error::Config { path, msg } => {
            assert_eq!(path, "transport.host_queue");
            assert!(msg.contains("keep only hosts.egress"), "{msg}");
        }
        other => panic!("want a config error, got {other:?}"),
    }
}

/// Segmentation offload (`hosts.tso_max`): ECN♯ §3.4 blames "NIC offloading (GSO, LSO, etc.)" for queue
/// oscillation. Eight DCTCP senders into one 10 Gb/s port, with and without 64 KB bursts: the same goodput (the
/// bottleneck stays busy), but the queue swings wider, higher and lower, around its threshold.
#[test]
fn segmentation_offload_bursts_make_the_bottleneck_queue_oscillate() {
    let sets = ["duration=300ms", "observe.warmup=100ms"];
    let plain = run_builtin("dctcp-8flows", &sets);
    let tso = run_builtin("dctcp-8flows", &[&sets[..], &["hosts.tso_max=64KB"]].concat());
    let (a, b) = (port(&plain, "s0->h0"), port(&tso, "s0->h0"));
    let occ = |p: &serde_json::Value, k: &str| f(&p["occupancy"][k]);
    let goodput = |r: &ecnlab::RunReport| f(&r.summary["goodput"]["total_gbps"]);
    assert!((goodput(&tso) / goodput(&plain) - 1.0).abs() < 0.01, "{} vs {}", goodput(&tso), goodput(&plain));
    assert!(occ(b, "std_bytes") > 1.3 * occ(a, "std_bytes"), "std {} vs {}", occ(b, "std_bytes"), occ(a, "std_bytes"));
    assert!(occ(b, "max_pkts") > occ(a, "max_pkts"));
    assert!(occ(b, "min_pkts") < occ(a, "min_pkts"));
}

/// `hosts.tso_max` is a burst of data: two segments at least, 256 KiB at most.
#[test]
fn segmentation_offload_outside_its_range_is_refused() {
    for (set, field) in [("hosts.tso_max=2000B", "hosts.tso_max"), ("hosts.tso_max=1MB", "hosts.tso_max")] {
        let e = Scenario::from_toml(LONE_FLOW, &[set.to_string()]).unwrap_err();
        assert!(matches!(&e, Error::Config { path, .. } if path == field), "{set}: {e}");
    }
}

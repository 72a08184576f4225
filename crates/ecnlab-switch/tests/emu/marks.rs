//! Long-lived real TCP flows through one port: ECN marks reach the stacks and hold the queue near K (in a star,
//! and at a dumbbell's bottleneck between its two switches); DWRR weights give their shares.

use super::common::{emulate, exclusive, netstat, off_switch_core, sink, source, star, TcpInfo, PORT};
use ecnlab_switch::dataplane::Report;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a run of long-lived flows into h0 gives.
struct Outcome {
    /// The switch's reports when the window opened and when it closed (flows still running), and at its stop.
    at_open: Report,
    at_close: Report,
    at_stop: Report,
    /// Bytes h0 read per flow over the window, and the window's wall length.
    bytes: Vec<u64>,
    secs: f64,
    /// Each sender's TCP_INFO at its end; h0's count of CE packets received (IpExt InCEPkts).
    senders: Vec<TcpInfo>,
    in_ce: u64,
    /// The testbed's namespaces (gone once the outcome is returned).
    namespaces: Vec<std::path::PathBuf>,
}

/// Flows from hosts 1.. (one per entry, its DSCP) to h0, every host with `sysctls`; `warmup` then `window`.
fn long_flows(
    sc: &ecnlab::Scenario,
    sysctls: &[(&str, &str)],
    dscp: &[u8],
    warmup: Duration,
    window: Duration,
) -> Outcome {
    let senders: Vec<(usize, u8)> = dscp.iter().enumerate().map(|(i, &d)| (i + 1, d)).collect();
    long_flows_into(sc, sysctls, 0, &senders, warmup, window)
}

/// Flows from each (host, DSCP) of `senders` to host `receiver`, every host with `sysctls`.
fn long_flows_into(
    sc: &ecnlab::Scenario,
    sysctls: &[(&str, &str)],
    receiver: usize,
    senders: &[(usize, u8)],
    warmup: Duration,
    window: Duration,
) -> Outcome {
    let (tb, sw) = emulate(sc, sysctls).expect("testbed");
    let n = senders.len();
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let (c, s) = (counts.clone(), stop.clone());
    let rx = tb.host(receiver);
    let listener = rx.ns.run(|| TcpListener::bind(("0.0.0.0", PORT))).expect("enter the receiver").expect("bind");
    let sink_thread = std::thread::spawn(move || sink(listener, n, c, s));
    let dst = rx.addr;
    let senders: Vec<_> = senders
        .iter()
        .enumerate()
        .map(|(i, &(h, d))| {
            let stop = stop.clone();
            tb.host(h).ns.spawn("sender", move || source(dst, i as u8, d, stop)).expect("sender")
        })
        .collect();
    std::thread::sleep(warmup);
    sw.open_window();
    let at_open = sw.report().expect("report");
    let c0: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let at_close = sw.report().expect("report");
    let secs = t0.elapsed().as_secs_f64();
    let bytes = counts.iter().zip(&c0).map(|(c, c0)| c.load(Ordering::Relaxed) - c0).collect();
    stop.store(true, Ordering::Relaxed);
    let senders = senders.into_iter().map(|h| h.join().expect("sender")).collect();
    sink_thread.join().expect("receiver");
    // The switch first: a closed sender's kernel still sends what its socket held, so frames (CE ones among
    // them) cross until the switch stops; then a moment for the last ones written to reach the receiver's IP
    // layer, and its count is final.
    let at_stop = sw.stop().expect("switch");
    std::thread::sleep(Duration::from_millis(50));
    let in_ce = tb
        .host(receiver)
        .ns
        .run(|| {
            off_switch_core();
            netstat("IpExt", "InCEPkts")
        })
        .expect("receiver counters");
    let namespaces = tb.namespaces().iter().map(|ns| ns.path()).collect();
    drop(tb);
    Outcome { at_open, at_close, at_stop, bytes, secs, senders, in_ce, namespaces }
}

const K_PKTS: f64 = 20.0;

/// One line of the marking port's figures over the window, and the run's goodput and timing.
fn describe(o: &Outcome, port: &ecnlab_switch::dataplane::LinkReport) {
    eprintln!(
        "{}: mean {:.0} B = {:.2} K, max {} B, marks {}, drops {}, utilization {:.3}; ring drops {}; \
         goodput {:.2} Mb/s; late offers {}; stalls {:?}",
        port.ifname,
        port.occupancy.mean,
        port.occupancy.mean / (K_PKTS * 1500.0),
        port.occupancy.max,
        port.counters.total_marks(),
        port.counters.total_drops(),
        port.utilization,
        port.ring_drops,
        o.bytes.iter().sum::<u64>() as f64 * 8.0 / o.secs / 1e6,
        o.at_close.late_offers,
        o.at_close.stalls_ns,
    );
    for s in &o.senders {
        eprintln!(
            "sender: cwnd {} ssthresh {} delivered_ce {} retrans {}",
            s.snd_cwnd, s.snd_ssthresh, s.delivered_ce, s.total_retrans
        );
    }
}

/// The marking `port` marks; the receiver (host link `receiver`) got every CE the switch wrote toward it, and
/// no other; the senders saw them echoed; the port's time-average queue is within [0.3, 1.5] K, with no drops
/// there or before the ports.
fn assert_marks_echoed_and_queue_near_k(o: &Outcome, port: &ecnlab_switch::dataplane::LinkReport, receiver: usize) {
    assert!(port.counters.total_marks() > 0, "{} marks", port.ifname);
    let written = o.at_stop.links[receiver].ce_written;
    assert!(written > 0, "CE written toward the receiver");
    assert_eq!(o.in_ce, written, "the receiver got every CE the switch wrote, and no other");
    // The receivers echoed them: each sender counts deliveries acknowledged with ECE, and, with no
    // retransmission, its ssthresh came down from its initial infinity only through ECN's reductions.
    for s in &o.senders {
        assert!(s.delivered_ce > 0, "ECE reached the sender: {s:?}");
        assert_eq!(s.total_retrans, 0, "no loss: {s:?}");
        assert!(s.snd_ssthresh < 0x7fff_ffff, "cwnd reduced by ECE: {s:?}");
    }
    // The queue settles near K.
    let ratio = port.occupancy.mean / (K_PKTS * 1500.0);
    assert!((0.3..=1.5).contains(&ratio), "{}: time-average queue {ratio:.2} K", port.ifname);
    assert_eq!(port.counters.total_drops(), 0, "no drops below the buffer");
    assert_eq!(o.at_close.totals().3, 0, "no ring, NIC or unknown drops");
}

#[test]
fn marks_reach_real_reno_stacks_and_hold_the_queue_near_k() {
    let Some(_guard) = exclusive() else { return };
    // Two Reno senders with RFC 3168 ECN into h0's 100 Mb/s port, K = 20 packets at enqueue, a 1 MB buffer.
    let sc = star(3, "buffer = \"1MB\"\nmarker = { kind = \"threshold\", threshold = \"20pkt\", at = \"enqueue\" }");
    let sysctls = [("net.ipv4.tcp_ecn", "1"), ("net.ipv4.tcp_congestion_control", "reno")];
    let o = long_flows(&sc, &sysctls, &[0, 0], Duration::from_secs(1), Duration::from_secs(2));
    let port = &o.at_close.links[0];
    describe(&o, port);
    // The port marks, and every CE it wrote reached h0's IP layer (nothing else on the path marks).
    assert_marks_echoed_and_queue_near_k(&o, port, 0);
    // Goodput against the port's rate less headers (payload / IP packet = snd_mss / (snd_mss + 52)) is a
    // figure of the benchmark on an otherwise idle machine (issue 45: ≥ 95 %), not of this test: the senders'
    // TCP runs on the core the switch leaves, shared with whatever else the machine runs, and a starved sender
    // answers ACKs late enough to drain a 20-packet queue (measured here: 0.996 of the ideal on a quiet machine,
    // 0.90-0.91 with a load average of 9 from other builds, the switch thread itself never late). Printed only.
    let mss = o.senders[0].snd_mss as f64;
    let ideal = 100e6 * mss / (mss + 52.0) / 8.0;
    let goodput = o.bytes.iter().sum::<u64>() as f64 / o.secs;
    eprintln!("goodput {:.1} Mb/s = {:.3} of the ideal {:.1}", goodput * 8e-6, goodput / ideal, ideal * 8e-6);
    let _ = o.at_open;
}

/// The dumbbell of `emu-dumbbell-2flows`: h0 and h1 (left, on s0) send to h2 (right, on s1) through the
/// 100 Mb/s bottleneck `s0->s1`, which marks at K = 20 packets; the host links are 1 Gb/s. The two switches are
/// the one forwarding thread, the bottleneck a port and a delay line inside it.
#[test]
fn a_dumbbells_bottleneck_between_its_switches_marks_real_reno_stacks_and_holds_the_queue_near_k() {
    let Some(_guard) = exclusive() else { return };
    let text = ecnlab::builtin::scenario("emu-dumbbell-2flows").expect("shipped");
    let sc = ecnlab::Scenario::from_toml(text, &[]).expect("valid");
    let sysctls = [("net.ipv4.tcp_ecn", "1"), ("net.ipv4.tcp_congestion_control", "reno")];
    let o = long_flows_into(&sc, &sysctls, 2, &[(0, 0), (1, 0)], Duration::from_secs(1), Duration::from_secs(2));
    let (bottleneck, back) = (&o.at_close.trunks[0], &o.at_close.trunks[1]);
    assert_eq!((bottleneck.ifname.as_str(), back.ifname.as_str()), ("s0->s1", "s1->s0"));
    describe(&o, bottleneck);
    eprintln!("s1->h2: mean {:.0} B", o.at_close.links[2].occupancy.mean);
    // The bottleneck marks, and the CE it decided reaches h2 written by s1's port to h2, the only place the
    // switch writes frames toward h2; h2's IP layer counts every one of them.
    assert_marks_echoed_and_queue_near_k(&o, bottleneck, 2);
    let written = o.at_stop.links[2].ce_written;
    assert!(written <= o.at_stop.trunks[0].run_counters.total_marks(), "CE written {written}: no more than marked");
    assert_eq!(o.at_close.totals().2, 0, "no drops at any port, the bottleneck's included");
    // Only the bottleneck queues: s1's 1 Gb/s port to h2 receives at most 100 Mb/s.
    assert!(o.at_close.links[2].occupancy.max <= 3000, "s1->h2 holds at most a frame behind one");
    // Nothing left behind: every frame a port between the switches sent reached the far switch or was still
    // on the link when the switch stopped, and the testbed is gone.
    for t in &o.at_stop.trunks {
        assert!(t.run_counters.sent_pkts > 0, "{} sent", t.ifname);
        assert_eq!(t.tx_frames + t.in_flight, t.run_counters.sent_pkts, "{}: sent = delivered + in flight", t.ifname);
    }
    assert!(o.namespaces.iter().all(|p| !p.exists()), "namespaces left: {:?}", o.namespaces);
}

#[test]
fn dwrr_weights_three_to_one_split_real_flows_75_25() {
    let Some(_guard) = exclusive() else { return };
    // Two classes by DSCP (0 and 1) in two DWRR queues weighted 3:1, each queue kept short and backlogged
    // by per-queue ECN marking at 20 packets.
    let sc = star(
        3,
        "buffer = \"1MB\"\nqueues = 2\nscheduler = { kind = \"dwrr\", quantum = \"1500B\", weights = [3, 1] }\n\
         marker = { kind = \"threshold\", threshold = \"20pkt\", at = \"enqueue\" }",
    );
    let sysctls = [("net.ipv4.tcp_ecn", "1"), ("net.ipv4.tcp_congestion_control", "reno")];
    let o = long_flows(&sc, &sysctls, &[0, 1], Duration::from_secs(1), Duration::from_secs(2));
    let sent = |r: &Report, q: usize| r.links[0].queues[q].0.sent_bytes as f64;
    let q: Vec<f64> = (0..2).map(|q| sent(&o.at_close, q) - sent(&o.at_open, q)).collect();
    let port_share = q[0] / (q[0] + q[1]);
    let read_share = o.bytes[0] as f64 / (o.bytes[0] + o.bytes[1]) as f64;
    eprintln!("class 0 share: at the port {port_share:.3}, read by h0 {read_share:.3}");
    assert!((port_share - 0.75).abs() <= 0.05, "port's class-0 share {port_share:.3}");
    assert!((read_share - 0.75).abs() <= 0.05, "h0's class-0 share {read_share:.3}");
}

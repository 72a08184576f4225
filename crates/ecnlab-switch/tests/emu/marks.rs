//! Long-lived real TCP flows through one port: ECN marks reach the stacks and hold the queue near K; DWRR
//! weights give their shares.

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
}

/// Flows from hosts 1.. (one per entry, its DSCP) to h0, every host with `sysctls`; `warmup` then `window`.
fn long_flows(
    sc: &ecnlab::Scenario,
    sysctls: &[(&str, &str)],
    dscp: &[u8],
    warmup: Duration,
    window: Duration,
) -> Outcome {
    let (tb, sw) = emulate(sc, sysctls).expect("testbed");
    let n = dscp.len();
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let (c, s) = (counts.clone(), stop.clone());
    let listener = tb.host(0).ns.run(|| TcpListener::bind(("0.0.0.0", PORT))).expect("enter h0").expect("bind");
    let receiver = std::thread::spawn(move || sink(listener, n, c, s));
    let dst = tb.host(0).addr;
    let senders: Vec<_> = dscp
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            let stop = stop.clone();
            tb.host(i + 1).ns.spawn("sender", move || source(dst, i as u8, d, stop)).expect("sender")
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
    receiver.join().expect("receiver");
    let in_ce = tb
        .host(0)
        .ns
        .run(|| {
            off_switch_core();
            netstat("IpExt", "InCEPkts")
        })
        .expect("h0 counters");
    let at_stop = sw.stop().expect("switch");
    Outcome { at_open, at_close, at_stop, bytes, secs, senders, in_ce }
}

const K_PKTS: f64 = 20.0;

#[test]
fn marks_reach_real_reno_stacks_and_hold_the_queue_near_k() {
    let Some(_guard) = exclusive() else { return };
    // Two Reno senders with RFC 3168 ECN into h0's 100 Mb/s port, K = 20 packets at enqueue, a 1 MB buffer.
    let sc = star(3, "buffer = \"1MB\"\nmarker = { kind = \"threshold\", threshold = \"20pkt\", at = \"enqueue\" }");
    let sysctls = [("net.ipv4.tcp_ecn", "1"), ("net.ipv4.tcp_congestion_control", "reno")];
    let o = long_flows(&sc, &sysctls, &[0, 0], Duration::from_secs(1), Duration::from_secs(2));
    let port = &o.at_close.links[0];
    let k = K_PKTS * 1500.0;
    eprintln!(
        "s0->h0: mean {:.0} B = {:.2} K, max {} B, marks {}, drops {}, utilization {:.3}; ring drops {}; \
         goodput {:.2} Mb/s; late offers {}; stalls {:?}",
        port.occupancy.mean,
        port.occupancy.mean / k,
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
    // The port marks, and every CE it wrote reached h0's IP layer (nothing else on the path marks).
    assert!(port.counters.total_marks() > 0, "the port marks");
    let written = o.at_stop.links[0].ce_written;
    assert_eq!(o.in_ce, written, "h0 received every CE the switch wrote, and no other");
    // The receivers echoed them: each sender counts deliveries acknowledged with ECE, and, with no
    // retransmission, its ssthresh came down from its initial infinity only through ECN's reductions.
    for s in &o.senders {
        assert!(s.delivered_ce > 0, "ECE reached the sender: {s:?}");
        assert_eq!(s.total_retrans, 0, "no loss: {s:?}");
        assert!(s.snd_ssthresh < 0x7fff_ffff, "cwnd reduced by ECE: {s:?}");
    }
    // The queue settles near K.
    let ratio = port.occupancy.mean / k;
    assert!((0.3..=1.5).contains(&ratio), "time-average queue {ratio:.2} K");
    assert_eq!(port.counters.total_drops(), 0, "no drops below the buffer");
    assert_eq!(o.at_close.totals().3, 0, "no ring, NIC or unknown drops");
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

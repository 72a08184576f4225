//! Runs against theory: one flow on an idle network completes when slow start's packet-by-packet
//! recursion says it does (rounds of base RTT, serialization, store-and-forward at each hop).

use crate::common::run_text;

const MSS: u64 = 1460;
const IW: u64 = 10;

/// The reference: packet i leaves the NIC at s_i = max(ready_i, s_{i−1} + t); the first IW are ready at 0,
/// later ones when the ACK that opens their slot returns (in slow start each ACK releases two packets:
/// ready_i = ack(⌊(i − IW)/2⌋)). Data crosses two equal-rate links without queueing: delivered at
/// s_i + 2(t + d); its ACK returns at + 2(t_ack + d). FCT = delivery of the last byte.
fn reference_fct_ps(size: u64) -> u64 {
    let (t, t_ack, d) = (1_200_000u64, 32_000u64, 5_000_000u64); // 1500 B and 40 B at 10 Gb/s; 5 us links
    let n = size.div_ceil(MSS);
    let tx = |i: u64| if i + 1 == n && !size.is_multiple_of(MSS) { (size % MSS + 40) * 800 } else { t };
    let mut s: Vec<u64> = Vec::with_capacity(n as usize);
    let ack = |j: usize, s: &Vec<u64>| s[j] + 2 * (tx(j as u64) + d) + 2 * (t_ack + d);
    for i in 0..n {
        let ready = if i < IW { 0 } else { ack(((i - IW) / 2) as usize, &s) };
        let prev_done = if i == 0 { 0 } else { s[i as usize - 1] + tx(i - 1) };
        s.push(ready.max(prev_done));
    }
    let last = (n - 1) as usize;
    s[last] + 2 * (tx(last as u64) + d)
}

#[test]
fn small_flows_at_load_0_1_finish_within_1_3_times_their_idle_network_time() {
    // Many-to-one web search at 10 % load on the same star: queues are rare, so small flows should take about
    // as long as alone (issue 8: mean slowdown within 1.3× of the idle-network values).
    let text = r#"
duration = "100s"
[topology]
kind = "star"
hosts = 9
rate = "10Gbps"
delay = "5us"
[transport]
cc = { kind = "dctcp" }
initial_window = 10
[switch]
buffer = "1MB"
marker = { kind = "threshold", threshold = "65pkt" }
[[workloads]]
kind = "poisson"
hosts = "1-8"
dst = 0
load = 0.1
flows = 3000
cdf = ["websearch_bytes"]
"#;
    let r = run_text(text, &[]);
    let (mut sum, mut n) = (0.0, 0);
    for f in r.flows.iter().filter(|f| f.size_bytes.is_some_and(|s| s <= 100_000)) {
        let idle = reference_fct_ps(f.size_bytes.unwrap()) as f64;
        sum += f.fct_s.expect("finished at 10 % load") * 1e12 / idle;
        n += 1;
    }
    let ratio = sum / n as f64;
    assert!(n > 1000, "{n} small flows");
    assert!((1.0..=1.3).contains(&ratio), "mean of FCT / idle-network FCT over {n} small flows: {ratio}");
}

#[test]
fn one_flow_on_an_idle_network_finishes_at_the_slow_start_time() {
    for size in [1_000, MSS, 5 * MSS, 10 * MSS, 16 * MSS, 100 * MSS, 1_000_000, 10_000_000] {
        let text = format!(
            r#"
duration = "1s"
[topology]
kind = "star"
hosts = 2
rate = "10Gbps"
delay = "5us"
[transport]
cc = {{ kind = "dctcp" }}
initial_window = {IW}
[[workloads]]
kind = "flows"
src = 1
dst = 0
size = "{size}B"
[observe]
sample_interval = "10ms"
"#
        );
        let r = run_text(&text, &[]);
        let fct = r.flows[0].fct_s.expect("finished") * 1e12;
        let want = reference_fct_ps(size) as f64;
        assert!((fct - want).abs() <= 0.02 * want, "size {size}: fct {fct} ps, reference {want} ps");
        // The traffic ends with the flow (its last ACK, a lapsing timer), long before `duration`; sampling
        // (every 10 ms, to the end) is not traffic.
        let (end, finish) = (r.summary["traffic_end_s"].as_f64().unwrap(), r.flows[0].finish_s.unwrap());
        assert!(finish <= end && end < 0.1, "size {size}: traffic ended at {end} s, the flow finished at {finish} s");
    }
}

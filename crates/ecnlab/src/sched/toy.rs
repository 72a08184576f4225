//! A toy scheduler, the worked example of docs/EXTENDING.md ("Adding a scheduler"): packet-count round robin.
//!
//! Queue i sends up to `packets[i]` packets per turn, whatever their sizes, then the next non-empty queue
//! takes its turn (the packet-based WRR that MQ-ECN §3.3.2 contrasts with byte quanta). Not a scheme this
//! project reproduces, and built only for tests (its registry line is `#[cfg(test)]`); a real scheduler's
//! file has the same four parts: state, `Scheduler`, config table, `SchedulerSpec`. It keeps the default
//! `pass` (enqueue, pick, dequeue) and reports no round events.

use super::{Check, QueueView, RoundSink, Scheduler, SchedulerSpec};
use crate::error::Error;
use crate::units::Time;

/// The scheduler's state: whose turn it is and how many packets it has sent in it.
#[derive(Clone, Debug)]
pub struct PacketRoundRobin {
    /// Packets per turn, per queue.
    packets: Vec<u64>,
    turn: usize,
    sent_in_turn: u64,
}

impl Scheduler for PacketRoundRobin {
    fn queues(&self) -> Option<usize> {
        Some(self.packets.len())
    }

    /// Its per-turn packet counts, as markers weigh queues.
    fn weights(&self, _n: usize) -> Vec<u64> {
        self.packets.clone()
    }

    /// The queue in its turn while it has packets and turn budget; else the next non-empty queue in index
    /// order (itself last), which starts a new turn. Finding every queue empty changes nothing: the port
    /// asks again when a packet arrives.
    fn pick(&mut self, qs: &impl QueueView, _now: Time, _ev: &mut impl RoundSink) -> Option<usize> {
        if self.sent_in_turn < self.packets[self.turn] && qs.head(self.turn).is_some() {
            return Some(self.turn);
        }
        let n = self.packets.len();
        let next = (1..=n).map(|k| (self.turn + k) % n).find(|&q| qs.head(q).is_some())?;
        self.turn = next;
        self.sent_in_turn = 0;
        Some(next)
    }

    fn on_dequeue(&mut self, q: usize, _wire: u32, _now_empty: bool, _now: Time, _ev: &mut impl RoundSink) {
        debug_assert_eq!(q, self.turn, "dequeued a queue that is not in its turn");
        self.sent_in_turn += 1;
    }
}

/// `scheduler = { kind = "toy", packets = [1, 3] }`: the registry line `Toy(toy::PacketRoundRobin) {
/// Toy(toy::ToyConfig) }` makes the variant `SchedulerConfig::Toy`, whose `kind` is its name in snake_case.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToyConfig {
    /// Packets per turn, one count per queue.
    pub packets: Vec<u64>,
}

impl SchedulerSpec for ToyConfig {
    type Scheduler = PacketRoundRobin;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        if self.packets.len() != c.queues {
            return c.fail("packets", format!("needs {} counts (one per queue), got {}", c.queues, self.packets.len()));
        }
        if let Some(i) = self.packets.iter().position(|&p| p == 0) {
            return c.fail(&format!("packets.{i}"), "must be ≥ 1");
        }
        Ok(())
    }
    fn build(&self, _queues: usize) -> PacketRoundRobin {
        PacketRoundRobin { packets: self.packets.clone(), turn: 0, sent_in_turn: 0 }
    }
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    /// The toy from TOML: two long-lived DCTCP flows, one per queue, share one 10 Gb/s bottleneck; per-queue
    /// marking at 30 packets keeps both queues backlogged, and every data packet is one MTU.
    const SCENARIO: &str = r#"
        duration = "40ms"
        topology = { kind = "star", hosts = 3, rate = "10Gbps", delay = "1us" }
        [switch]
        buffer = "300KB"
        queues = 2
        scheduler = { kind = "toy", packets = [1, 3] }
        marker = { kind = "threshold", threshold = "30pkt" }
        [transport]
        cc = { kind = "dctcp" }
        [[workloads]]
        kind = "flows"
        src = [1, 2]
        dst = 0
        classes = [0, 1]
    "#;

    /// With both queues backlogged, a turn of queue i sends `packets[i]` packets of one size, so queue i's
    /// share of the bytes is packets[i] / Σ packets: 1/4 and 3/4.
    #[test]
    fn backlogged_queues_share_bytes_as_their_packet_counts_from_toml() {
        let sc = Scenario::from_toml(SCENARIO, &[]).expect("valid");
        let r = crate::run(&sc).expect("runs");
        let queues = &r.summary["ports"]["s0->h0"]["queues"];
        let sent: Vec<f64> = (0..2).map(|q| queues[q]["counters"]["sent_bytes"].as_f64().unwrap()).collect();
        let total: f64 = sent.iter().sum();
        assert!(total > 40e6, "the bottleneck was busy: {total} B in 40 ms");
        let share = sent[1] / total;
        assert!((share - 0.75).abs() < 0.01, "queue 1's share {share:.4}, expected 3/4 ± 0.01");
    }

    #[test]
    fn one_count_per_queue_each_at_least_one() {
        let e = Scenario::from_toml(SCENARIO, &["switch.scheduler.packets=[1]".into()]).unwrap_err();
        assert_eq!(e.to_string(), "config error at `switch.scheduler.packets`: needs 2 counts (one per queue), got 1");
        let e = Scenario::from_toml(SCENARIO, &["switch.scheduler.packets=[0, 3]".into()]).unwrap_err();
        assert_eq!(e.to_string(), "config error at `switch.scheduler.packets.0`: must be ≥ 1");
    }
}

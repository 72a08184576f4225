//! A toy marker, the worked example of docs/EXTENDING.md ("Adding a marker"): marks every `n`-th packet a port
//! admits, whatever its queues hold. Not a scheme from a paper, and built only for tests (its registry line is
//! `#[cfg(test)]`); a real scheme's file has the same four parts: state, `Marker`, config table, `MarkerSpec`.

use super::{Acts, Build, Check, MarkReason, Marker, MarkerSpec, PortState, Queues, Verdict};
use crate::error::Error;
use crate::packet::Packet;

/// The marker's state: the packets admitted since its last mark.
#[derive(Clone, Debug)]
pub struct EveryNth {
    n: u64,
    seen: u64,
}

/// Acts at enqueue only: `AnyMarker` never asks it at a departure, and the port builds no view there.
impl Marker for EveryNth {
    const ACTS: Acts = Acts::ENQUEUE;

    fn on_enqueue(&mut self, _st: &PortState<impl Queues>, _q: usize, _p: &Packet) -> Verdict {
        self.seen += 1;
        if self.seen == self.n {
            self.seen = 0;
            Verdict::Mark(MarkReason::Threshold)
        } else {
            Verdict::Pass
        }
    }
}

/// `marker = { kind = "toy", n = 10 }`: the registry line `Toy(toy::EveryNth) { Toy(toy::ToyConfig) }` makes
/// the variant `MarkerConfig::Toy`, whose `kind` is its name in snake_case.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToyConfig {
    /// Mark one packet in `n`.
    pub n: u64,
}

impl MarkerSpec for ToyConfig {
    type Marker = EveryNth;
    fn validate(&self, c: &Check) -> Result<(), Error> {
        if self.n == 0 {
            return c.fail("n", "must be ≥ 1");
        }
        Ok(())
    }
    fn build(&self, _b: Build) -> Result<EveryNth, Error> {
        Ok(EveryNth { n: self.n, seen: 0 })
    }
}

#[cfg(test)]
mod tests {
    use crate::{Scenario, Sim};

    /// The toy from TOML: one bottleneck port, a long-lived flow, and a mark on every 10th admitted packet.
    const SCENARIO: &str = r#"
        duration = "2ms"
        topology = { kind = "star", hosts = 2, rate = "10Gbps", delay = "1us" }
        [switch]
        buffer = "300KB"
        marker = { kind = "toy", n = 10 }
        [[workloads]]
        kind = "flows"
        src = [0]
        dst = 1
    "#;

    #[test]
    fn marks_every_nth_admitted_packet_from_toml() {
        let sc = Scenario::from_toml(SCENARIO, &[]).expect("valid");
        let mut sim = Sim::new(&sc).expect("builds");
        sim.run().expect("runs");
        let port = sim.port_index("s0->h1").expect("the bottleneck");
        let c = sim.port_counters(port);
        assert!(c.arrived_pkts > 100, "the flow sent: {}", c.arrived_pkts);
        assert_eq!(c.total_marks(), c.arrived_pkts / 10, "one mark per 10 packets");
    }

    #[test]
    fn n_must_be_positive() {
        let e = Scenario::from_toml(SCENARIO, &["switch.marker.n=0".into()]).unwrap_err();
        assert_eq!(e.to_string(), "config error at `switch.marker.n`: must be ≥ 1");
    }
}

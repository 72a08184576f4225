//! The busiest port of a run: the one rule by which `ecnlab-sim bench` picks its bottleneck and `ecnlab.sweep`
//! its `port.*` columns. It reads `summary.json`'s shape, not a `Sim`, so that Python can apply it to a summary
//! it loaded from a run directory as well as to one it just ran.

use super::RunReport;
use serde_json::Value;

/// The port in `summary["ports"]` (switch ports, and host ports like a switch's) that sent the most packets
/// (`counters.sent_pkts`, a missing count as 0), with its entry; `None` when the summary lists no port. On a tie
/// the greatest name wins: what `bench` has always printed (`max_by_key` keeps the last maximum, and the map is
/// ordered by name), stated here so that it holds whatever order the map iterates in.
pub fn busiest_port(summary: &Value) -> Option<(&str, &Value)> {
    let sent = |v: &Value| v["counters"]["sent_pkts"].as_u64().unwrap_or(0);
    summary["ports"]
        .as_object()?
        .iter()
        .max_by(|(a, x), (b, y)| sent(x).cmp(&sent(y)).then_with(|| a.cmp(b)))
        .map(|(name, v)| (name.as_str(), v))
}

impl RunReport {
    /// This run's busiest port ([`busiest_port`]).
    pub fn busiest_port(&self) -> Option<(&str, &Value)> {
        busiest_port(&self.summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn most_sent_packets_then_the_greatest_name() {
        let port = |n: u64| json!({"counters": {"sent_pkts": n}});
        let s = json!({"ports": {"s0->h0": port(5), "s0->h1": port(9), "s1->h2": port(9), "s2->h3": port(1)}});
        assert_eq!(busiest_port(&s).map(|(n, _)| n), Some("s1->h2"));
        let s = json!({"ports": {"a": {}, "b": port(0)}});
        assert_eq!(busiest_port(&s).map(|(n, _)| n), Some("b"));
        assert_eq!(busiest_port(&json!({"ports": {}})), None);
        assert_eq!(busiest_port(&json!({})), None);
    }
}

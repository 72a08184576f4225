//! Builds a `Sim` from a validated `Scenario`: its fabric, hosts, flow table, workloads and observer.

use super::clock::Clock;
use super::fabric::Fabric;
use super::flows::Flows;
use super::hosts::Hosts;
use super::observer::Observer;
use super::workload::WorkloadState;
use super::Sim;
use crate::engine::Event;
use crate::error::Error;
use crate::scenario::{FctEnd, Scenario};
use crate::transport::cc::CcConfig;

impl Sim {
    pub fn new(sc: &Scenario) -> Result<Sim, Error> {
        sc.validate()?;
        let (fabric, watched) = Fabric::new(sc)?;
        // DCQCN's pacer reads the clock (validation keeps RoCE off hosts' ports like a switch's today), and so
        // does segmentation offload's wait for a burst (a jiffy after the last send, it sends).
        let receiver_events_leave_senders = fabric.host_ports_never_fill(sc)
            && !fabric.has_pfc()
            && !matches!(sc.transport.cc, CcConfig::Dcqcn(_))
            && sc.hosts.tso_max.is_none();
        let flows = reserve_flows(sc)?;
        let workloads = sc
            .workloads
            .iter()
            .enumerate()
            .map(|(i, w)| WorkloadState::new(sc.seed, i as u32, w, fabric.net()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut sim = Sim {
            clock: Clock::default(),
            hosts: Hosts::new(sc, receiver_events_leave_senders),
            flows: Flows::new(flows, sc.transport, sc.observe.fct_end == FctEnd::Acked),
            workloads,
            observer: Observer::new(sc, &fabric, watched),
            fabric,
            duration: sc.duration,
            max_events: sc.limits.max_events,
            events_processed: 0,
        };
        for (i, w) in sc.workloads.iter().enumerate() {
            if let Some(t) = sim.workloads[i].first_event(w) {
                sim.clock.schedule(t, Event::Workload { idx: i as u32 });
            }
        }
        Ok(sim)
    }
}

/// The flow table with room for every flow the workloads open by count (flows, incast senders, queries): a
/// machine short of memory for them is an error here, not an abort mid-run.
fn reserve_flows(sc: &Scenario) -> Result<Vec<super::Flow>, Error> {
    use crate::scenario::Workload;
    let (mut n, mut at) = (0usize, String::from("limits.max_memory"));
    for (i, w) in sc.workloads.iter().enumerate() {
        let (k, field) = match w {
            Workload::Flows { src, .. } => (src.0.len(), "src"),
            Workload::Incast { senders, .. } => (senders.0.len(), "senders"),
            Workload::Query { count, .. } => (*count as usize, "count"),
            _ => continue,
        };
        n = n.saturating_add(k);
        at = format!("workloads.{i}.{field}");
    }
    let mut flows = Vec::new();
    flows.try_reserve_exact(n).map_err(|_| {
        Error::config(
            at,
            format!(
                "cannot allocate {n} flow records ({}): out of memory; lower limits.max_memory or the flow count",
                crate::scenario::budget_human(n as u64 * std::mem::size_of::<super::Flow>() as u64)
            ),
        )
    })?;
    Ok(flows)
}

//! Builds a `Sim` from a validated `Scenario`: topology, ports with their schedulers and markers, workloads.

use super::report::TraceSpec;
use super::workload::WorkloadState;
use super::Sim;
use crate::engine::{rng::key, Event, EventQueue, Rng};
use crate::error::Error;
use crate::mark::Build;
use crate::net::pfc::{Pfc, PfcConfig};
use crate::net::{Network, Node};
use crate::observe::Series;
use crate::packet::PacketPool;
use crate::port::{may_defer_departures, FifoPool, HostSide, Port, PortConfig, SharedBuffer, Surroundings};
use crate::scenario::{Egress, PortSettings, Scenario, Workload};
use crate::transport::cc::CcConfig;
use crate::units::{Bytes, Time};

impl Sim {
    pub fn new(sc: &Scenario) -> Result<Sim, Error> {
        sc.validate()?;
        let hosts = sc.topology.host_count();
        let (switches, links) = sc.topology.links();
        let net = Network::build(hosts as usize, switches as usize, &links, sc.mtu)
            .map_err(|e| Error::config("topology", e))?;
        // Per-port settings: switch defaults (host egress ports too, if they are like a switch's), then
        // overrides by name.
        let mut settings: Vec<Option<PortSettings>> =
            net.ports.iter().map(|p| sc.queueing_port(p.from).then(|| sc.switch.clone())).collect();
        for (i, o) in sc.ports.iter().enumerate() {
            let id = net.port_by_name(&o.port).ok_or_else(|| {
                Error::config(format!("ports.{i}.port"), format!("no port named `{}` (names look like s0->h0)", o.port))
            })?;
            if settings[id as usize].is_none() {
                return Err(Error::config(
                    format!("ports.{i}.port"),
                    "host NIC ports are not configurable (unless hosts.egress = \"switch\")",
                ));
            }
            settings[id as usize] = Some(sc.port_settings_with(o));
        }
        let watched: Vec<u32> = if sc.observe.ports.is_empty() {
            (0..net.ports.len() as u32).filter(|&p| settings[p as usize].is_some()).collect()
        } else {
            sc.observe
                .ports
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    net.port_by_name(n)
                        .ok_or_else(|| Error::config(format!("observe.ports.{i}"), format!("no port named `{n}`")))
                })
                .collect::<Result<_, _>>()?
        };
        // Watched ports as a mask: every switch port is watched by default, and a search per port would cost
        // ports².
        let mut is_watched = vec![false; net.ports.len()];
        watched.iter().for_each(|&p| is_watched[p as usize] = true);
        let mut ports = Vec::with_capacity(net.ports.len());
        for (i, spec) in net.ports.iter().enumerate() {
            let hist = sc.observe.occupancy_quantiles && is_watched[i];
            let port = match &settings[i] {
                Some(s) => {
                    // Time-valued thresholds resolve with this port's rate; re-check them against its buffer.
                    let sched = s.scheduler.build(s.queues as usize);
                    let rng = Rng::stream(sc.seed, key::PORT + i as u64);
                    let name = spec.name();
                    let marker = s.marker.build(Build {
                        mtu: spec.mtu,
                        rate: spec.rate,
                        buffer: s.buffer,
                        port: &name,
                        queues: s.queues as usize,
                        sched: &sched,
                        rng,
                    })?;
                    let cfg = PortConfig {
                        rate: spec.rate,
                        delay: spec.delay,
                        mtu: spec.mtu,
                        buffer: s.buffer,
                        queues: s.queues,
                        non_ect: s.non_ect,
                        queue_limits: s.queue_limits.clone(),
                    };
                    let mut port = Port::new(cfg, sched, marker, hist);
                    port.lossless = s.pfc.as_ref().map_or(0, |c| c.lossless_mask());
                    port.set_pass_idle(s.pfc.is_none() && sc.observe.trace.is_none());
                    if let (Some(_), Node::Switch(sw)) = (&sc.switch.pool, spec.from) {
                        port.shared = Some(sw);
                    }
                    port
                }
                // A host NIC: a FIFO at line rate that never marks or drops (the transport bounds it).
                None => Port::nic(spec.rate, spec.delay, spec.mtu),
            };
            ports.push(port);
        }
        let trace = match &sc.observe.trace {
            None => None,
            Some(t) => Some(TraceSpec::new(t, &net, &settings)?),
        };
        let pfc = sc.switch.pfc.as_ref().map(|c| pfc_state(c, &net, sc));
        let rtt_varies = sc.workloads.iter().any(|w| matches!(w, Workload::Poisson { rtt: Some(_), .. }));
        // A host's port like a switch's that never holds more than `tsq_limit`: no flow of it ever waits for
        // it to drain.
        let never_fills = |port: &Port| sc.hosts.egress == Egress::Switch && port.cfg.buffer <= sc.hosts.tsq_limit;
        let host_ports_never_fill =
            net.ports.iter().zip(&ports).all(|(spec, port)| matches!(spec.from, Node::Switch(_)) || never_fills(port));
        // DCQCN's pacer reads the clock (validation keeps RoCE off hosts' ports like a switch's today).
        let receiver_events_leave_senders =
            host_ports_never_fill && pfc.is_none() && !matches!(sc.transport.cc, CcConfig::Dcqcn(_));
        for (spec, port) in net.ports.iter().zip(&mut ports) {
            let around = Surroundings {
                shared_buffer: port.shared.is_some(),
                pfc: pfc.is_some(),
                traced: trace.is_some(),
                passes_idle: port.passes_idle(),
                host: match spec.from {
                    Node::Switch(_) => None,
                    Node::Host(_) => Some(HostSide { senders_may_wait: !never_fills(port), delay_line: rtt_varies }),
                },
            };
            port.set_deferred_departures(may_defer_departures(&around));
        }
        let classes = 256;
        let mut sim = Sim {
            now: Time::ZERO,
            hosts: (0..hosts).map(|_| Default::default()).collect(),
            pools: match &sc.switch.pool {
                Some(p) => (0..switches).map(|_| SharedBuffer::new(p.size.0, p.alpha.clone())).collect(),
                None => Vec::new(),
            },
            events: EventQueue::default(),
            pool: PacketPool::default(),
            fifos: FifoPool::new(),
            ports,
            far_end: net.ports.iter().map(|spec| spec.to).collect(),
            port_host: net
                .ports
                .iter()
                .map(|p| match p.from {
                    Node::Host(h) => h,
                    Node::Switch(_) => super::NOT_A_HOST,
                })
                .collect(),
            receiver_events_leave_senders,
            on_links: 0,
            any_extra_delay: false,
            flows: reserve_flows(sc)?,
            tcp: std::sync::Arc::new(sc.transport),
            tsq_limit: sc.hosts.tsq_limit,
            fct_acked: sc.observe.fct_end == crate::scenario::FctEnd::Acked,
            workloads: sc
                .workloads
                .iter()
                .enumerate()
                .map(|(i, w)| WorkloadState::new(sc.seed, i as u32, w, &net))
                .collect::<Result<_, _>>()?,
            seed: sc.seed,
            duration: sc.duration,
            warmup: sc.observe.warmup,
            max_events: sc.limits.max_events,
            events_processed: 0,
            traffic_end: Time::ZERO,
            class_delivered: vec![0; classes],
            class_delivered_at_warmup: vec![0; classes],
            class_rtt: vec![Default::default(); classes],
            all_rtt: Default::default(),
            phases: sc.observe.phases.clone(),
            phase_snapshots: vec![None; sc.observe.phases.len()],
            rtt_series: sc
                .observe
                .rtt_samples
                .then(|| Series::new("rtt", ["time_s", "flow", "class", "rtt_us"].map(String::from).to_vec())),
            sample_interval: sc.observe.sample_interval,
            watched_ports: watched.clone(),
            cwnd_flows: sc.observe.cwnd.clone(),
            series: Vec::new(),
            trace,
            trace_records: Vec::new(),
            drop_scratch: Vec::new(),
            late_seq: 0,
            injected: 0,
            consumed: 0,
            dropped: 0,
            pfc,
            pfc_error: None,
            net,
        };
        let mut cols = vec!["time_s".to_string()];
        for &p in &watched {
            for q in 0..sim.ports[p as usize].queue_count() {
                cols.push(format!("{}:q{q}_bytes", sim.net.ports[p as usize].name()));
            }
        }
        sim.series.push(Series::new("queues", cols));
        let mut cols = vec!["time_s".to_string()];
        cols.extend((0..used_classes(sc)).map(|c| format!("class{c}_delivered_bytes")));
        sim.series.push(Series::new("delivered", cols));
        let mut cols = vec!["time_s".to_string()];
        let unit = if matches!(sc.transport.cc, CcConfig::Dcqcn(_)) { "rate_gbps" } else { "cwnd_bytes" };
        cols.extend(sc.observe.cwnd.iter().map(|f| format!("flow{f}_{unit}")));
        sim.series.push(Series::new("cwnd", cols));
        for (i, w) in sc.workloads.iter().enumerate() {
            if let Some(t) = sim.workloads[i].first_event(w) {
                sim.schedule(t, Event::Workload { idx: i as u32 });
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

/// PFC ingress state for every link into a switch, with its XOFF + headroom bound.
fn pfc_state(c: &PfcConfig, net: &Network, sc: &Scenario) -> Pfc {
    // RTT variation delays a flow's packets after its NIC (DESIGN "RTT variation"): what is in that delay
    // line when PAUSE arrives still lands, so a host link's headroom grows by its rate × the longest delay.
    let longest_rtt = sc
        .workloads
        .iter()
        .filter_map(|w| match w {
            crate::scenario::Workload::Poisson { rtt: Some(r), .. } => Some(r.hi),
            _ => None,
        })
        .max()
        .unwrap_or(Time::ZERO);
    let limit = net
        .ports
        .iter()
        .map(|p| {
            let upstream_backlog = match p.from {
                Node::Host(_) => {
                    Bytes(sc.hosts.tsq_limit.0.saturating_add(sc.mtu.0).saturating_add(p.rate.bytes_in(longest_rtt).0))
                }
                Node::Switch(_) => Bytes::ZERO,
            };
            // Saturating: a bound past 2⁶⁴ B is never reached, and must not wrap into a tiny one.
            c.xoff.0.saturating_add(c.headroom_for(p.rate, p.delay, sc.mtu, upstream_backlog).0)
        })
        .collect();
    Pfc {
        xoff: c.xoff.0,
        xon: c.xon(sc.mtu).0,
        lossless: c.lossless_mask(),
        limit,
        ingress: vec![Default::default(); net.ports.len()],
    }
}

/// Classes the workloads can put traffic in (the delivered-bytes series has one column each).
fn used_classes(sc: &Scenario) -> usize {
    use crate::scenario::{Services, Workload};
    let top = sc.workloads.iter().map(|w| match w {
        Workload::Flows { class, classes, .. } => {
            classes.as_ref().and_then(|c| c.iter().max().copied()).unwrap_or(*class) as usize + 1
        }
        Workload::BackToBack { class, .. }
        | Workload::Incast { class, .. }
        | Workload::Probe { class, .. }
        | Workload::Query { class, .. } => *class as usize + 1,
        Workload::Poisson { services, .. } => match services {
            Services::Single => 1,
            Services::Random { count } | Services::Pairs { count } | Services::PairRule { count } => *count as usize,
            Services::Weighted { probabilities } => probabilities.len(),
        },
    });
    top.max().unwrap_or(1)
}

//! Builds a `Sim` from a validated `Scenario`: topology, ports with their schedulers and markers, workloads.

use super::report::TraceSpec;
use super::workload::WorkloadState;
use super::Sim;
use crate::engine::{rng::key, Event, EventQueue, Rng};
use crate::error::Error;
use crate::mark::{AnyMarker, Red, Threshold};
use crate::net::{LinkSpec, Network, Node};
use crate::observe::Series;
use crate::packet::PacketPool;
use crate::port::{Port, PortConfig};
use crate::scenario::{HostLink, MarkerConfig, PortSettings, Scenario, SchedulerConfig, Topology};
use crate::sched::AnyScheduler;
use crate::units::{Bytes, Rate, Time};

/// Host h's link parameters after applying `host_links` overrides in order.
fn host_link(h: u32, rate: Rate, delay: Time, overrides: &[HostLink]) -> (Rate, Time, Time) {
    let (mut r, mut d, mut extra) = (rate, delay, Time::ZERO);
    for o in overrides.iter().filter(|o| o.hosts.0.contains(&h)) {
        r = o.rate.unwrap_or(r);
        d = o.delay.unwrap_or(d);
        extra = o.extra_delay.unwrap_or(extra);
    }
    (r, d, extra)
}

fn links_of(t: &Topology) -> (u32, u32, Vec<LinkSpec>) {
    let host_links = |first: u32, n: u32, sw: u32, rate, delay, ov: &[HostLink], out: &mut Vec<LinkSpec>| {
        for h in first..first + n {
            let (r, d, extra) = host_link(h, rate, delay, ov);
            out.push(LinkSpec {
                a: Node::Host(h),
                b: Node::Switch(sw),
                rate_ab: r,
                rate_ba: r,
                delay_ab: d + extra,
                delay_ba: d,
            });
        }
    };
    let mut links = vec![];
    match t {
        Topology::Star { hosts, rate, delay, host_links: ov } => {
            host_links(0, *hosts, 0, *rate, *delay, ov, &mut links);
            (*hosts, 1, links)
        }
        Topology::Dumbbell { left, right, rate, delay, bottleneck_rate, bottleneck_delay, host_links: ov } => {
            host_links(0, *left, 0, *rate, *delay, ov, &mut links);
            host_links(*left, *right, 1, *rate, *delay, ov, &mut links);
            links.push(LinkSpec {
                a: Node::Switch(0),
                b: Node::Switch(1),
                rate_ab: *bottleneck_rate,
                rate_ba: *bottleneck_rate,
                delay_ab: *bottleneck_delay,
                delay_ba: *bottleneck_delay,
            });
            (left + right, 2, links)
        }
    }
}

fn make_marker(m: &MarkerConfig, mtu: Bytes, rate: Rate, rng: Rng) -> AnyMarker {
    match *m {
        MarkerConfig::None => AnyMarker::None,
        MarkerConfig::Threshold { threshold, at, compare, scope } => {
            AnyMarker::Threshold(Threshold { threshold: threshold.resolve(mtu, rate), at, compare, scope })
        }
        MarkerConfig::Red { min, max, max_p, weight, gentle, drop_above_max, scope } => AnyMarker::Red(Red::new(
            min.resolve(mtu, rate),
            max.resolve(mtu, rate),
            max_p,
            weight,
            gentle,
            drop_above_max,
            scope == crate::mark::threshold::Scope::Port,
            rng,
        )),
    }
}

fn make_scheduler(s: &SchedulerConfig) -> AnyScheduler {
    match s {
        SchedulerConfig::Sp => AnyScheduler::StrictPriority,
    }
}

impl Sim {
    pub fn new(sc: &Scenario) -> Result<Sim, Error> {
        sc.validate()?;
        let (hosts, switches, links) = links_of(&sc.topology);
        let net = Network::build(hosts as usize, switches as usize, &links, sc.mtu)
            .map_err(|e| Error::config("topology", e))?;
        // Per-port settings: switch defaults, then overrides by name.
        let mut settings: Vec<Option<PortSettings>> =
            net.ports.iter().map(|p| matches!(p.from, Node::Switch(_)).then(|| sc.switch.clone())).collect();
        for (i, o) in sc.ports.iter().enumerate() {
            let id = net.port_by_name(&o.port).ok_or_else(|| {
                Error::config(format!("ports.{i}.port"), format!("no port named `{}` (names look like s0->h0)", o.port))
            })?;
            if settings[id as usize].is_none() {
                return Err(Error::config(format!("ports.{i}.port"), "host NIC ports are not configurable"));
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
        let mut ports = Vec::with_capacity(net.ports.len());
        for (i, spec) in net.ports.iter().enumerate() {
            let hist = watched.contains(&(i as u32));
            let port = match &settings[i] {
                Some(s) => {
                    // Time-valued thresholds resolve with this port's rate; re-check them against its buffer.
                    let marker =
                        make_marker(&s.marker, spec.mtu, spec.rate, Rng::stream(sc.seed, key::PORT + i as u64));
                    check_resolved(&marker, s.buffer, &spec.name())?;
                    let cfg = PortConfig {
                        rate: spec.rate,
                        delay: spec.delay,
                        mtu: spec.mtu,
                        buffer: s.buffer,
                        queues: s.queues as usize,
                        non_ect: s.non_ect,
                    };
                    Port::new(cfg, make_scheduler(&s.scheduler), marker, hist)
                }
                None => {
                    // A host NIC: one FIFO that never marks or drops (the transport's window bounds it).
                    let cfg = PortConfig {
                        rate: spec.rate,
                        delay: spec.delay,
                        mtu: spec.mtu,
                        buffer: Bytes(u64::MAX / 2),
                        queues: 1,
                        non_ect: Default::default(),
                    };
                    Port::new(cfg, AnyScheduler::StrictPriority, AnyMarker::None, false)
                }
            };
            ports.push(port);
        }
        let trace = match &sc.observe.trace {
            None => None,
            Some(t) => Some(TraceSpec::new(t, &net, &settings)?),
        };
        let classes = 256;
        let mut sim = Sim {
            now: Time::ZERO,
            events: EventQueue::default(),
            pool: PacketPool::default(),
            ports,
            flows: Vec::new(),
            tcp: sc.transport,
            workloads: sc.workloads.iter().enumerate().map(|(i, w)| WorkloadState::new(sc.seed, i as u32, w)).collect(),
            seed: sc.seed,
            duration: sc.duration,
            warmup: sc.observe.warmup,
            max_events: sc.limits.max_events,
            events_processed: 0,
            class_delivered: vec![0; classes],
            class_delivered_at_warmup: vec![0; classes],
            class_rtt: vec![Default::default(); classes],
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
            injected: 0,
            consumed: 0,
            dropped: 0,
            net,
        };
        let mut cols = vec!["time_s".to_string()];
        for &p in &watched {
            for q in 0..sim.ports[p as usize].queues.len() {
                cols.push(format!("{}:q{q}_bytes", sim.net.ports[p as usize].name()));
            }
        }
        sim.series.push(Series::new("queues", cols));
        let mut cols = vec!["time_s".to_string()];
        cols.extend((0..classes).map(|c| format!("class{c}_delivered_bytes")));
        sim.series.push(Series::new("delivered", cols));
        let mut cols = vec!["time_s".to_string()];
        cols.extend(sc.observe.cwnd.iter().map(|f| format!("flow{f}_cwnd_bytes")));
        sim.series.push(Series::new("cwnd", cols));
        for (i, w) in sc.workloads.iter().enumerate() {
            if let Some(t) = sim.workloads[i].first_event(w) {
                sim.schedule(t, Event::Workload { idx: i as u32 });
            }
        }
        Ok(sim)
    }
}

fn check_resolved(m: &AnyMarker, buffer: Bytes, port: &str) -> Result<(), Error> {
    let k = match m {
        AnyMarker::Threshold(t) => t.threshold,
        AnyMarker::Red(r) => r.max,
        AnyMarker::None => return Ok(()),
    };
    if k > buffer {
        return Err(Error::config("switch.marker", format!("threshold {k} exceeds port {port}'s buffer {buffer}")));
    }
    Ok(())
}

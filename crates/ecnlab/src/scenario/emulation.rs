//! `[emulation]`: how `ecnlab-sim emulate` runs a scenario on the software switch with real TCP stacks, and why
//! a scenario cannot be emulated. The simulator ignores the section.
//!
//! An emulated scenario is an ordinary one: its `[switch]` and `[[ports]]` build the very ports the software
//! switch forwards real frames through (crates/ecnlab-switch), and its workloads become real TCP connections
//! between network namespaces. What the real stacks and the switch cannot do is refused here, each refusal a
//! config error naming the field and saying why, before anything is built on the machine.

use super::{Egress, FctEnd, Scenario, Topology, Workload};
use crate::error::Error;
use crate::transport::CcConfig;
use crate::units::{Bytes, Rate, Time};
use serde::{Deserialize, Serialize};

/// Most hosts an emulated star or dumbbell (both sides together) may have: every host's TCP, applications and
/// receive processing share the cores the switch leaves (one core on the 2-core machines this was measured
/// on), and each connection has a thread of its own; 16 hosts of long-lived flows at 100 Mb/s is what that
/// leaves room for.
pub const MAX_EMULATED_HOSTS: u32 = 16;

/// The fastest `rate_cap` accepted: the forwarding benchmark reached 1 Gb/s per port on one core with 1500-byte
/// frames and found 2.5 Gb/s borderline on a 2-core machine (issue 45); 10 Gb/s leaves room for faster machines
/// while refusing rates no software switch of this kind keeps.
pub const MAX_RATE_CAP: Rate = Rate(10_000_000_000);

/// Longest emulated run: it takes its duration in wall time, with a core busy.
pub const MAX_EMULATED_DURATION: Time = Time(600 * crate::units::PS_PER_S);

/// Which frames of a link a capture records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PcapDirection {
    /// Frames the port sends toward its host (CE as the switch wrote it), stamped when sent.
    #[default]
    Egress,
    /// Frames arriving from the host on the same link, stamped by the kernel on receipt.
    Ingress,
    /// Both, in two files.
    Both,
}

/// One port to capture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapPort {
    /// A switch's port toward a host, `s0->h<i>` (in a dumbbell `s1->h<i>` for the right side's hosts).
    pub port: String,
    #[serde(default)]
    pub direction: PcapDirection,
}

/// The `[emulation]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Emulation {
    /// The core the switch's forwarding thread is pinned to; absent: the machine's last core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_core: Option<u32>,
    /// Cores that run the hosts' threads and their receive processing; empty: every core but the switch's.
    pub host_cores: Vec<u32>,
    /// The fastest link the emulation accepts: a scenario whose links are faster is refused.
    pub rate_cap: Rate,
    /// Ports whose frames are written to `pcap/` in the run directory.
    pub pcap: Vec<PcapPort>,
    /// Bytes kept of each captured frame: the default holds the Ethernet header (14 B), an IPv4 header (20 B;
    /// the hosts send no IP options) and a TCP header with any options (≤ 60 B), all that tcpdump's and
    /// Wireshark's TCP analysis read, at a twelfth of a full capture's size.
    pub pcap_snaplen: Bytes,
}

impl Default for Emulation {
    fn default() -> Self {
        Emulation {
            switch_core: None,
            host_cores: Vec::new(),
            rate_cap: Rate(1_000_000_000),
            pcap: Vec::new(),
            pcap_snaplen: Bytes(128),
        }
    }
}

fn refuse<T>(path: impl Into<String>, msg: impl Into<String>) -> Result<T, Error> {
    Err(Error::config(path, msg))
}

/// Which switch ports the emulation builds, named, numbered and sized as the simulator's (`net::Network`
/// numbers a link's two directions 2l and 2l + 1, host h's link being link h, so a port's random stream,
/// `key::PORT + index`, is the simulator's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmulatedPorts {
    /// Per host h, the port of its switch toward it: its switch, name (`s1->h3`) and the simulator's index.
    pub hosts: Vec<(u32, String, usize)>,
    /// The ports between switches (a dumbbell's `s0->s1`, `s1->s0`): from, to, name, index, rate, delay.
    pub trunks: Vec<EmulatedTrunk>,
}

/// One direction of a link between two switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmulatedTrunk {
    pub from: u32,
    pub to: u32,
    pub name: String,
    pub index: usize,
    pub rate: Rate,
    pub delay: Time,
}

impl EmulatedPorts {
    /// The switch ports of a topology (hosts' links first, then switch-to-switch links, as `Topology::links`).
    pub fn of(topology: &Topology) -> EmulatedPorts {
        use crate::net::{node_name, Node};
        let (_, links) = topology.links();
        let mut out = EmulatedPorts { hosts: vec![], trunks: vec![] };
        for (l, spec) in links.iter().enumerate() {
            match (spec.a, spec.b) {
                (Node::Host(h), Node::Switch(s)) => out.hosts.push((s, format!("s{s}->h{h}"), 2 * l + 1)),
                (Node::Switch(a), Node::Switch(b)) => {
                    #[rustfmt::skip]
                    let dir = |from: u32, to: u32, index, rate, delay| EmulatedTrunk {
                        from, to, index, rate, delay,
                        name: format!("{}->{}", node_name(Node::Switch(from)), node_name(Node::Switch(to))),
                    };
                    out.trunks.push(dir(a, b, 2 * l, spec.rate_ab, spec.delay_ab));
                    out.trunks.push(dir(b, a, 2 * l + 1, spec.rate_ba, spec.delay_ba));
                }
                // Hosts linked to hosts: no topology makes them.
                _ => {}
            }
        }
        out
    }

    /// The host whose switch port `name` is.
    pub fn host_of(&self, name: &str) -> Option<u32> {
        self.hosts.iter().position(|(_, n, _)| n == name).map(|h| h as u32)
    }
}

impl Scenario {
    /// The scenario's `[emulation]` table, or its defaults.
    pub fn emulation_settings(&self) -> Emulation {
        self.emulation.clone().unwrap_or_default()
    }

    /// Whether `ecnlab-sim emulate` can run this (valid) scenario on the software switch and real stacks: the
    /// first reason it cannot, as a config error naming the field.
    pub fn check_emulatable(&self) -> Result<(), Error> {
        let em = self.emulation_settings();
        if em.rate_cap.0 == 0 || em.rate_cap > MAX_RATE_CAP {
            return refuse("emulation.rate_cap", format!("must be in (0, {MAX_RATE_CAP}], got {}", em.rate_cap));
        }
        if !(64..=65_535).contains(&em.pcap_snaplen.0) {
            return refuse("emulation.pcap_snaplen", format!("{}: allowed 64B to 65535B", em.pcap_snaplen));
        }
        if let Some(c) = em.switch_core {
            if em.host_cores.contains(&c) {
                return refuse("emulation.host_cores", format!("core {c} is the switch's (emulation.switch_core)"));
            }
        }
        if self.duration > MAX_EMULATED_DURATION {
            return refuse(
                "duration",
                format!("an emulation runs its duration in wall time: at most {MAX_EMULATED_DURATION}"),
            );
        }
        if !(576..=9000).contains(&self.mtu.0) {
            return refuse("mtu", format!("{}: emulated links take an IP MTU of 576 to 9000 bytes", self.mtu));
        }
        self.check_emulated_topology(&em)?;
        self.check_emulated_switch()?;
        self.check_emulated_transport()?;
        for (i, w) in self.workloads.iter().enumerate() {
            check_emulated_workload(&format!("workloads.{i}"), w)?;
        }
        self.check_emulated_observe()?;
        let ports = EmulatedPorts::of(&self.topology);
        for (i, p) in em.pcap.iter().enumerate() {
            let path = format!("emulation.pcap.{i}.port");
            if ports.trunks.iter().any(|t| t.name == p.port) {
                #[rustfmt::skip]
                return refuse(path, format!(
                    "`{}` joins the two switches inside the forwarding thread: no frame crosses a veth there to \
                     be captured; capture a host's port ({} .. {})",
                    p.port, ports.hosts[0].1, ports.hosts[ports.hosts.len() - 1].1));
            }
            if ports.host_of(&p.port).is_none() {
                let names: Vec<&str> = ports.hosts.iter().map(|(_, n, _)| n.as_str()).collect();
                return refuse(path, format!("`{}` is not a port toward a host: {}", p.port, names.join(", ")));
            }
        }
        Ok(())
    }

    fn check_emulated_topology(&self, em: &Emulation) -> Result<(), Error> {
        let (rate, host_links) = match &self.topology {
            Topology::Star { hosts, rate, host_links, .. } => {
                if !(2..=MAX_EMULATED_HOSTS).contains(hosts) {
                    return refuse(
                        "topology.hosts",
                        format!(
                            "{hosts} hosts; an emulated star has 2 to {MAX_EMULATED_HOSTS} (the hosts share the \
                             cores the switch leaves)"
                        ),
                    );
                }
                (*rate, host_links)
            }
            // Both switches are driven by the one forwarding thread; the link between them is a port and a
            // delay line inside it.
            Topology::Dumbbell { left, right, rate, bottleneck_rate, host_links, .. } => {
                let hosts = left.saturating_add(*right);
                if hosts > MAX_EMULATED_HOSTS {
                    return refuse(
                        "topology.right",
                        format!(
                            "left + right = {hosts} hosts; an emulated dumbbell has at most {MAX_EMULATED_HOSTS} \
                             on both sides together (the hosts share the cores the switch leaves)"
                        ),
                    );
                }
                if *bottleneck_rate > em.rate_cap {
                    return refuse(
                        "topology.bottleneck_rate",
                        format!("{bottleneck_rate} is above emulation.rate_cap = {}", em.rate_cap),
                    );
                }
                if self.switch.pool.is_some() {
                    return refuse(
                        "switch.pool",
                        "a dumbbell's two switches would each need their own shared pool; the emulated switch \
                         has one: emulate the pool in a star",
                    );
                }
                (*rate, host_links)
            }
            _ => {
                return refuse(
                    "topology.kind",
                    "only a star or a dumbbell of a handful of hosts is emulated (one namespace per host, the \
                     switches in one forwarding thread)",
                )
            }
        };
        if rate > em.rate_cap {
            return refuse("topology.rate", format!("{rate} is above emulation.rate_cap = {}", em.rate_cap));
        }
        for (i, l) in host_links.iter().enumerate() {
            if let Some(r) = l.rate.filter(|r| *r > em.rate_cap) {
                let path = format!("topology.host_links.{i}.rate");
                return refuse(path, format!("{r} is above emulation.rate_cap = {}", em.rate_cap));
            }
        }
        Ok(())
    }

    fn check_emulated_switch(&self) -> Result<(), Error> {
        if self.switch.pfc.is_some() {
            return refuse("switch.pfc", "PFC is not emulated: veths carry no PAUSE frames");
        }
        if self.hosts.egress == Egress::Switch {
            return refuse(
                "hosts.egress",
                "\"switch\" queues at the hosts' ports; emulated hosts send through their kernel's own stack and \
                 NIC model, so only \"nic\" is emulated",
            );
        }
        Ok(())
    }

    fn check_emulated_transport(&self) -> Result<(), Error> {
        let t = &self.transport;
        match t.cc {
            CcConfig::Reno | CcConfig::Ecnstar => {}
            CcConfig::Dctcp { g, initial_alpha } => {
                if g != 1.0 / 16.0 || initial_alpha != 1.0 {
                    return refuse(
                        "transport.cc",
                        format!(
                            "g = {g}, initial_alpha = {initial_alpha}: ecnlab's BPF DCTCP has g = 1/16 and starts \
                             at α = 1 (RFC 8257 §3.3, the paper's defaults); other values run only in the simulator"
                        ),
                    );
                }
            }
            CcConfig::Pmsbe { .. } => {
                return refuse(
                    "transport.cc.kind",
                    "\"pmsbe\" has no implementation for real stacks; run it in the simulator",
                )
            }
            CcConfig::Dcqcn(_) => {
                return refuse(
                    "transport.cc.kind",
                    "\"dcqcn\" is RoCE: the hosts' kernels run TCP only (reno, ecnstar or dctcp)",
                )
            }
        }
        if t.pias.is_some() {
            return refuse("transport.pias", "PIAS tags packets in the simulator's hosts; real stacks do not");
        }
        if t.mss as u64 + 40 != self.mtu.0 {
            return refuse(
                "transport.mss",
                format!("{}: the kernel derives its MSS from the MTU, mtu − 40 = {}", t.mss, self.mtu.0 - 40),
            );
        }
        if t.min_rto < Time::from_ms(1) {
            return refuse(
                "transport.min_rto",
                format!("{}: the kernel's minimum RTO (route rto_min) is set in whole milliseconds, ≥ 1ms", t.min_rto),
            );
        }
        if !(1..=1000).contains(&t.initial_window) {
            return refuse("transport.initial_window", "the route's initcwnd takes 1 to 1000 segments");
        }
        Ok(())
    }

    fn check_emulated_observe(&self) -> Result<(), Error> {
        let o = &self.observe;
        if o.trace.is_some() {
            return refuse("observe.trace", "the emulation records frames in pcap files instead: use emulation.pcap");
        }
        if !o.cwnd.is_empty() {
            return refuse("observe.cwnd", "a real sender's cwnd is not sampled by the emulation");
        }
        if o.rtt_samples {
            return refuse("observe.rtt_samples", "the kernel does not hand out its per-ACK RTT samples");
        }
        if !o.phases.is_empty() {
            return refuse("observe.phases", "goodput per phase is not measured by the emulation");
        }
        if o.fct_end == FctEnd::Acked {
            return refuse(
                "observe.fct_end",
                "\"acked\": the emulation times a flow at its receiving application (\"received\")",
            );
        }
        Ok(())
    }
}

fn check_emulated_workload(path: &str, w: &Workload) -> Result<(), Error> {
    match w {
        Workload::Flows { .. } | Workload::BackToBack { .. } | Workload::Incast { .. } => Ok(()),
        Workload::Probe { ect, .. } => {
            if !ect {
                return refuse(
                    format!("{path}.ect"),
                    "false: a probe's ECN capability is its host's TCP (net.ipv4.tcp_ecn), not set per probe",
                );
            }
            Ok(())
        }
        Workload::Poisson { .. } => refuse(
            format!("{path}.kind"),
            "\"poisson\" is not in the emulation's traffic library (long-lived and sized flows, back-to-back \
             flows, incast rounds, probes)",
        ),
        Workload::Query { .. } => refuse(
            format!("{path}.kind"),
            "\"query\" is not in the emulation's traffic library (long-lived and sized flows, back-to-back flows, \
             incast rounds, probes)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::Scenario;

    const STAR: &str = "duration = \"2s\"\n[topology]\nkind = \"star\"\nhosts = 3\nrate = \"100Mbps\"\n\
                        delay = \"50us\"\n[transport]\ncc = { kind = \"ecnstar\" }\n\
                        [[workloads]]\nkind = \"flows\"\nsrc = \"1-2\"\ndst = 0\n";

    fn refused(sets: &[&str]) -> String {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let sc = Scenario::from_toml(STAR, &sets).expect("a valid scenario");
        match sc.check_emulatable() {
            Err(crate::Error::Config { path, .. }) => path,
            other => panic!("{sets:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn each_reason_a_scenario_cannot_be_emulated_names_its_field() {
        let sc = Scenario::from_toml(STAR, &[]).unwrap();
        sc.check_emulatable().expect("a 3-host 100 Mb/s star of Reno+ECN flows is emulated");
        let cases: &[(&[&str], &str)] = &[
            (&["topology.rate=10Gbps"], "topology.rate"),
            (&["emulation.rate_cap=50Mbps"], "topology.rate"),
            (&["topology.hosts=17"], "topology.hosts"),
            (&["transport.cc={ kind = \"dcqcn\" }", "transport.handshake=false"], "transport.cc.kind"),
            (&["transport.cc={ kind = \"dctcp\", g = 0.1 }"], "transport.cc"),
            (&["transport.mss=1000"], "transport.mss"),
            (&["hosts.egress=switch"], "hosts.egress"),
            (&["switch.pfc={ xoff = \"20KB\", xon = \"10KB\" }"], "switch.pfc"),
            (
                &["workloads.0={ kind = \"query\", senders = \"1-2\", receiver = 0, count = 4, at = \"1s\" }"],
                "workloads.0.kind",
            ),
            (
                &["workloads.0={ kind = \"probe\", src = 1, dst = 0, interval = \"1ms\", ect = false }"],
                "workloads.0.ect",
            ),
            (&["observe.trace={}"], "observe.trace"),
            (&["emulation.pcap=[{ port = \"s0->h3\" }]"], "emulation.pcap.0.port"),
            (&["emulation.switch_core=1", "emulation.host_cores=[0, 1]"], "emulation.host_cores"),
            (&["duration=601s"], "duration"),
        ];
        for (sets, field) in cases {
            assert_eq!(refused(sets), *field, "{sets:?}");
        }
    }

    const DUMBBELL: &str = "duration = \"1s\"\n[topology]\nkind = \"dumbbell\"\nleft = 2\nright = 1\n\
                            rate = \"100Mbps\"\ndelay = \"10us\"\nbottleneck_rate = \"50Mbps\"\n\
                            bottleneck_delay = \"30us\"\n[transport]\ncc = { kind = \"ecnstar\" }\n";

    #[test]
    fn a_dumbbell_is_emulated_and_what_remains_refused_names_its_field() {
        let sc = Scenario::from_toml(DUMBBELL, &[]).unwrap();
        sc.check_emulatable().expect("a 2 + 1 host dumbbell at 100 Mb/s is emulated");
        let ok = Scenario::from_toml(DUMBBELL, &["emulation.pcap=[{ port = \"s1->h2\" }]".into()]).unwrap();
        ok.check_emulatable().expect("a right-side host's port is captured");
        let cases: &[(&[&str], &str)] = &[
            (&["topology.left=9", "topology.right=8"], "topology.right"),
            (&["topology.bottleneck_rate=2Gbps"], "topology.bottleneck_rate"),
            (&["topology.host_links=[{ hosts = \"2\", rate = \"2Gbps\" }]"], "topology.host_links.0.rate"),
            (&["switch.pool={ size = \"1MB\" }"], "switch.pool"),
            (&["emulation.pcap=[{ port = \"s0->s1\" }]"], "emulation.pcap.0.port"),
            (&["emulation.pcap=[{ port = \"s0->h2\" }]"], "emulation.pcap.0.port"),
        ];
        for (sets, field) in cases {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let sc = Scenario::from_toml(DUMBBELL, &sets).expect("a valid scenario");
            match sc.check_emulatable() {
                Err(crate::Error::Config { path, .. }) => assert_eq!(path, *field, "{sets:?}"),
                other => panic!("{sets:?} was not refused: {other:?}"),
            }
        }
        let leaf = "duration = \"1s\"\n[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 1\n\
                    hosts_per_leaf = 1\nrate = \"100Mbps\"\ndelay = \"10us\"\n";
        let e = Scenario::from_toml(leaf, &[]).unwrap().check_emulatable().unwrap_err().to_string();
        assert!(e.contains("topology.kind") && e.contains("star or a dumbbell"), "{e}");
    }

    #[test]
    fn a_dumbbells_ports_are_named_numbered_and_sized_as_the_simulators() {
        // Links: h0-s0 (ports 0, 1), h1-s0 (2, 3), h2-s1 (4, 5), then s0-s1 (6, 7).
        let sc = Scenario::from_toml(DUMBBELL, &[]).unwrap();
        let p = super::EmulatedPorts::of(&sc.topology);
        let hosts: Vec<(u32, &str, usize)> = p.hosts.iter().map(|(s, n, i)| (*s, n.as_str(), *i)).collect();
        assert_eq!(hosts, [(0, "s0->h0", 1), (0, "s0->h1", 3), (1, "s1->h2", 5)]);
        let trunks: Vec<(u32, u32, &str, usize, u64, u64)> =
            p.trunks.iter().map(|t| (t.from, t.to, t.name.as_str(), t.index, t.rate.0, t.delay.0)).collect();
        assert_eq!(trunks, [(0, 1, "s0->s1", 6, 50_000_000, 30_000_000), (1, 0, "s1->s0", 7, 50_000_000, 30_000_000)]);
        assert_eq!((p.host_of("s1->h2"), p.host_of("s0->h2"), p.host_of("s0->s1")), (Some(2), None, None));
        // The simulator's own numbering of the same topology.
        let (switches, links) = sc.topology.links();
        let net = crate::net::Network::build(3, switches as usize, &links, sc.mtu).unwrap();
        for (_, name, i) in &p.hosts {
            assert_eq!(&net.ports[*i].name(), name);
        }
        for t in &p.trunks {
            assert_eq!(net.ports[t.index].name(), t.name);
        }
    }

    #[test]
    fn the_section_round_trips_and_is_absent_when_not_given() {
        let sc = Scenario::from_toml(STAR, &[]).unwrap();
        assert!(!sc.to_toml().contains("[emulation]"), "a scenario without the section keeps its config.toml");
        let with = Scenario::from_toml(STAR, &["emulation.pcap=[{ port = \"s0->h0\", direction = \"both\" }]".into()])
            .unwrap();
        let again = Scenario::from_toml(&with.to_toml(), &[]).unwrap();
        assert_eq!(again.emulation, with.emulation);
        assert_eq!(again.emulation_settings().rate_cap, crate::units::Rate(1_000_000_000));
    }
}

#[cfg(test)]
mod simulator_ignores_it {
    use crate::Scenario;

    #[test]
    fn a_scenario_with_the_section_runs_in_the_simulator_with_identical_results() {
        // The shipped emulation example, shortened, with and without its [emulation] table.
        let text = crate::builtin::scenario("emu-ecnstar-2flows").expect("shipped");
        let cut: Vec<String> = ["duration=300ms", "observe.warmup=100ms"].iter().map(|s| s.to_string()).collect();
        let with = Scenario::from_toml(text, &cut).unwrap();
        assert!(with.emulation.is_some());
        let mut without = with.clone();
        without.emulation = None;
        let summary = |sc: &Scenario| {
            let r = crate::run_with(sc, &crate::RunOptions::default()).expect("runs");
            let mut s = r.summary.clone();
            for k in ["wall_time_s", "events_per_s"] {
                s[k] = serde_json::Value::Null;
            }
            s["scenario"]["hash"] = serde_json::Value::Null; // config.toml differs by the table itself
            (s, r.fct_csv())
        };
        let (a, b) = (summary(&with), summary(&without));
        assert!(a.0["events"].as_u64().unwrap() > 0);
        assert_eq!(a, b);
    }
}

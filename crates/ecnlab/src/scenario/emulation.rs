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

/// Most hosts an emulated star may have: every host's TCP, applications and receive processing share the
/// cores the switch leaves (one core on the 2-core machines this was measured on), and each connection has a
/// thread of its own; 16 hosts of long-lived flows at 100 Mb/s is what that leaves room for.
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
    /// A switch port, `s0->h<i>` (the link between the switch and host i).
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

/// The index i of a switch port `s0->h<i>` of a star of `hosts` hosts.
pub fn star_port_host(name: &str, hosts: u32) -> Option<u32> {
    let i: u32 = name.strip_prefix("s0->h")?.parse().ok()?;
    (i < hosts && name == format!("s0->h{i}")).then_some(i)
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
        for (i, p) in em.pcap.iter().enumerate() {
            if star_port_host(&p.port, self.host_count()).is_none() {
                return refuse(
                    format!("emulation.pcap.{i}.port"),
                    format!("`{}` is not a port of the switch: s0->h0 .. s0->h{}", p.port, self.host_count() - 1),
                );
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
            Topology::Dumbbell { .. } => {
                return refuse(
                    "topology.kind",
                    "a dumbbell is not emulated yet: the software switch forwards between host links of one \
                     switch, it has no link between two switches; use a star",
                )
            }
            _ => {
                return refuse(
                    "topology.kind",
                    "only a star of a handful of hosts is emulated (one software switch, one namespace per host)",
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

    #[test]
    fn a_dumbbell_is_refused_with_the_reason() {
        let text = "duration = \"1s\"\n[topology]\nkind = \"dumbbell\"\nleft = 2\nright = 1\nrate = \"100Mbps\"\n\
                    delay = \"10us\"\nbottleneck_rate = \"100Mbps\"\nbottleneck_delay = \"10us\"\n";
        let e = Scenario::from_toml(text, &[]).unwrap().check_emulatable().unwrap_err().to_string();
        assert!(e.contains("topology.kind") && e.contains("dumbbell"), "{e}");
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

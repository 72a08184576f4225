//! What the switch is built from: its links and their egress ports, built as the simulator builds them.

use crate::error::{Error, Result};
use crate::netns::Testbed;
use ecnlab::engine::{rng::key, Rng};
use ecnlab::port::{Port, SharedBuffer};
use ecnlab::scenario::{EmulatedPorts, PortSettings, Topology};
use ecnlab::units::{Bytes, Rate, Time};
use ecnlab::Scenario;
use std::path::PathBuf;

/// One link between a host and the switch.
pub struct Link {
    /// The switch's veth for this link (in the switch's namespace).
    pub ifname: String,
    /// The MAC of the host at its far end: frames addressed to it leave by this link.
    pub host_mac: [u8; 6],
    /// Host → switch: the host's NIC (`Port::nic`) at the link's rate, and its propagation delay.
    pub up_rate: Rate,
    pub up_delay: Time,
    /// Switch → host: ecnlab's egress port (its rate and propagation delay are its configuration's).
    pub port: Port,
    /// The switch the host hangs on (0 in a star; a dumbbell's left hosts 0, its right hosts 1).
    pub switch: usize,
}

/// One direction of a link between two switches (a dumbbell's `s0->s1`): ecnlab's egress port at `from`,
/// whose departures reach `to` after the port's transmission and propagation delay, with no veth between:
/// both switches are the one forwarding thread.
pub struct Trunk {
    /// The port's name, `s0->s1`.
    pub name: String,
    pub from: usize,
    pub to: usize,
    pub port: Port,
}

/// Real-time priority with a duty cycle (`SwitchConfig::fifo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fifo {
    /// SCHED_FIFO priority, 1 to 99.
    pub priority: i32,
    /// How long the thread polls before it sleeps, and how long it sleeps.
    pub run: Time,
    pub rest: Time,
}

/// Which frames of a port a capture records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// As they arrive from the host (kernel receive timestamps).
    Ingress,
    /// As the switch sends them to the host (CE as written), stamped when sent.
    Egress,
}

/// A pcap file of one link's frames.
#[derive(Clone, Debug)]
pub struct Capture {
    pub link: usize,
    pub direction: Direction,
    pub path: PathBuf,
}

/// The switch: its links (one egress port each), the forwarding thread's placement, captures.
pub struct SwitchConfig {
    pub links: Vec<Link>,
    /// The links between switches, each direction its own port (none in a star).
    pub trunks: Vec<Trunk>,
    /// The switch's shared buffer pool, if its ports draw from one (`switch.pool`).
    pub shared: Option<SharedBuffer>,
    /// IP MTU of the links, bytes.
    pub mtu: u32,
    /// The core the forwarding thread is pinned to (`None`: not pinned).
    pub core: Option<usize>,
    /// The forwarding thread's nice value (`None`: the caller's). Measured on a loaded 2-core VM: at −20
    /// the thread starves its core's ksoftirqd, which then runs the softirqs its own sends raise only once
    /// per 4 ms tick (a 2 MB transfer took 2-3 s instead of 0.18 s); at −5 and −10 its pauses became whole
    /// 4 ms ticks; so the default leaves it.
    pub nice: Option<i32>,
    /// Run the thread in real-time priority (`SCHED_FIFO`) with a duty cycle, or `None`: an ordinary
    /// thread. On a machine whose other work runs at the same priority the fair scheduler takes the core
    /// away for milliseconds at a time (measured on a loaded 2-core VM: hundreds of 2-20 ms pauses per
    /// second, halving a 100 Mb/s link's goodput); in FIFO priority the thread is never preempted by them,
    /// and it gives the core back itself for `rest` after every `run`, in which its core's other tasks
    /// (the kernel's softirq thread among them) run. `rest / (run + rest)` must stay above the kernel's
    /// real-time throttling share (1 − sched_rt_runtime_us / sched_rt_period_us, 5 % by default), or the
    /// kernel itself stops the thread for the rest of each second.
    pub fifo: Option<Fifo>,
    /// Lock the process's memory (mlockall) so the forwarding thread never waits on a page fault.
    pub lock_memory: bool,
    /// Receive ring slots per link.
    pub ring_frames: usize,
    /// How far behind the wall clock the virtual clock runs: a frame stamped up to `lag` before the thread
    /// looks is still offered in its own order (the kernel copies a frame into the ring a few microseconds
    /// after stamping it). It delays nothing that leaves after a propagation delay longer than `lag`.
    pub lag: Time,
    /// The most a host's NIC may hold (bytes not yet on its link); a frame beyond it is dropped and counted
    /// (`uplink_overflow`). A real NIC pushes back on its host instead; a veth cannot.
    pub uplink_limit: Bytes,
    /// DSCP → class (the port's queue: classes beyond its last queue share the last one).
    pub class_of_dscp: [u8; 64],
    pub captures: Vec<Capture>,
    /// Bytes kept of each captured frame (the pcap snap length).
    pub capture_snaplen: u32,
    /// Sample every queue's backlog in virtual time (series/queues.csv), or `None`.
    pub sampling: Option<Sampling>,
}

/// Queue samples at `t0`, `t0 + step`, … for at most `rows` instants (the memory for them is taken when the
/// switch starts, so sampling allocates nothing while it forwards).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    /// The first instant (the monotonic clock, as the ports' time).
    pub t0: Time,
    pub step: Time,
    pub rows: usize,
}

/// Class c is DSCP c: the convention the endpoints follow (a socket of class c sets IP_TOS = c << 2).
pub fn identity_dscp() -> [u8; 64] {
    std::array::from_fn(|d| d as u8)
}

impl SwitchConfig {
    /// A switch with `links` and the defaults: pinned to the last core in FIFO priority (900 us run, 100 us rest), memory locked, 4096-slot rings,
    /// 5 us of lag, 4 MB per host NIC, class = DSCP, no captures.
    pub fn new(links: Vec<Link>, mtu: u32) -> SwitchConfig {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        SwitchConfig {
            links,
            trunks: Vec::new(),
            shared: None,
            mtu,
            core: Some(cores - 1),
            nice: None,
            fifo: Some(Fifo { priority: 10, run: Time::from_us(900), rest: Time::from_us(100) }),
            lock_memory: true,
            ring_frames: 4096,
            lag: Time::from_us(5),
            uplink_limit: Bytes(4_000_000),
            class_of_dscp: identity_dscp(),
            captures: Vec::new(),
            capture_snaplen: 65_535,
            sampling: None,
        }
    }

    /// The switches of a star or dumbbell scenario on `testbed`: host h's link is the scenario's h-th host
    /// link, its egress port (`s0->h<h>`, or `s1->h<h>` on a dumbbell's right side) and the ports between the
    /// switches (`s0->s1`, `s1->s0`) built from `[switch]` and `[[ports]]` exactly as the simulator builds them,
    /// each with the simulator's random stream.
    pub fn from_scenario(sc: &Scenario, testbed: &Testbed) -> Result<SwitchConfig> {
        sc.validate()?;
        if !matches!(sc.topology, Topology::Star { .. } | Topology::Dumbbell { .. }) {
            return Err(Error::config("topology.kind", "the emulated switch is a star or a dumbbell"));
        }
        if matches!(sc.topology, Topology::Dumbbell { .. }) && sc.switch.pool.is_some() {
            return Err(Error::config("switch.pool", "one shared pool per switch is not emulated in a dumbbell"));
        }
        let hosts = sc.topology.host_count() as usize;
        if hosts != testbed.hosts().len() {
            return Err(Error::config(
                "topology.hosts",
                format!("{hosts} hosts; the testbed has {}", testbed.hosts().len()),
            ));
        }
        if sc.switch.pfc.is_some() {
            return Err(Error::config("switch.pfc", "PFC is not emulated (veths carry no PAUSE frames)"));
        }
        let mtu = sc.mtu.0 as u32;
        let (_, specs) = sc.topology.links();
        let plan = EmulatedPorts::of(&sc.topology);
        let settings = |name: &str| sc.port_settings(true, sc.ports.iter().find(|o| o.port == name));
        let mut links = Vec::with_capacity(hosts);
        for (h, host) in testbed.hosts().iter().enumerate() {
            let spec = &specs[h];
            let (switch, name, index) = &plan.hosts[h];
            let port = build_port(&settings(name), spec.rate_ba, spec.delay_ba, sc.mtu, name, sc.seed, *index)?;
            #[rustfmt::skip]
            links.push(Link { ifname: host.switch_port.clone(), host_mac: host.mac, up_rate: spec.rate_ab,
                              up_delay: spec.delay_ab, port, switch: *switch as usize });
        }
        let mut trunks = Vec::with_capacity(plan.trunks.len());
        for t in &plan.trunks {
            let port = build_port(&settings(&t.name), t.rate, t.delay, sc.mtu, &t.name, sc.seed, t.index)?;
            trunks.push(Trunk { name: t.name.clone(), from: t.from as usize, to: t.to as usize, port });
        }
        let mut cfg = SwitchConfig::new(links, mtu);
        cfg.trunks = trunks;
        cfg.shared = sc.switch.pool.as_ref().map(|p| SharedBuffer::new(p.size.0, p.alpha.clone()));
        Ok(cfg)
    }
}

/// One egress port from its settings, built as the simulator builds one (`PortSettings::build_port`, the
/// random stream of the simulator's port `index`). Packets
/// finding it idle pass straight through, and it asks for a wake-up at each transmission's end (its owner
/// makes departures at those instants).
pub fn build_port(
    s: &PortSettings,
    rate: Rate,
    delay: Time,
    mtu: Bytes,
    name: &str,
    seed: u64,
    index: usize,
) -> Result<Port> {
    let mut port = s.build_port(rate, delay, mtu, name, Rng::stream(seed, key::PORT + index as u64), true)?;
    port.set_pass_idle(true);
    port.set_deferred_departures(false);
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::build_port;
    use ecnlab::packet::{Packet, PacketPool};
    use ecnlab::port::{Admit, FifoPool};
    use ecnlab::scenario::PortSettings;
    use ecnlab::units::{Bytes, Rate, Time};

    #[test]
    fn a_trunks_frame_reaches_the_far_switch_at_its_departure_end_plus_the_delay() {
        // s0->s1 at 100 Mb/s with 30 us of propagation: a 1500-byte frame takes 120 us to send.
        let s = PortSettings::default();
        let mut port = build_port(&s, Rate(100_000_000), Time::from_us(30), Bytes(1500), "s0->s1", 1, 6).unwrap();
        let (mut pool, mut fifos) = (PacketPool::default(), FifoPool::new());
        let mut frame = || pool.alloc(Packet { wire: 1500, ..Packet::default() });
        let (a, b) = (frame(), frame());
        let t0 = Time::from_ms(1);
        // Found idle: sent at once, at s1 when its last bit is: 1000 + 120 + 30 us.
        match port.offer(t0, a, 0, &mut pool, &mut fifos, None) {
            Admit::Sent(d) => assert_eq!(d.arrives, Time::from_us(1150)),
            other => panic!("{other:?}"),
        }
        // Behind it: waits until the first ends (1120 us), then 120 us more on the wire and 30 us of delay.
        let wake = match port.offer(t0, b, 0, &mut pool, &mut fifos, None) {
            Admit::Queued { wake: Some(w), .. } => w,
            other => panic!("{other:?}"),
        };
        assert_eq!(wake, Time::from_us(1120));
        port.wake(wake);
        let d = port.depart(wake, &mut pool, &mut fifos, None, &mut Vec::new()).expect("b departs");
        assert_eq!((d.id, d.arrives), (b, Time::from_us(1270)));
    }
}

//! The forwarding benchmark: a paced UDP blaster in h0 keeps h1's port backlogged with 1500-byte packets;
//! what h1 receives per second against the port's rate, and the port's departure gaps against the ideal.
//! Before the blaster starts, UDP echoes between the idle hosts measure the round trip the switch adds to
//! its links' model.

use crate::dataplane::{build_port, Link, LinkReport, Quantiles, Report, Switch, SwitchConfig};
use crate::error::{Error, Result};
use crate::netns::{Testbed, TestbedSpec};
use ecnlab::scenario::PortSettings;
use ecnlab::units::{Bytes, Rate, Time};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// IP packet size of the blaster's datagrams (1472 B of payload + UDP and IP headers).
pub const PACKET: u64 = 1500;

/// One benchmark run's figures.
#[derive(Debug)]
pub struct BenchReport {
    pub rate: Rate,
    /// Over the window, at h1: IP bytes per second (as the port counts them), packets per second, and the
    /// ratio to the port's rate.
    pub received_bps: f64,
    pub received_pps: f64,
    pub achieved: f64,
    /// h1's port over the window (departure gaps, lateness, counters).
    pub port: LinkReport,
    pub switch: Report,
    /// Idle round trips h0 → h1 → h0 of 64-byte UDP echoes, less the links' model of them (each way: the
    /// host's link and the switch's port, serialization and propagation): what the software switch and the
    /// two hosts' UDP stacks add, ns.
    pub added_rtt_ns: Quantiles,
    /// The model's round trip the added time is measured against.
    pub model_rtt: Time,
}

/// Echoes sent in the idle phase, one every 2 ms.
const ECHOES: usize = 200;
/// An echo's UDP payload: a 64-byte IP packet.
const ECHO_PAYLOAD: usize = 64 - 28;

impl BenchReport {
    /// The report as JSON: h1's port (`s0->h1`) delivering 1500-byte packets at the benchmark's rate.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "rate_gbps": self.rate.as_gbps(),
            "port": "s0->h1",
            "packet_bytes": PACKET,
            "received_gbps": self.received_bps / 1e9,
            "received_pps": self.received_pps,
            "achieved": self.achieved,
            "utilization": self.port.utilization,
            "added_rtt": self.added_rtt_ns.json_us(),
            "model_rtt_us": self.model_rtt.as_secs_f64() * 1e6,
            "late_offers": self.switch.late_offers,
            "stalls": self.switch.stalls_ns.json_us(),
        });
        v["data_plane"] = self.port.data_plane_json();
        v
    }
}

/// Runs the benchmark at `rate` for `window` (after 300 ms of warm-up).
pub fn forwarding(rate: Rate, window: Duration) -> Result<BenchReport> {
    let tb = Testbed::new(&TestbedSpec::default())?;
    // h0's uplink is 10x faster than the port, so that the port, not h0's NIC model, sets the pace.
    let settings = PortSettings { buffer: Bytes(1_000_000), ..PortSettings::default() };
    let link = |i: usize, up: Rate| -> Result<Link> {
        let h = tb.host(i);
        let port = build_port(&settings, rate, Time::from_us(10), Bytes(1500), &h.switch_port, 1, i)?;
        Ok(Link { ifname: h.switch_port.clone(), host_mac: h.mac, up_rate: up, up_delay: Time::from_us(10), port })
    };
    let cfg = SwitchConfig::new(vec![link(0, Rate(rate.0 * 10))?, link(1, rate)?], 1500);
    let sw = Switch::start(tb.switch(), cfg)?;
    // Out: h0's link (10x the rate), then h1's port; back: h1's link, then h0's port (both at the rate); 10 us
    // of propagation on each of the four.
    let echo = Bytes(64);
    let model_rtt = Rate(rate.0 * 10).tx_time(echo) + Time(rate.tx_time(echo).0 * 3) + Time::from_us(40);
    let rtts = echo_rtts(&tb)?;
    let mut added = ecnlab::observe::LogHist::default();
    for r in rtts {
        added.add(r.saturating_sub(model_rtt.0 / 1000), 1);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let rx = tb.host(1).ns.run(|| UdpSocket::bind("0.0.0.0:9"))?.map_err(|e| Error::os("bind in h1", e))?;
    force_rcvbuf(&rx, 16 << 20);
    rx.set_read_timeout(Some(Duration::from_millis(50))).map_err(|e| Error::os("h1's socket", e))?;
    let (r, s) = (received.clone(), stop.clone());
    let receiver = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !s.load(Ordering::Relaxed) {
            if rx.recv(&mut buf).is_ok() {
                r.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let dst = tb.host(1).addr;
    let s = stop.clone();
    let blaster = tb.host(0).ns.spawn("blaster", move || -> std::io::Result<()> {
        let tx = UdpSocket::bind("0.0.0.0:0")?;
        tx.connect((dst, 9))?;
        // 10 % above the port's rate: it stays backlogged, and its buffer's tail drops take the excess.
        let pps = rate.0 as f64 * 1.1 / (PACKET * 8) as f64;
        // UDP generic segmentation (UDP_SEGMENT): one send() hands the stack 16 datagrams, cut in software
        // before the veth, where one send() per datagram left a loaded core short of 1 Gb/s.
        const BATCH: usize = 16;
        let seg = (PACKET - 28) as i32;
        // SAFETY: passes an int option (SOL_UDP = 17, UDP_SEGMENT = 103).
        if unsafe { libc::setsockopt(tx.as_raw_fd(), 17, 103, (&seg as *const i32).cast(), 4) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let payload = [0x42u8; (PACKET - 28) as usize * BATCH];
        let (t0, mut sent) = (Instant::now(), 0u64);
        while !s.load(Ordering::Relaxed) {
            // At most a batch between looks at `stop`: a blaster short of its pace never catches up.
            for _ in 0..8 {
                if sent as f64 >= t0.elapsed().as_secs_f64() * pps {
                    break;
                }
                let _ = tx.send(&payload);
                sent += BATCH as u64;
            }
            std::hint::spin_loop();
        }
        Ok(())
    })?;
    std::thread::sleep(Duration::from_millis(300));
    sw.open_window();
    let n0 = received.load(Ordering::Relaxed);
    let t0 = Instant::now();
    std::thread::sleep(window);
    let report = sw.report()?;
    let (n1, secs) = (received.load(Ordering::Relaxed), t0.elapsed().as_secs_f64());
    stop.store(true, Ordering::Relaxed);
    blaster.join().map_err(|_| Error::Switch("the blaster panicked".into()))?.map_err(|e| Error::os("blaster", e))?;
    let _ = receiver.join();
    sw.stop()?;
    let pps = (n1 - n0) as f64 / secs;
    let bps = pps * (PACKET * 8) as f64;
    let port = report.links[1].clone();
    let (achieved, added_rtt_ns) = (bps / rate.0 as f64, Quantiles::of(&added));
    Ok(BenchReport {
        rate,
        received_bps: bps,
        received_pps: pps,
        achieved,
        port,
        switch: report,
        added_rtt_ns,
        model_rtt,
    })
}

/// Round trips of UDP echoes h0 → h1 → h0 on the idle testbed, ns.
fn echo_rtts(tb: &Testbed) -> Result<Vec<u64>> {
    let server = tb.host(1).ns.run(|| UdpSocket::bind("0.0.0.0:7"))?.map_err(|e| Error::os("bind in h1", e))?;
    server.set_read_timeout(Some(Duration::from_millis(50))).map_err(|e| Error::os("h1's socket", e))?;
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        while !s.load(Ordering::Relaxed) {
            if let Ok((n, from)) = server.recv_from(&mut buf) {
                let _ = server.send_to(&buf[..n], from);
            }
        }
    });
    let dst = tb.host(1).addr;
    let rtts = tb.host(0).ns.run(move || -> std::io::Result<Vec<u64>> {
        let c = UdpSocket::bind("0.0.0.0:0")?;
        c.connect((dst, 7))?;
        c.set_read_timeout(Some(Duration::from_millis(100)))?;
        let (msg, mut buf) = ([0x17u8; ECHO_PAYLOAD], [0u8; 256]);
        let mut out = Vec::with_capacity(ECHOES);
        for _ in 0..ECHOES {
            let t = Instant::now();
            c.send(&msg)?;
            // A lost echo (none expected on an idle path) is left out rather than counted as a round trip.
            if c.recv(&mut buf).is_ok() {
                out.push(t.elapsed().as_nanos() as u64);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(out)
    })?;
    stop.store(true, Ordering::Relaxed);
    let _ = echo.join();
    rtts.map_err(|e| Error::os("UDP echoes from h0", e))
}

/// A receive buffer beyond net.core.rmem_max (SO_RCVBUFFORCE, as root), so h1 drops nothing itself.
fn force_rcvbuf(s: &UdpSocket, bytes: i32) {
    // SAFETY: passes an int option; failure leaves the default buffer.
    unsafe {
        libc::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, (&bytes as *const i32).cast(), 4);
    }
}

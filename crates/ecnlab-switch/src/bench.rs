//! The forwarding benchmark: a paced UDP blaster in h0 keeps h1's port backlogged with 1500-byte packets;
//! what h1 receives per second against the port's rate, and the port's departure gaps against the ideal.

use crate::dataplane::{build_port, Link, LinkReport, Report, Switch, SwitchConfig};
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
    Ok(BenchReport { rate, received_bps: bps, received_pps: pps, achieved: bps / rate.0 as f64, port, switch: report })
}

/// A receive buffer beyond net.core.rmem_max (SO_RCVBUFFORCE, as root), so h1 drops nothing itself.
fn force_rcvbuf(s: &UdpSocket, bytes: i32) {
    // SAFETY: passes an int option; failure leaves the default buffer.
    unsafe {
        libc::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, (&bytes as *const i32).cast(), 4);
    }
}

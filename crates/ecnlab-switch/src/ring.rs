//! One switch port's packet socket: a TPACKET_V2 receive ring with kernel timestamps, and send() to transmit.
//!
//! TPACKET_V2, not V3: V3 hands frames over in blocks retired by a timeout, which adds about a millisecond
//! of latency at low rates; V2 hands each frame over as soon as the kernel wrote it. The socket sees only
//! frames arriving on its veth (`PACKET_IGNORE_OUTGOING`: not the switch's own transmissions), and sends
//! straight to the driver (`PACKET_QDISC_BYPASS`: the egress queue is ecnlab's port, not a qdisc).
//! `SO_TIMESTAMPNS` turns on the kernel's receive timestamps at the moment the veth delivers the frame
//! (netif_rx), before the softirq that copies it into the ring, so a late softirq does not skew them.
//! Transmission uses one send() per frame: at 1 Gb/s that is 83 000 calls a second, well within a core
//! (a TX ring saves the copies but wants a batching the per-packet transmission clock does not have).

use crate::error::{Error, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

/// A frame in the ring, valid until `Ring::release`.
pub struct RxFrame<'a> {
    /// The captured bytes (the whole frame unless `truncated`).
    pub data: &'a [u8],
    /// The frame's length on the wire.
    pub len: u32,
    /// Kernel receive timestamp, CLOCK_REALTIME nanoseconds.
    pub stamp_ns: u64,
    /// The sender left its transport checksum to "hardware" (`TP_STATUS_CSUMNOTREADY`).
    pub csum_not_ready: bool,
    /// The frame was longer than a ring slot (`len > data.len()`).
    pub truncated: bool,
}

/// A packet socket bound to one interface with its mapped receive ring.
pub struct Ring {
    fd: OwnedFd,
    map: *mut u8,
    map_len: usize,
    frame_size: usize,
    frames: usize,
    head: usize,
    /// Frames the kernel delivered and dropped (ring full), accumulated over `PACKET_STATISTICS` reads
    /// (each read resets the kernel's counters).
    packets: u64,
    drops: u64,
}

// SAFETY: the mapping belongs to the ring alone; it is used from one thread at a time.
unsafe impl Send for Ring {}

fn setsockopt<T>(fd: &OwnedFd, level: i32, name: i32, value: &T, what: &str) -> Result<()> {
    // SAFETY: passes a pointer to a live value and its size.
    let r = unsafe {
        libc::setsockopt(fd.as_raw_fd(), level, name, (value as *const T).cast(), std::mem::size_of::<T>() as u32)
    };
    if r != 0 {
        return Err(Error::last_os(format!("setsockopt {what}")));
    }
    Ok(())
}

/// The slot size for frames of IP MTU `mtu`: the frame, the ring's header and its alignment (a power of two,
/// so that slots never straddle a block).
pub fn slot_size(mtu: u32) -> usize {
    (mtu as usize + 14 + 128).next_power_of_two()
}

impl Ring {
    /// Opens the ring on `ifname` (which must be in the calling thread's namespace) with `frames` slots for
    /// frames of IP MTU `mtu`.
    pub fn open(ifname: &str, frames: usize, mtu: u32) -> Result<Ring> {
        let what = |s: &str| format!("{ifname}: {s}");
        let cname = std::ffi::CString::new(ifname).map_err(|_| Error::config("port", "interface name holds NUL"))?;
        // SAFETY: a NUL-terminated name.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(Error::last_os(what("no such interface in the switch namespace")));
        }
        // Protocol 0: nothing is received until bind names the interface.
        // SAFETY: plain socket creation.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(Error::last_os(what("AF_PACKET socket (needs CAP_NET_RAW)")));
        }
        // SAFETY: `raw` is a fresh descriptor owned from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let v2 = libc::tpacket_versions::TPACKET_V2 as i32;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_VERSION, &v2, &what("PACKET_VERSION"))?;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &1i32, &what("PACKET_IGNORE_OUTGOING"))?;
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, &1i32, &what("PACKET_QDISC_BYPASS"))?;
        setsockopt(&fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1i32, &what("SO_TIMESTAMPNS"))?;
        // A send buffer for bursts: send() never blocks, and EAGAIN leaves the frame for the next round.
        setsockopt(&fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &(4i32 << 20), &what("SO_SNDBUF"))?;
        let frame_size = slot_size(mtu);
        let block_size = frame_size.max(4096);
        let frames = frames.div_ceil(block_size / frame_size) * (block_size / frame_size);
        let req = libc::tpacket_req {
            tp_block_size: block_size as u32,
            tp_block_nr: (frames * frame_size / block_size) as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: frames as u32,
        };
        setsockopt(&fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req, &what("PACKET_RX_RING"))?;
        let map_len = frames * frame_size;
        // SAFETY: maps the ring the kernel just allocated for this socket.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(Error::last_os(what("mmap of the receive ring")));
        }
        let ring = Ring { fd, map: map.cast(), map_len, frame_size, frames, head: 0, packets: 0, drops: 0 };
        // SAFETY: sockaddr_ll is plain data; zero is a valid start.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: binds to a valid address of the right size.
        let r = unsafe {
            libc::bind(
                ring.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r != 0 {
            return Err(Error::last_os(what("bind")));
        }
        Ok(ring)
    }

    fn header(&self, i: usize) -> *mut libc::tpacket2_hdr {
        // SAFETY: i < frames, so the slot lies inside the mapping.
        unsafe { self.map.add(i * self.frame_size).cast() }
    }

    /// The next frame, if the kernel has handed one over.
    #[inline]
    pub fn peek(&self) -> Option<RxFrame<'_>> {
        let h = self.header(self.head);
        // SAFETY: the header lies in the mapping; the status word is written by the kernel, so it is read
        // volatile, and the acquire fence orders the reads of the frame after it.
        unsafe {
            let status = std::ptr::read_volatile(&(*h).tp_status);
            if status & libc::TP_STATUS_USER == 0 {
                return None;
            }
            fence(Ordering::Acquire);
            let hdr = &*h;
            let data = std::slice::from_raw_parts((h as *const u8).add(hdr.tp_mac as usize), hdr.tp_snaplen as usize);
            Some(RxFrame {
                data,
                len: hdr.tp_len,
                stamp_ns: hdr.tp_sec as u64 * 1_000_000_000 + hdr.tp_nsec as u64,
                csum_not_ready: status & libc::TP_STATUS_CSUMNOTREADY != 0,
                truncated: hdr.tp_snaplen < hdr.tp_len,
            })
        }
    }

    /// Hands the frame `peek` returned back to the kernel.
    #[inline]
    pub fn release(&mut self) {
        let h = self.header(self.head);
        fence(Ordering::Release);
        // SAFETY: the slot's status word, written after the frame's reads (the release fence).
        unsafe { std::ptr::write_volatile(&mut (*h).tp_status, libc::TP_STATUS_KERNEL) };
        self.head = if self.head + 1 == self.frames { 0 } else { self.head + 1 };
    }

    /// Sends one frame on the port. `Ok(false)`: the socket's buffer is full (try again later).
    #[inline]
    pub fn send(&self, frame: &[u8]) -> Result<bool> {
        // SAFETY: sends `frame`'s bytes on the bound socket without blocking.
        let r = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), libc::MSG_DONTWAIT) };
        if r >= 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) => Ok(false),
            _ => Err(Error::Io { what: "send on a switch port".into(), source: e }),
        }
    }

    /// Frames the kernel offered to the ring and frames it dropped because the ring was full, since opening.
    pub fn statistics(&mut self) -> Result<(u64, u64)> {
        // SAFETY: tpacket_stats is plain data.
        let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as u32;
        // SAFETY: the kernel fills at most `len` bytes of `st`.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(Error::last_os("PACKET_STATISTICS"));
        }
        // tp_packets counts every frame offered, dropped ones included.
        self.packets += st.tp_packets as u64;
        self.drops += st.tp_drops as u64;
        Ok((self.packets, self.drops))
    }

    /// The ring's number of slots.
    pub fn slots(&self) -> usize {
        self.frames
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `open`, which nothing borrows any more (`&mut self`).
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}

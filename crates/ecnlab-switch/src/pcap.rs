//! A libpcap-format capture writer with nanosecond timestamps (magic 0xa1b23c4d), Ethernet link type.
//!
//! The format is the classic one every reader opens (Wireshark, tcpdump -r, scapy): a 24-byte file header,
//! then per frame a 16-byte record header and the captured bytes. Records go through a large buffer so the
//! forwarding thread writes to the file only every few hundred frames.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// The nanosecond-resolution variant's magic number (written in the writer's byte order, as readers expect).
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// Writes frames to one capture file.
pub struct PcapWriter<W: Write = BufWriter<File>> {
    out: W,
    snaplen: u32,
    frames: u64,
}

impl PcapWriter {
    /// Creates (or truncates) the file at `path`, keeping at most `snaplen` bytes of each frame.
    pub fn create(path: &Path, snaplen: u32) -> io::Result<PcapWriter> {
        let file = File::create(path)?;
        PcapWriter::new(BufWriter::with_capacity(1 << 20, file), snaplen)
    }
}

impl<W: Write> PcapWriter<W> {
    /// A writer over any byte sink; writes the file header at once.
    pub fn new(mut out: W, snaplen: u32) -> io::Result<PcapWriter<W>> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NS.to_ne_bytes());
        h[4..6].copy_from_slice(&2u16.to_ne_bytes());
        h[6..8].copy_from_slice(&4u16.to_ne_bytes());
        // thiszone and sigfigs stay 0 (timestamps are UTC); then the snapshot length and the link type.
        h[16..20].copy_from_slice(&snaplen.to_ne_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_ne_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, snaplen, frames: 0 })
    }

    /// Appends one frame seen at `unix_ns` nanoseconds since the Unix epoch.
    pub fn write(&mut self, unix_ns: u64, frame: &[u8]) -> io::Result<()> {
        let caplen = (frame.len() as u32).min(self.snaplen);
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&((unix_ns / 1_000_000_000) as u32).to_ne_bytes());
        r[4..8].copy_from_slice(&((unix_ns % 1_000_000_000) as u32).to_ne_bytes());
        r[8..12].copy_from_slice(&caplen.to_ne_bytes());
        r[12..16].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        self.out.write_all(&r)?;
        self.out.write_all(&frame[..caplen as usize])?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Flushes what is buffered and returns the sink.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

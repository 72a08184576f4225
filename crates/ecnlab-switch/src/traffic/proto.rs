//! The request protocol between ecnlab's clients and servers: one fixed 32-byte header per request.
//!
//! ```text
//!  0  magic "ECNL" (u32 LE)   4 kind (u8)   5 dscp (u8)   6 reserved (2)   8 flow id (u32 LE)
//! 12  reserved (4)           16 size (u64 LE)             24 start_ns (u64 LE): the client's clock at start
//! ```
//! - `Sink`: the client sends `size` bytes (0: until it shuts down its side); the server answers with a
//!   [`SinkReport`] when it has read them all (or at end of stream).
//! - `Fetch`: the server sends `size` bytes back; the client may send further `Fetch` headers on the same
//!   connection (incast rounds over kept connections).
//! - `Echo`: the client sends `size` bytes, the server sends them back (an RTT probe); repeated per probe.

/// "ECNL", little endian.
pub const MAGIC: u32 = 0x4c4e_4345;
/// Header length, bytes.
pub const HEADER: usize = 32;
/// Sink report length, bytes.
pub const REPORT: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Sink = 1,
    Fetch = 2,
    Echo = 3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub kind: Kind,
    /// DSCP (0..=63) the server puts on its side of the connection.
    pub dscp: u8,
    pub flow: u32,
    /// Bytes (see the module doc for each kind).
    pub size: u64,
    /// The client's `now_ns()` when it started the flow (before connecting).
    pub start_ns: u64,
}

impl Request {
    pub fn encode(&self) -> [u8; HEADER] {
        let mut b = [0u8; HEADER];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4] = self.kind as u8;
        b[5] = self.dscp;
        b[8..12].copy_from_slice(&self.flow.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..32].copy_from_slice(&self.start_ns.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8; HEADER]) -> Result<Request, String> {
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        if u32_at(0) != MAGIC {
            return Err(format!("bad magic {:#010x} (not an ecnlab client)", u32_at(0)));
        }
        let kind = match b[4] {
            1 => Kind::Sink,
            2 => Kind::Fetch,
            3 => Kind::Echo,
            k => return Err(format!("unknown request kind {k} (allowed: 1 sink, 2 fetch, 3 echo)")),
        };
        if b[5] > 63 {
            return Err(format!("dscp {} out of range 0..=63", b[5]));
        }
        Ok(Request { kind, dscp: b[5], flow: u32_at(8), size: u64_at(16), start_ns: u64_at(24) })
    }
}

/// What a sink tells its client when the flow is complete (its receiver-side view).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SinkReport {
    /// `now_ns()` when the application read the first payload byte.
    pub first_byte_ns: u64,
    /// `now_ns()` when the application read the last payload byte.
    pub last_byte_ns: u64,
    /// Payload bytes read.
    pub bytes: u64,
}

impl SinkReport {
    pub fn encode(&self) -> [u8; REPORT] {
        let mut b = [0u8; REPORT];
        b[0..8].copy_from_slice(&self.first_byte_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.last_byte_ns.to_le_bytes());
        b[16..24].copy_from_slice(&self.bytes.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8; REPORT]) -> SinkReport {
        let at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        SinkReport { first_byte_ns: at(0), last_byte_ns: at(8), bytes: at(16) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_survives_the_wire_and_garbage_is_named() {
        let r = Request { kind: Kind::Fetch, dscp: 46, flow: 7, size: 1 << 40, start_ns: 123_456_789 };
        assert_eq!(Request::decode(&r.encode()), Ok(r));
        let mut bad = r.encode();
        bad[0] = b'X';
        assert!(Request::decode(&bad).unwrap_err().contains("magic"));
        let mut bad = r.encode();
        bad[4] = 9;
        assert!(Request::decode(&bad).unwrap_err().contains("kind 9"));
        let mut bad = r.encode();
        bad[5] = 64;
        assert!(Request::decode(&bad).unwrap_err().contains("dscp 64"));
        let s = SinkReport { first_byte_ns: 1, last_byte_ns: 2, bytes: 3 };
        assert_eq!(SinkReport::decode(&s.encode()), s);
    }
}

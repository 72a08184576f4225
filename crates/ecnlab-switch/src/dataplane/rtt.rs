//! TCP round-trip times measured at the switch, in virtual time (summary.json `rtt`).
//!
//! The kernel keeps its per-ACK RTT samples to itself (`TCP_INFO` gives only the smoothed `srtt`), so the switch
//! takes them from what it forwards: a data segment is remembered with the instant it left its sender's stack
//! (its kernel receive timestamp, where the host's NIC model starts), and an ACK that advances the connection's
//! cumulative acknowledgment gives one sample when its egress port delivers it to the data's sender: that
//! instant (departure + transmission + propagation delay) − the send instant of the **oldest** segment it newly
//! acknowledges. This is the simulator's sample (`now` − the echoed timestamp of the first segment since the
//! receiver's last ACK, taken on ACKs that advance the cumulative ACK) seen from the sender's NIC: it holds
//! both links, the switch's queues and the receiver's stack with its delayed ACK, but not the sender's own
//! processing of the ACK. Karn's rule: a sample whose oldest segment was sent more than once is not taken (the
//! simulator's timestamps tell copies apart; the switch does not read TCP options).

use ecnlab::observe::LogHist;
use ecnlab::units::Time;
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Segments remembered per direction of a connection at most (a window of 1500-byte segments up to 24 MB);
/// older ones are forgotten, which only costs their samples.
const MAX_OUTSTANDING: usize = 16_384;

/// `a` is after `b` in sequence space (RFC 793's comparison modulo 2^32).
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[derive(Clone, Copy, Debug)]
struct Segment {
    start: u32,
    end: u32,
    sent: Time,
    resent: bool,
}

#[derive(Default)]
struct Direction {
    class: u8,
    /// Not yet acknowledged, in sequence order.
    outstanding: VecDeque<Segment>,
    fin: bool,
}

/// Per-ACK RTT samples per class (the class of the data segments), over the window.
#[derive(Default)]
pub struct RttMeter {
    directions: HashMap<[u8; 12], Direction>,
    per_class: BTreeMap<u8, LogHist>,
    all: LogHist,
}

/// The samples of a window: per class and all together, in picoseconds (the simulator's histogram unit).
#[derive(Clone, Debug, Default)]
pub struct RttSamples {
    pub per_class: BTreeMap<u8, LogHist>,
    pub all: LogHist,
}

impl RttMeter {
    /// A segment of `seq_len` > 0 sequence numbers from `seq` on the direction `key`, of `class`, which left
    /// its sender at `sent`. A segment that covers sequence numbers already seen is a retransmission: it and
    /// what it overlaps give no sample.
    pub fn sent(&mut self, key: [u8; 12], seq: u32, seq_len: u32, fin: bool, class: u8, sent: Time) {
        if seq_len == 0 {
            return;
        }
        let d = self.directions.entry(key).or_default();
        d.class = class;
        d.fin |= fin;
        let end = seq.wrapping_add(seq_len);
        let mut start = seq;
        let mut resent = false;
        if let Some(last_end) = d.outstanding.back().map(|s| s.end) {
            if after(last_end, seq) {
                for s in d.outstanding.iter_mut().filter(|s| after(s.end, seq) && after(end, s.start)) {
                    s.resent = true;
                }
                if !after(end, last_end) {
                    return;
                }
                // New data beyond what was seen, sent together with a copy of old data.
                (start, resent) = (last_end, true);
            }
        }
        if d.outstanding.len() == MAX_OUTSTANDING {
            d.outstanding.pop_front();
        }
        d.outstanding.push_back(Segment { start, end, sent, resent });
    }

    /// An ACK of the connection whose data travels on `data_key`, acknowledging everything before `ack`,
    /// reaching the data's sender at `at`: one sample if it newly acknowledges a segment sent once.
    pub fn acked(&mut self, data_key: &[u8; 12], ack: u32, at: Time) {
        let Some(d) = self.directions.get_mut(data_key) else { return };
        let mut oldest = None;
        while let Some(&s) = d.outstanding.front() {
            if after(s.end, ack) {
                break;
            }
            oldest.get_or_insert(s);
            d.outstanding.pop_front();
        }
        if let Some(s) = oldest.filter(|s| !s.resent && at >= s.sent) {
            let r = (at - s.sent).0;
            self.per_class.entry(d.class).or_default().add(r, 1);
            self.all.add(r, 1);
        }
        if d.fin && d.outstanding.is_empty() {
            self.directions.remove(data_key);
        }
    }

    /// Starts the window: samples so far are forgotten (segments in flight are kept).
    pub fn clear(&mut self) {
        self.per_class.clear();
        self.all.clear();
    }

    pub fn samples(&self) -> RttSamples {
        RttSamples { per_class: self.per_class.clone(), all: self.all.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K: [u8; 12] = [10, 0, 0, 3, 10, 0, 0, 1, 0x9c, 0x40, 0x13, 0x88];

    fn us(v: u64) -> Time {
        Time::from_ns(v * 1000)
    }

    fn samples_us(m: &RttMeter, class: u8) -> (u64, f64, u64) {
        let h = &m.per_class[&class];
        (h.samples(), h.mean().unwrap() / 1e6, h.max() / 1_000_000)
    }

    #[test]
    fn a_delayed_ack_samples_its_oldest_segment() {
        let mut m = RttMeter::default();
        // Two 1448-byte segments leave at 0 and 120 us; the receiver ACKs both at once, and the ACK reaches
        // the sender at 2 700 us: one sample, 2 700 − 0 (the oldest), as the simulator's echoed timestamp.
        m.sent(K, 1000, 1448, false, 1, us(0));
        m.sent(K, 2448, 1448, false, 1, us(120));
        m.acked(&K, 3896, us(2700));
        assert_eq!(samples_us(&m, 1), (1, 2700.0, 2700));
        // A duplicate ACK advances nothing: no sample.
        m.acked(&K, 3896, us(2800));
        assert_eq!(m.all.samples(), 1);
        // The next pair: 3 000 and 3 120 us, acknowledged at 5 620 us: 2 620.
        m.sent(K, 3896, 1448, false, 1, us(3000));
        m.sent(K, 5344, 1448, false, 1, us(3120));
        m.acked(&K, 6792, us(5620));
        assert_eq!(samples_us(&m, 1), (2, 2660.0, 2700));
        assert_eq!(m.all.samples(), 2);
    }

    #[test]
    fn a_partial_ack_samples_once_and_the_rest_later() {
        let mut m = RttMeter::default();
        for i in 0..4u32 {
            m.sent(K, i * 100, 100, false, 0, us(10 * i as u64));
        }
        // Acknowledges segments 0 and 1 (sent at 0 and 10): the sample is 500 − 0.
        m.acked(&K, 200, us(500));
        // An ACK in the middle of segment 2 acknowledges no whole segment: nothing.
        m.acked(&K, 250, us(505));
        // Segments 2 and 3 (sent at 20 and 30): 540 − 20.
        m.acked(&K, 400, us(540));
        let h = &m.per_class[&0];
        assert_eq!((h.samples(), h.mean().unwrap() / 1e6), (2, (500.0 + 520.0) / 2.0));
    }

    #[test]
    fn retransmitted_segments_give_no_sample_karn() {
        let mut m = RttMeter::default();
        m.sent(K, 0, 100, false, 2, us(0));
        m.sent(K, 100, 100, false, 2, us(10));
        m.sent(K, 200, 100, false, 2, us(20));
        // Segment 1 is lost and sent again at 900 us.
        m.sent(K, 100, 100, false, 2, us(900));
        // Segment 0's ACK: a sample (300 − 0).
        m.acked(&K, 100, us(300));
        // The ACK after the retransmission covers 1 (sent twice) and 2: its oldest is ambiguous, no sample.
        m.acked(&K, 300, us(1500));
        let h = &m.per_class[&2];
        assert_eq!((h.samples(), h.max() / 1_000_000), (1, 300));
        // A copy reaching past what was seen: its new part is ambiguous too.
        m.sent(K, 300, 100, false, 2, us(1600));
        m.sent(K, 300, 200, false, 2, us(1700));
        m.acked(&K, 500, us(2000));
        assert_eq!(m.per_class[&2].samples(), 1);
    }

    #[test]
    fn sequence_numbers_wrap_classes_are_apart_and_closed_directions_are_forgotten() {
        let mut m = RttMeter::default();
        let other = crate::frame::TcpSegment::reverse(&K);
        let start = u32::MAX - 50;
        m.sent(K, start, 100, false, 1, us(0)); // ends at 49 after the wrap
        m.sent(other, 7, 10, false, 0, us(5));
        m.acked(&K, 49, us(1000));
        m.acked(&other, 17, us(45));
        assert_eq!(samples_us(&m, 1), (1, 1000.0, 1000));
        assert_eq!(samples_us(&m, 0), (1, 40.0, 40));
        assert_eq!(m.all.samples(), 2);
        // A FIN (one sequence number) acknowledged: the direction is forgotten.
        m.sent(K, 49, 1, true, 1, us(2000));
        m.acked(&K, 50, us(3000));
        assert!(!m.directions.contains_key(&K));
        // An ACK of a direction never seen, or the window restarted: nothing kept.
        m.acked(&[0; 12], 1, us(4000));
        m.clear();
        assert_eq!(m.samples().all.samples(), 0);
        assert!(m.samples().per_class.is_empty());
    }
}

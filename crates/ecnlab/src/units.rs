//! Units that carry their meaning: `Time` (picoseconds), `Bytes`, `Rate` (bits per second), and their parsing.
//!
//! Units as DESIGN pins them: KB = 1000 B, MB = 10^6 B, KiB = 1024 B, Gbps = 10^9 b/s. Decimal inputs are parsed
//! exactly in integer arithmetic (`85.2us` is 85 200 000 ps), so configs never pick up float rounding.

use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant or a span of simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A number of bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

/// A link or application rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

pub const PS_PER_S: u64 = 1_000_000_000_000;

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);
    pub const fn from_ps(ps: u64) -> Time {
        Time(ps)
    }
    pub const fn from_ns(ns: u64) -> Time {
        Time(ns * 1_000)
    }
    pub const fn from_us(us: u64) -> Time {
        Time(us * 1_000_000)
    }
    pub const fn from_ms(ms: u64) -> Time {
        Time(ms * 1_000_000_000)
    }
    pub fn from_secs_f64(s: f64) -> Time {
        Time((s * PS_PER_S as f64).round() as u64)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn saturating_sub(self, o: Time) -> Time {
        Time(self.0.saturating_sub(o.0))
    }
    /// `self · num / den`, rounded down, without overflow.
    pub fn mul_ratio(self, num: u64, den: u64) -> Time {
        Time((self.0 as u128 * num as u128 / den as u128) as u64)
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, o: Time) -> Time {
        Time(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, o: Time) {
        self.0 = self.0.saturating_add(o.0)
    }
}
impl Sub for Time {
    type Output = Time;
    fn sub(self, o: Time) -> Time {
        debug_assert!(self.0 >= o.0, "negative time span");
        Time(self.0 - o.0)
    }
}

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}

impl Rate {
    pub fn gbps(g: u64) -> Rate {
        Rate(g * 1_000_000_000)
    }
    pub fn as_gbps(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Serialization time of `bytes` at this rate, rounded up to the next picosecond.
    pub fn tx_time(self, bytes: Bytes) -> Time {
        let num = bytes.0 as u128 * 8 * PS_PER_S as u128;
        // Saturates: a huge size at a slow rate is "never", not a wrapped short time.
        Time(num.div_ceil(self.0 as u128).min(u64::MAX as u128) as u64)
    }
    /// Bytes sent at this rate during `t` (K = C·t), rounded to the nearest byte.
    pub fn bytes_in(self, t: Time) -> Bytes {
        let num = self.0 as u128 * t.0 as u128;
        let den = 8 * PS_PER_S as u128;
        // Saturates: a fast link over a long time must not wrap into a small byte count.
        Bytes(((num + den / 2) / den).min(u64::MAX as u128) as u64)
    }
}

/// Parses `digits[.digits]` times `scale`, exactly; errors when the result is not an integer or overflows.
fn parse_scaled(num: &str, scale: u128) -> Result<u128, String> {
    let num = num.trim();
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty() && frac.is_empty()
        || !int.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
    {
        return Err(format!("`{num}` is not a non-negative decimal number"));
    }
    if int.len() + frac.len() > 30 {
        return Err(format!("`{num}` has too many digits"));
    }
    let int_v: u128 = if int.is_empty() { 0 } else { int.parse().map_err(|_| "number too large".to_string())? };
    let mut v = int_v.checked_mul(scale).ok_or("number too large")?;
    let mut place = scale;
    for c in frac.chars() {
        let d = (c as u8 - b'0') as u128;
        if !place.is_multiple_of(10) {
            if d != 0 {
                return Err(format!("`{num}` is finer than the unit's resolution"));
            }
            continue;
        }
        place /= 10;
        v += d * place;
    }
    Ok(v)
}

/// Formats `v / scale` as an exact decimal (trailing zeros trimmed).
fn fmt_scaled(v: u128, scale: u128) -> String {
    let int = v / scale;
    let mut frac = v % scale;
    if frac == 0 {
        return int.to_string();
    }
    let mut s = format!("{int}.");
    let mut place = scale;
    while frac > 0 {
        place /= 10;
        s.push(char::from(b'0' + (frac / place) as u8));
        frac %= place;
    }
    s
}

/// Splits `85.2us` into (`85.2`, `us`).
fn split_unit(s: &str) -> (&str, &str) {
    let s = s.trim();
    let idx = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    (&s[..idx], s[idx..].trim())
}

const TIME_UNITS: [(&str, u128); 6] =
    [("s", 1_000_000_000_000), ("ms", 1_000_000_000), ("us", 1_000_000), ("µs", 1_000_000), ("ns", 1_000), ("ps", 1)];
const BYTE_UNITS: [(&str, u128); 7] = [
    ("B", 1),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("KiB", 1024),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];
const RATE_UNITS: [(&str, u128); 5] =
    [("bps", 1), ("Kbps", 1_000), ("Mbps", 1_000_000), ("Gbps", 1_000_000_000), ("Tbps", 1_000_000_000_000)];

fn parse_with(s: &str, units: &[(&str, u128)], what: &str) -> Result<u64, String> {
    let (num, unit) = split_unit(s);
    let names: Vec<&str> = units.iter().map(|u| u.0).collect();
    let scale = units
        .iter()
        .find(|u| u.0 == unit)
        .map(|u| u.1)
        .ok_or_else(|| format!("`{s}`: a {what} needs a unit, one of {}", names.join(", ")))?;
    let v = parse_scaled(num, scale).map_err(|e| format!("`{s}`: {e}"))?;
    u64::try_from(v).map_err(|_| format!("`{s}` is too large"))
}

impl std::str::FromStr for Time {
    type Err = String;
    fn from_str(s: &str) -> Result<Time, String> {
        parse_with(s, &TIME_UNITS, "time").map(Time)
    }
}
impl std::str::FromStr for Bytes {
    type Err = String;
    fn from_str(s: &str) -> Result<Bytes, String> {
        parse_with(s, &BYTE_UNITS, "size").map(Bytes)
    }
}
impl std::str::FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        parse_with(s, &RATE_UNITS, "rate").map(Rate)
    }
}

/// Picks the largest unit in which the value is at least 1 and prints it exactly.
fn fmt_best(v: u64, units: &[(&str, u128)]) -> String {
    let v = v as u128;
    let mut best = units.iter().find(|u| u.1 == 1).expect("unit list has a base unit");
    for u in units {
        if v >= u.1 && u.1 > best.1 && u.0 != "µs" && !u.0.contains('i') {
            best = u;
        }
    }
    format!("{}{}", fmt_scaled(v, best.1), best.0)
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&fmt_best(self.0, &TIME_UNITS))
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&fmt_best(self.0, &RATE_UNITS))
    }
}

macro_rules! serde_via_str {
    ($t:ty, $what:literal) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s =
                    String::deserialize(d).map_err(|_| de::Error::custom(concat!("expected a ", $what, " string")))?;
                s.parse().map_err(de::Error::custom)
            }
        }
    };
}
serde_via_str!(Time, "time (e.g. \"85.2us\")");
serde_via_str!(Bytes, "size (e.g. \"300KB\")");
serde_via_str!(Rate, "rate (e.g. \"10Gbps\")");

/// A queue-length threshold as a config gives it: bytes, packets of the port's MTU, or a time at the port rate
/// (K = C·t). Resolved once, at build time, into bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QueueLen {
    Bytes(Bytes),
    /// Milli-packets (`2.5pkt` = 2500), so fractional packet counts stay exact.
    MilliPackets(u64),
    Time(Time),
}

impl QueueLen {
    pub fn resolve(self, mtu: Bytes, rate: Rate) -> Bytes {
        match self {
            QueueLen::Bytes(b) => b,
            QueueLen::MilliPackets(mp) => Bytes((mp as u128 * mtu.0 as u128 / 1000) as u64),
            QueueLen::Time(t) => rate.bytes_in(t),
        }
    }

    /// As `resolve`, in u128 so that absurd values cannot wrap (validation compares them with the buffer).
    pub fn resolve_wide(self, mtu: Bytes, rate: Rate) -> u128 {
        match self {
            QueueLen::Bytes(b) => b.0 as u128,
            QueueLen::MilliPackets(mp) => mp as u128 * mtu.0 as u128 / 1000,
            QueueLen::Time(t) => {
                let den = 8 * PS_PER_S as u128;
                (rate.0 as u128 * t.0 as u128 + den / 2) / den
            }
        }
    }
}

impl std::str::FromStr for QueueLen {
    type Err = String;
    fn from_str(s: &str) -> Result<QueueLen, String> {
        let (num, unit) = split_unit(s);
        if unit == "pkt" || unit == "pkts" {
            let mp = parse_scaled(num, 1000).map_err(|e| format!("`{s}`: {e}"))?;
            return u64::try_from(mp).map(QueueLen::MilliPackets).map_err(|_| format!("`{s}` is too large"));
        }
        if TIME_UNITS.iter().any(|u| u.0 == unit) {
            return s.parse().map(QueueLen::Time);
        }
        if BYTE_UNITS.iter().any(|u| u.0 == unit) {
            return s.parse().map(QueueLen::Bytes);
        }
        Err(format!("`{s}`: a queue length needs a unit: pkt, a size (B, KB, KiB, MB) or a time (us, ms)"))
    }
}
impl fmt::Display for QueueLen {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            QueueLen::Bytes(b) => write!(f, "{b}"),
            QueueLen::MilliPackets(mp) => write!(f, "{}pkt", fmt_scaled(*mp as u128, 1000)),
            QueueLen::Time(t) => write!(f, "{t}"),
        }
    }
}
serde_via_str!(QueueLen, "queue length (e.g. \"65pkt\", \"97.5KB\", \"78us\")");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_times_are_exact_at_datacenter_rates() {
        let mtu = Bytes(1500);
        assert_eq!(Rate::gbps(1).tx_time(mtu), Time::from_ns(12_000));
        assert_eq!(Rate::gbps(10).tx_time(mtu), Time::from_ns(1_200));
        assert_eq!(Rate::gbps(25).tx_time(mtu), Time::from_ns(480));
        assert_eq!(Rate::gbps(40).tx_time(mtu), Time::from_ns(300));
        assert_eq!(Rate::gbps(100).tx_time(mtu), Time::from_ns(120));
        assert_eq!(Rate::gbps(400).tx_time(mtu), Time::from_ns(30));
    }

    #[test]
    fn parses_decimals_exactly_and_round_trips() {
        assert_eq!("85.2us".parse::<Time>().unwrap(), Time(85_200_000));
        assert_eq!("1.1s".parse::<Time>().unwrap(), Time(1_100_000_000_000));
        assert_eq!("97.5KB".parse::<Bytes>().unwrap(), Bytes(97_500));
        assert_eq!("64KiB".parse::<Bytes>().unwrap(), Bytes(65_536));
        assert_eq!("10Gbps".parse::<Rate>().unwrap(), Rate(10_000_000_000));
        for s in ["85.2us", "1.1s", "12us", "300ps", "1.2us"] {
            let t: Time = s.parse().unwrap();
            assert_eq!(t.to_string().parse::<Time>().unwrap(), t);
        }
        assert_eq!(Time(85_200_000).to_string(), "85.2us");
    }

    #[test]
    fn rejects_malformed_units() {
        assert!("10".parse::<Rate>().is_err());
        assert!("-5us".parse::<Time>().is_err());
        assert!("1.5.2us".parse::<Time>().is_err());
        assert!("0.1ps".parse::<Time>().is_err());
        assert!("5 furlongs".parse::<Bytes>().is_err());
    }

    #[test]
    fn queue_lengths_resolve_with_port_mtu_and_rate() {
        let (mtu, c) = (Bytes(1500), Rate::gbps(10));
        assert_eq!("65pkt".parse::<QueueLen>().unwrap().resolve(mtu, c), Bytes(97_500));
        assert_eq!("2.5pkt".parse::<QueueLen>().unwrap().resolve(mtu, c), Bytes(3_750));
        // K = C·t: 78 us at 10 Gb/s is 97.5 KB.
        assert_eq!("78us".parse::<QueueLen>().unwrap().resolve(mtu, c), Bytes(97_500));
        assert_eq!("0pkt".parse::<QueueLen>().unwrap().resolve(mtu, c), Bytes(0));
    }
}

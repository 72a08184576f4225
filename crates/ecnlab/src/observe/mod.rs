//! Observation: histograms, per-flow FCT records, time series and the event trace.

pub mod hist;
pub use hist::LogHist;

use crate::units::Time;

/// A table of numbers with named columns, written as CSV under `series/`.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
}

impl Series {
    pub fn new(name: &str, columns: Vec<String>) -> Series {
        Series { name: name.into(), columns, rows: Vec::new() }
    }
    pub fn to_csv(&self) -> String {
        let mut s = self.columns.join(",");
        s.push('\n');
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(|v| fmt_num(*v)).collect();
            s.push_str(&cells.join(","));
            s.push('\n');
        }
        s
    }
}

/// Integers print without a decimal point; others with up to 9 significant decimals.
pub fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.9}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    Enqueue,
    Dequeue,
    Mark,
    Drop,
}

impl TraceKind {
    pub fn name(self) -> &'static str {
        match self {
            TraceKind::Enqueue => "enqueue",
            TraceKind::Dequeue => "dequeue",
            TraceKind::Mark => "mark",
            TraceKind::Drop => "drop",
        }
    }
}

/// One event at a port; `queue_bytes` is the queue's occupancy after the event.
#[derive(Clone, Copy, Debug)]
pub struct TraceRecord {
    pub time: Time,
    pub port: u32,
    pub queue: u8,
    pub kind: TraceKind,
    /// The mark or drop reason's name, or "" for plain enqueues and dequeues.
    pub reason: &'static str,
    pub flow: u32,
    pub seq: u64,
    pub wire: u32,
    pub queue_bytes: u64,
    pub port_bytes: u64,
}

//! `[hosts]`: what a host's egress port is, how much a host lets wait there (TCP small queues), and whether its
//! senders hand it bursts (segmentation offload).

use crate::error::Error;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// What a host's egress port is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Egress {
    /// A FIFO at line rate that never marks or drops: a host's stack and NIC.
    #[default]
    Nic,
    /// A port built like a switch's from `[switch]` (queues, scheduler, marker, buffer): every link's queue
    /// alike, as the MQ-ECN authors' ns-2 scripts configure host links.
    Switch,
}

/// The `[hosts]` table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Hosts {
    pub egress: Egress,
    /// A host hands data segments to its egress only while at most this many bytes wait there unsent (Linux's
    /// TCP small queues, `tcp_limit_output_bytes`: a lone sender as fast as the path backs up in the stack,
    /// not in an ever-growing NIC queue).
    pub tsq_limit: Bytes,
    /// Segmentation offload (TSO/GSO): a TCP sender hands its egress bursts of up to this many bytes, which leave
    /// back to back at line rate (`transport::TcpSender::tso_burst`, `tso_defers`); none by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tso_max: Option<Bytes>,
}

impl Default for Hosts {
    fn default() -> Self {
        Hosts { egress: Egress::Nic, tsq_limit: Bytes(3000), tso_max: None }
    }
}

/// The keys `[hosts]` took over from `[transport]`: (old key, new key).
const MOVED: [(&str, &str); 2] = [("host_queue", "egress"), ("nic_limit", "tsq_limit")];

/// Moves the deprecated `transport.host_queue` and `transport.nic_limit` of a scenario document (after its
/// `--set`s) to `hosts.egress` and `hosts.tsq_limit`, and returns a note for each. Giving both spellings is
/// an error, so that no value silently wins.
pub(super) fn migrate(doc: &mut toml::Value) -> Result<Vec<String>, Error> {
    let mut notes = Vec::new();
    for (old, new) in MOVED {
        let Some(value) = doc.get_mut("transport").and_then(|t| t.as_table_mut()).and_then(|t| t.remove(old)) else {
            continue;
        };
        let Some(root) = doc.as_table_mut() else { continue };
        let hosts = root.entry("hosts").or_insert_with(|| toml::Value::Table(Default::default()));
        let Some(hosts) = hosts.as_table_mut() else {
            return Err(Error::config("hosts", "must be a table"));
        };
        if hosts.contains_key(new) {
            return Err(Error::config(
                format!("transport.{old}"),
                format!("is the old spelling of hosts.{new}, which is also given: keep only hosts.{new}"),
            ));
        }
        hosts.insert(new.to_string(), value);
        notes.push(format!("transport.{old} is deprecated: write hosts.{new} (same values)"));
    }
    Ok(notes)
}

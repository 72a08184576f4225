//! Errors of the emulation harness and the switch, with the exit status a front should give each.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The process lacks a capability the harness needs (namespaces, veths, packet sockets).
    #[error("{what} needs {capability} (run as root): {detail}")]
    Permission { what: String, capability: &'static str, detail: String },
    /// A setting out of its range, named by its field.
    #[error("{field}: {msg}")]
    Config { field: String, msg: String },
    /// A system call failed.
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    /// A command of the setup (`ip`) failed.
    #[error("`{cmd}` failed: {stderr}")]
    Command { cmd: String, stderr: String },
    /// A simulator component refused its configuration (a marker's or scheduler's settings).
    #[error(transparent)]
    Ecnlab(#[from] ecnlab::Error),
    /// The forwarding thread stopped on its own.
    #[error("switch: {0}")]
    Switch(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn config(field: impl Into<String>, msg: impl Into<String>) -> Error {
        Error::Config { field: field.into(), msg: msg.into() }
    }

    /// An OS error from `what`, reported as a permission error when the OS said so.
    pub fn os(what: impl Into<String>, source: io::Error) -> Error {
        let what = what.into();
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => {
                Error::Permission { what, capability: "CAP_NET_ADMIN", detail: source.to_string() }
            }
            _ => Error::Io { what, source },
        }
    }

    /// The last OS error of a failed call.
    pub fn last_os(what: impl Into<String>) -> Error {
        Error::os(what, io::Error::last_os_error())
    }

    /// Exit status for a command-line front: 2 for what the user must change (privileges, settings), 1 else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Permission { .. } | Error::Config { .. } | Error::Ecnlab(_) => 2,
            _ => 1,
        }
    }
}

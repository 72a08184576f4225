//! The one error type: bad input names its field path; bugs are assertions, never errors.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A scenario or experiment field is missing, malformed or out of range.
    #[error("config error at `{path}`: {msg}")]
    Config { path: String, msg: String },
    /// A run stopped before completing (event budget, internal limit).
    #[error("run error: {0}")]
    Run(String),
    #[error("i/o error: {0}")]
    Io(String),
    /// A run (or a grid of runs) was stopped through its `cancel::Cancel` token (Ctrl-C) before it finished.
    #[error("interrupted")]
    Interrupted,
    /// An experiment ran but one or more of its checks failed.
    #[error("{0}")]
    CheckFailed(String),
}

impl Error {
    pub fn config(path: impl Into<String>, msg: impl Into<String>) -> Error {
        let path = path.into();
        Error::Config { path: if path.is_empty() { "<root>".into() } else { path }, msg: msg.into() }
    }

    /// A config error at `field` of the table at `table` (the table itself when `field` is empty): what a
    /// scheme's validation reports (`switch.marker.threshold`, `ports.3.scheduler.weights.1`).
    pub fn config_field(table: &str, field: &str, msg: impl Into<String>) -> Error {
        if field.is_empty() {
            Error::config(table, msg)
        } else {
            Error::config(format!("{table}.{field}"), msg)
        }
    }

    /// This error as a config error at `path` (where a table name or CSV file was given): a CSV file's
    /// `file:line` stays in the message, the bare name of a table field (`cdf`, `rtt`) does not.
    pub fn at(self, path: impl Into<String>) -> Error {
        match self {
            Error::Config { path: inner, msg } if inner.contains(':') => Error::config(path, format!("{inner}: {msg}")),
            Error::Config { msg, .. } => Error::config(path, msg),
            e => Error::config(path, e.to_string()),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

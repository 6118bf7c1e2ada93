//! The one error type of the `cleaner` crate.

/// Result with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can stop a cleaning pass.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The log failed: I/O, corruption (naming segment and position), or a poisoned log.
    #[error(transparent)]
    Log(#[from] log_core::Error),
    /// The dedupe buffer cannot hold a single key, so no pass could make progress.
    #[error(
        "dedupe buffer of {bytes} bytes holds no key at load factor {load_factor}; the {map} map needs at least {min_bytes} bytes"
    )]
    BufferTooSmall {
        /// Buffer size asked for.
        bytes: usize,
        /// Load factor asked for.
        load_factor: f64,
        /// Map kind.
        map: &'static str,
        /// Smallest buffer that holds one key.
        min_bytes: usize,
    },
    /// The machine cannot give the offset map its budget.
    #[error("cannot allocate a dedupe buffer of {bytes} bytes: {source}")]
    OutOfMemory {
        /// The budget asked for.
        bytes: usize,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A configuration value is out of range.
    #[error("invalid cleaner configuration: {0}")]
    InvalidConfig(String),
}

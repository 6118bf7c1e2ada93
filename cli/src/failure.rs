//! How a command fails, and the exit code for each way.

use std::fmt;
use std::process::ExitCode;

/// A failed command.
#[derive(Debug)]
pub enum Failure {
    /// Bad options or configuration: exit code 2.
    Usage(String),
    /// A bad script line: exit code 2.
    Script {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The log, the cleaner or I/O failed: exit code 1.
    Runtime(String),
}

impl Failure {
    /// The process exit code.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Usage(_) | Failure::Script { .. } => ExitCode::from(2),
            Failure::Runtime(_) => ExitCode::from(1),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(m) => write!(f, "error: {m}"),
            Failure::Script { line, message } => write!(f, "error: line {line}: {message}"),
            Failure::Runtime(m) => write!(f, "error: {m}"),
        }
    }
}

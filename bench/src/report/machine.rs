//! What machine a report was made on, and from which checkout.

use serde::{Deserialize, Serialize};

/// The machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model (`model name` of `/proc/cpuinfo`), or `unknown`.
    pub cpu: String,
    /// Cores the process may use.
    pub cores: usize,
    /// Memory in bytes (`MemTotal` of `/proc/meminfo`), 0 when unknown.
    pub memory_bytes: u64,
    /// Operating system and architecture.
    pub os: String,
}

impl Machine {
    /// This machine.
    pub fn this() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_owned(), |(_, v)| v.trim().to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }

    /// One line for a reader: `AMD EPYC 7B13, 2 cores, 23.4 GiB`.
    pub fn describe(&self) -> String {
        format!(
            "{}, {} cores, {:.1} GiB, {}",
            self.cpu,
            self.cores,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.os
        )
    }
}

/// `git rev-parse --short HEAD` of the current directory's checkout, with `+dirty` when it has uncommitted
/// changes to tracked files; `unknown` outside a checkout.
pub fn git_revision() -> String {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "--short", "HEAD"]) {
        Some(rev) => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
            if dirty { format!("{rev}+dirty") } else { rev }
        }
        None => "unknown".into(),
    }
}

//! Kafka's cleaner manager over a data directory, as a broker runs its cleaner threads: every subdirectory a
//! log, two threads sharing the dedupe buffer, the dirtiest log above its `min.cleanable.dirty.ratio` first,
//! per-log settings from a settings file (`[name]` sections, Kafka's names), until nothing is cleanable.
//! The run keeps `cleaner-status.json` in the data directory (what `logcompact status` reads) and saves its
//! settings for later runs.
//!
//! `cargo run -p logcompact --example manage_data_dir [DATA_DIR]`: without an argument it writes three logs
//! in a temporary directory first (one of them `cleanup.policy = delete`, which the manager leaves alone).

use std::path::Path;
use std::sync::Arc;

use logcompact::datadir::{self, CleanRequest, Hooks};
use logcompact::manager::{Event, ManagerConfig, Mode};
use logcompact::{Format, LogConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tmp = tempfile::tempdir()?;
    let data_dir = match std::env::args_os().nth(1) {
        Some(dir) => dir.into(),
        None => {
            let dir = tmp.path().join("data");
            write_demo_logs(&dir)?;
            dir
        }
    };
    let settings = tmp.path().join("logs.conf");
    std::fs::write(&settings, "min.cleanable.dirty.ratio = 0.3\n\n[audit]\ncleanup.policy = delete\n")?;
    run(&data_dir, &settings).map(|_| ())
}

/// Three native logs, `users`, `carts` and `audit`, each with many updates of few keys.
fn write_demo_logs(data_dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    for (name, keys) in [("users", 40), ("carts", 200), ("audit", 30)] {
        let config = LogConfig { segment_bytes: 16 << 10, ..LogConfig::default() };
        let log = logcompact::open_or_create(&data_dir.join(name), Format::Native, config)?.log;
        for i in 0..3000u32 {
            log.put(format!("{name}-{}", i % keys).as_bytes(), format!("version {i}").as_bytes())?;
        }
        log.roll()?;
    }
    Ok(())
}

/// Runs the manager over `data_dir` with the settings file `settings` until nothing is cleanable.
fn run(data_dir: &Path, settings: &Path) -> Result<datadir::Finished, Box<dyn std::error::Error>> {
    let layers = datadir::layers(data_dir, Format::Native, Some(settings), &[], &datadir::BrokerSource::default())?;
    let req = CleanRequest {
        data_dir: data_dir.to_path_buf(),
        format: Format::Native,
        manager: ManagerConfig { threads: 2, dedupe_buffer_bytes: 8 << 20, ..ManagerConfig::default() },
        policy: "dirtiest-first".into(),
        layers,
        mode: Mode::UntilClean,
        now_ms: None,
        clock_trust: logcompact::ClockTrust::Checked,
        replica_floors: None,
    };
    let hooks = Hooks {
        on_event: Arc::new(|event: &Event| {
            if let Event::Cleaned { thread, log, stats, passes } = event {
                println!("{}", logcompact::summary(Some(*thread), log, stats, *passes));
            }
        }),
        on_notice: Arc::new(|line: &str| eprintln!("{line}")),
        ..Hooks::quiet()
    };
    let finished = datadir::clean(&req, &hooks)?;
    for log in &finished.status.logs {
        println!(
            "{:<8} {:?}: {} passes, dirty ratio now {:.0}%",
            log.name,
            log.state,
            log.passes,
            100.0 * log.dirty_ratio
        );
    }
    Ok(finished)
}

#[cfg(test)]
mod tests {
    use super::*;
    use logcompact::manager::LogState;

    #[test]
    fn the_example_runs() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let data_dir = tmp.path().join("data");
        write_demo_logs(&data_dir).expect("demo logs");
        let settings = tmp.path().join("logs.conf");
        std::fs::write(&settings, "[audit]\ncleanup.policy = delete\n").expect("settings");
        let finished = run(&data_dir, &settings).expect("the example runs");
        let state = |name: &str| finished.status.logs.iter().find(|l| l.name == name).map(|l| (l.state, l.passes));
        assert!(state("users").is_some_and(|(s, p)| s == LogState::Idle && p >= 1));
        assert!(state("carts").is_some_and(|(s, p)| s == LogState::Idle && p >= 1));
        assert_eq!(state("audit"), Some((LogState::NotCompacted, 0)));
        assert!(data_dir.join("cleaner-status.json").exists() && data_dir.join("logcompact-settings.json").exists());
    }
}

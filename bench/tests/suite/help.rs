//! Every benchmark binary answers `--help` with its usage and exit 0, instead of starting a run.

use std::process::Command;

#[test]
fn every_binary_says_what_it_takes() {
    for (name, bin) in [
        ("storage-bench", env!("CARGO_BIN_EXE_storage-bench")),
        ("map-bench", env!("CARGO_BIN_EXE_map-bench")),
        ("pass-bench", env!("CARGO_BIN_EXE_pass-bench")),
        ("kafka-bench", env!("CARGO_BIN_EXE_kafka-bench")),
        ("report", env!("CARGO_BIN_EXE_report")),
    ] {
        let out = Command::new(bin).arg("--help").output().expect("run");
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.to_lowercase().contains("usage:"), "{name} --help: {text}");
    }
}

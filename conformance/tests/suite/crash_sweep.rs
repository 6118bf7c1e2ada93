//! The crash sweeps ([`conformance::crash_sweep`]) in each segment format: crash at every sync point of a run
//! of appends and of cleaning passes on the crash-simulating store, reopen from what would have been on disk,
//! and lose nothing.

/// The native format: its partition and checkpoint in one store, a pass swapped in at once.
mod native {
    conformance::crash_sweep_tests!(log_core::Format::Native);
}

/// Kafka partitions: the partition and its log directory (the broker's `cleaner-offset-checkpoint`) crashed
/// together, a pass swapped one group at a time as Kafka's cleaner does.
mod kafka {
    conformance::crash_sweep_tests!(log_core::Format::Kafka);
}

//! Sequences of operations (appends, deletes, unkeyed records, rolls, compactions with tiny buffers,
//! purges, a clock past the horizons, reads, restarts and crashes with torn tails) applied to a real log and
//! cleaner on the crash-simulating store and to the reference model, compared after every step (the
//! conformance suite's model, driven by the fuzzer instead of proptest).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (ops, segment_bytes) = conformance::model::ops_from_bytes(data);
    if !ops.is_empty() {
        conformance::model::run_every_map(&conformance::Crash, &ops, segment_bytes);
    }
});

//! Opening a fuzzed Kafka partition directory: see `conformance::fuzz_dir`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| conformance::fuzz_dir::open_fuzzed_dir(log_core::Format::Kafka, data));

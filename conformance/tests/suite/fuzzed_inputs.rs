//! The fuzz targets' properties on the stable toolchain: random bytes as directories to open and as
//! operation sequences for the model (`fuzz/` runs the same functions under libFuzzer).

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn prop_fuzzed_directories_open_without_harm(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        conformance::fuzz_dir::open_fuzzed_dir(log_core::Format::Native, &data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn prop_fuzzed_operation_sequences_match_the_model(data in proptest::collection::vec(any::<u8>(), 0..360)) {
        let (ops, segment_bytes) = conformance::model::ops_from_bytes(&data);
        conformance::model::run_every_map(&conformance::Crash, &ops, segment_bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn prop_fuzzed_kafka_partitions_open_without_harm(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        conformance::fuzz_dir::open_fuzzed_dir(log_core::Format::Kafka, &data);
    }
}

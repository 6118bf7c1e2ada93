//! The conformance suite on Kafka partitions in storage-mem.
conformance::conformance_tests!(kafka conformance::Kafka(conformance::Mem), 300);

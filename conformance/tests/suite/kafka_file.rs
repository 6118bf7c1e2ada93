//! The conformance suite on Kafka partitions in storage-file, in temporary directories.
conformance::conformance_tests!(kafka conformance::Kafka(conformance::Files), 48);

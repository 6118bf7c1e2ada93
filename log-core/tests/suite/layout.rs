//! `Layout`: how a store's names are classified, and the signs of a Kafka partition.

use log_core::layout::{Layout, PendingSwap};
use log_core::names::CHECKPOINT_FILE;
use log_core::{Error, SegmentStore};
use storage_mem::MemStore;

fn store_with(names: &[(&str, &[u8])]) -> MemStore {
    let store = MemStore::new();
    for (name, bytes) in names {
        store.create(name).expect("create").append(bytes).expect("write");
    }
    store
}

#[test]
fn names_are_classified() {
    let store = store_with(&[
        ("00000000000000000000.log", b""),
        ("00000000000000000000.lcindex", b""),
        ("00000000000000000005.log.swap", b""),
        ("99999999999999999999.log", b""),
        ("notes.txt", b""),
        (CHECKPOINT_FILE, b""),
    ]);
    let layout = Layout::scan(&store).expect("scan");
    assert_eq!(layout.logs.keys().copied().collect::<Vec<_>>(), vec![0]);
    assert_eq!(layout.hints.len(), 1);
    assert_eq!(layout.pending_swap(), PendingSwap::Complete);
    assert_eq!(layout.unusable.len(), 1);
    assert!(
        matches!(layout.check_usable(), Err(Error::UnusableName { ref name, .. }) if name == "99999999999999999999.log")
    );
    assert_eq!(layout.foreign, vec!["notes.txt".to_owned()]);
    assert!(layout.checkpoint);
    assert_eq!(layout.foreign_format(&store), None);
}

#[test]
fn a_kafka_partition_is_recognised() {
    // A v2 batch header: base offset 0, length 70, epoch 0, magic 2.
    let mut batch = vec![0u8; 82];
    batch[8..12].copy_from_slice(&[0, 0, 0, 70]); // big-endian, as Kafka writes it
    batch[16] = 2;
    let store = store_with(&[("00000000000000000000.log", &batch), ("00000000000000000000.index", b"")]);
    let (found, readable) = Layout::scan(&store).expect("scan").foreign_format(&store).expect("kafka");
    assert!(found.contains("Kafka") && found.contains("magic 2") && found.contains(".index"), "{found}");
    assert!(readable, "a partition of magic 2 is read with the Kafka format");
    batch[16] = 1;
    let store = store_with(&[("00000000000000000000.log", &batch)]);
    let (found, readable) = Layout::scan(&store).expect("scan").foreign_format(&store).expect("kafka");
    assert!(!readable, "magic 1 is no format this build reads: {found}");
    batch[16] = 2;
    let store = store_with(&[("00000000000000000000.log", &batch)]);
    assert!(Layout::scan(&store).expect("scan").foreign_format(&store).is_some(), "from the batch alone");
}

#[test]
fn hints_named_index_by_earlier_versions_are_not_taken_for_kafka() {
    let store = store_with(&[("00000000000000000000.log", b""), ("00000000000000000000.index", b"LCIX\x01\0\0\0")]);
    let layout = Layout::scan(&store).expect("scan");
    assert_eq!(layout.foreign_format(&store), None);
    let store = store_with(&[("00000000000000000000.log", b""), ("00000000000000000000.index", &[0u8; 8])]);
    assert!(Layout::scan(&store).expect("scan").foreign_format(&store).is_some(), "Kafka's .index is");
}

//! The rule that a `delete` topic is never compacted on a guess lives in the library: a program calling
//! `logcompact::compact` on a Kafka partition gets it as the command line does.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use logcompact::datadir::settings::Layers;
use logcompact::{Cleaner, CleanerConfig, CompactError, CompactRequest, Format, LogConfig, ManualClock};

/// A Kafka partition of 600 records over 20 keys in small segments, every segment but the active one sealed.
fn partition(dir: &Path) {
    let config = LogConfig { segment_bytes: 4 << 10, ..LogConfig::default() };
    let log = logcompact::open_or_create(dir, Format::Kafka, config).expect("create").log;
    for i in 0..600u32 {
        log.put(format!("key-{}", i % 20).as_bytes(), format!("value {i}").as_bytes()).expect("put");
    }
    log.sync().expect("sync");
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().expect("name").to_string_lossy().into_owned(), std::fs::read(&p).expect("read")))
        .collect()
}

fn request(dir: &Path, settings: Layers) -> CompactRequest {
    CompactRequest { clock_trust: logcompact::ClockTrust::Trusted, ..CompactRequest::kafka(dir, settings) }
}

/// `logcompact::compact` with a fixed clock (its error boxed, as a caller would keep it).
fn compact(req: &CompactRequest) -> Result<logcompact::Compaction, Box<CompactError>> {
    let clock = Arc::new(ManualClock::new(i64::MAX / 4));
    let mut cleaner = Cleaner::new(CleanerConfig::default(), clock).expect("cleaner");
    logcompact::compact(req, &mut cleaner, |_| Ok(())).map_err(Box::new)
}

#[test]
fn a_library_caller_cannot_compact_a_topic_nothing_shows_is_compacted() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("kafka-logs").join("orders-0");
    partition(&dir);
    let before = files(&dir);
    // Nothing read says whether `orders` is compacted: refused, nothing written.
    let refused = compact(&request(&dir, Layers::default()));
    let err = refused.as_ref().err().map(|e| &**e);
    assert!(matches!(err, Some(CompactError::PolicyUnknown { topic, .. }) if topic == "orders"), "{refused:?}");
    assert_eq!(files(&dir), before, "nothing written");
    // The caller's own settings say `delete`: refused too, whatever else they say.
    let mut delete = Layers::default();
    delete.flags.insert("cleanup.policy".into(), ("delete".into(), "a caller".into()));
    let refused = compact(&request(&dir, delete));
    let err = refused.as_ref().err().map(|e| &**e);
    assert!(matches!(err, Some(CompactError::NotCompacted { .. })), "{refused:?}");
    assert_eq!(files(&dir), before, "nothing written");
    // On the caller's word that the broker compacts it: compacted, records without a key kept.
    let verdict =
        logcompact::topic_policy(&request(&dir, Layers::default().compact_anyway("a test"))).expect("a verdict");
    assert!(!verdict.drop_invalid && verdict.asserted.is_some(), "{verdict:?}");
    let done = compact(&request(&dir, Layers::default().compact_anyway("a test"))).expect("compacted");
    assert!(matches!(done.outcome, logcompact::CompactOutcome::Cleaned(_)), "{:?}", done.outcome);
    assert_ne!(files(&dir), before, "compacted");
}

#[test]
fn kafkas_own_compacted_topics_are_known_compacted_without_a_word() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("kafka-logs").join("__consumer_offsets-7");
    partition(&dir);
    let verdict = logcompact::topic_policy(&request(&dir, Layers::default())).expect("a verdict");
    // Compacted by Kafka's defaults for the topic, so records without a key go as Kafka's cleaner drops them.
    assert!(verdict.drop_invalid && verdict.asserted.is_none(), "{verdict:?}");
    compact(&request(&dir, Layers::default())).expect("compacted");
}

#[test]
fn a_native_log_is_compacted_by_definition() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("log");
    let log = logcompact::open_or_create(&dir, Format::Native, LogConfig::default()).expect("create").log;
    log.put(b"k", b"v").expect("put");
    drop(log);
    let req = CompactRequest { format: Format::Native, ..request(&dir, Layers::default()) };
    let verdict = logcompact::topic_policy(&req).expect("a verdict");
    assert!(verdict.drop_invalid && verdict.asserted.is_none());
}

#[test]
fn a_listing_of_another_directory_never_talks_an_open_out_of_refusing_the_metadata_log() {
    // A metadata log under another name (its quorum-state shows it) beside a partition: an open handed the
    // partition's listing lists the metadata log itself, and refuses it; nothing is created in it.
    let tmp = tempfile::tempdir().expect("tempdir");
    let (meta, other) = (tmp.path().join("renamed-0"), tmp.path().join("orders-0"));
    std::fs::create_dir(&meta).expect("mkdir");
    std::fs::create_dir(&other).expect("mkdir");
    std::fs::write(meta.join("quorum-state"), b"{}").expect("quorum-state");
    std::fs::write(meta.join("00000000000000000000.log"), b"").expect("segment");
    std::fs::write(other.join("00000000000000000000.log"), b"").expect("segment");
    let before: Vec<_> = std::fs::read_dir(&meta).expect("list").map(|e| e.expect("entry").file_name()).collect();
    let other_look = logcompact::dir::Listing::read(&other);
    let refused = logcompact::dir::open_writable_listed(&meta, Format::Kafka, LogConfig::default(), &other_look);
    assert!(
        matches!(refused, Err(logcompact::OpenError::Store { source: storage_file::Error::MetadataLog { .. }, .. })),
        "{refused:?}"
    );
    let after: Vec<_> = std::fs::read_dir(&meta).expect("list").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(after, before, "nothing created in the metadata log");
    assert!(logcompact::dir::Listing::read(&meta).refuse_metadata_log().is_err());
}

//! A KRaft node's metadata on arbitrary bytes: the record decoders (a metadata record as the dump prints it,
//! each raft control record, a record applied to the image) and a metadata log directory loaded as `clean`
//! loads it (a snapshot and a segment whose batches are valid, holding the input's records, and a segment of
//! the raw input), and a server.properties of the same bytes, never panic and stay within their bounds; what decodes prints as JSON that parses.
//!
//! Input: the first byte chooses the codec of the written batches and how many records go to the snapshot; the
//! rest is records separated by `0xfe 0xfd`.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use log_core::kafka::{Compression, RecordToWrite, new_header, write_batch};
use logcompact::kafka::kraft::image::MetadataImage;
use logcompact::kafka::kraft::schema::{ControlRecord, control_record_json, metadata_record_json};

/// A directory of this process's own, on tmpfs where there is one, rewritten by every input.
fn metadata_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm".into() } else { std::env::temp_dir() };
        let dir = root.join(format!("kraft-fuzz-{}", std::process::id())).join("__cluster_metadata-0");
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir
    })
}

/// A file of valid batches (`per_batch` records each) holding `records` from offset `base`.
fn batches(records: &[&[u8]], base: i64, codec: Compression) -> Vec<u8> {
    let (mut file, mut out, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
    for (n, chunk) in records.chunks(3).enumerate() {
        let first = base + 3 * n as i64;
        let rs: Vec<RecordToWrite<'_>> = chunk
            .iter()
            .enumerate()
            .map(|(i, v)| RecordToWrite {
                offset: first + i as i64,
                timestamp: 1_700_000_000_000 + i as i64,
                key: None,
                value: Some(v),
                header_count: 0,
                header_bytes: &[],
            })
            .collect();
        out.clear();
        if write_batch(&new_header(first, (chunk.len() - 1) as i32), codec, None, &rs, &mut out, &mut scratch).is_ok() {
            file.extend_from_slice(&out);
        }
    }
    file
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    // The decoders alone.
    if let Ok(json) = metadata_record_json(rest) {
        assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok(), "not JSON: {json}");
    }
    for kind in (0..8).filter_map(ControlRecord::from_type) {
        if let Ok(json) = control_record_json(kind, rest) {
            assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok(), "not JSON: {json}");
        }
    }
    let mut image = MetadataImage::default();
    let _ = image.apply(0, rest);
    // The same bytes as a server.properties.
    let props = logcompact::kafka::kraft::broker_settings::parse_properties(&String::from_utf8_lossy(rest));
    let _ = logcompact::kafka::kraft::broker_settings::check_properties(&props);
    // A metadata log directory, loaded as a broker's start (and `clean`) loads it.
    let records: Vec<&[u8]> = split(rest);
    let codec = [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd]
        [usize::from(mode & 7) % 5];
    let in_snapshot = usize::from(mode >> 3).min(records.len());
    let dir = metadata_dir();
    let end = in_snapshot as i64;
    let files = [
        (format!("{end:020}-{:010}.checkpoint", 1), batches(&records[..in_snapshot], 0, codec)),
        (format!("{:020}.log", 0), batches(&records, 0, codec)),
        (format!("{:020}.log", records.len() + 100), rest.to_vec()),
    ];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).expect("write a scratch file");
    }
    if let Ok(settings) = logcompact::kafka::kraft::BrokerSettings::load(dir, Some("1".into()), None) {
        for topic in settings.image.topics.values() {
            let _ = settings.topic(topic);
            let _ = settings.image.topic_id(topic);
        }
        let _ = settings.image.registers(1, "AAAAAAAAAAAAAAAAAAAAAA");
    }
});

/// The records of `bytes`, separated by `0xfe 0xfd`.
fn split(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == 0xfe && bytes[i + 1] == 0xfd {
            out.push(&bytes[start..i]);
            start = i + 2;
            i += 2;
        } else {
            i += 1;
        }
    }
    out.push(&bytes[start..]);
    out
}

//! The contract of the segment-format seam ([`log_core::Format`] and [`log_core::BatchRef`]), written once and
//! run for both formats and every Kafka codec: a batch parsed, its records read and rewritten whole gives back
//! its base offset, last offset, record count, header fields and records; and a batch cut anywhere is an error
//! to parse, verified or not, never a shorter batch.

use log_core::codec::{self, EncodeFields};
use log_core::kafka::{self, Compression, RecordToWrite};
use log_core::{BatchRef, Format, Header};

/// A record as the contract compares it: offset, timestamp, key, value, headers.
type Owned = (u64, i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<(Vec<u8>, Option<Vec<u8>>)>);

/// One batch of a format to put through the contract.
struct Case {
    what: String,
    format: Format,
    bytes: Vec<u8>,
}

/// The records the cases hold: keyed and unkeyed, a tombstone, headers, an empty value.
/// A record to write: key, value, headers.
type ToWrite = (Option<&'static [u8]>, Option<&'static [u8]>, Vec<(&'static str, &'static [u8])>);

fn records() -> Vec<ToWrite> {
    vec![
        (Some(b"k1"), Some(b"v1"), vec![("trace", b"\x00\x01")]),
        (Some(b"k2"), None, vec![]),
        (None, Some(b"unkeyed"), vec![("a", b""), ("b", b"bee")]),
        (Some(b"k1"), Some(b""), vec![]),
    ]
}

/// Native frames: one record a batch, offsets 40, 41, ... with a stamped tombstone among them.
fn native_cases() -> Vec<Case> {
    records()
        .into_iter()
        .enumerate()
        .map(|(i, (key, value, headers))| {
            let fields = EncodeFields {
                offset: 40 + i as u64,
                timestamp: 1_000 + i as i64,
                key,
                value,
                delete_horizon: value.is_none().then_some(9_000),
            };
            let hs: Vec<Header> =
                headers.iter().map(|(n, v)| Header { name: (*n).to_owned(), value: Some(v.to_vec()) }).collect();
            let mut bytes = Vec::new();
            codec::encode_with_headers(&fields, &hs, &mut bytes).expect("encodes");
            Case { what: format!("native frame {i}"), format: Format::Native, bytes }
        })
        .collect()
}

/// Kafka's headers of a record as its batch stores them: varint lengths, names, values.
fn kafka_headers(headers: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in headers {
        kafka::varint::write_varint(&mut out, name.len() as i32);
        out.extend_from_slice(name.as_bytes());
        kafka::varint::write_varint(&mut out, value.len() as i32);
        out.extend_from_slice(value);
    }
    out
}

/// Kafka batches of every codec, from a producer (id, epoch, sequence, leader epoch set), offsets 100..=103
/// with a gap, and one with a delete horizon.
fn kafka_cases() -> Vec<Case> {
    let recs = records();
    let header_blocks: Vec<Vec<u8>> = recs.iter().map(|(_, _, h)| kafka_headers(h)).collect();
    let offsets = [100i64, 101, 102, 104];
    let mut out = Vec::new();
    for codec in [Compression::None, Compression::Gzip, Compression::Snappy, Compression::Lz4, Compression::Zstd] {
        for horizon in [None, Some(7_777)] {
            let to_write: Vec<RecordToWrite<'_>> = recs
                .iter()
                .zip(&header_blocks)
                .zip(offsets)
                .map(|(((key, value, headers), block), offset)| RecordToWrite {
                    offset,
                    timestamp: 2_000 + offset,
                    key: *key,
                    value: *value,
                    header_count: headers.len(),
                    header_bytes: block,
                })
                .collect();
            let mut template = kafka::new_header(100, 4);
            template.producer_id = 42;
            template.producer_epoch = 3;
            template.base_sequence = 17;
            template.partition_leader_epoch = 5;
            let (mut bytes, mut scratch) = (Vec::new(), Vec::new());
            kafka::write_batch(&template, codec, horizon, &to_write, &mut bytes, &mut scratch).expect("builds");
            out.push(Case { what: format!("kafka {codec:?} horizon {horizon:?}"), format: Format::Kafka, bytes });
        }
    }
    out
}

fn all_cases() -> Vec<Case> {
    let mut cases = native_cases();
    cases.extend(kafka_cases());
    cases
}

fn owned(batch: &BatchRef<'_>, scratch: &mut Vec<u8>) -> Vec<Owned> {
    batch
        .records(scratch)
        .expect("records")
        .map(|r| {
            let r = r.expect("record");
            let headers = r.headers().map(|(n, v)| (n.to_vec(), v.map(<[u8]>::to_vec))).collect();
            (r.offset, r.timestamp, r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec), headers)
        })
        .collect()
}

/// The fields of a batch's header the contract keeps: everything but its length and checksum, which a
/// re-encoding (a new compression of the same records) may change.
fn header_fields(batch: &BatchRef<'_>) -> Option<kafka::BatchHeader> {
    batch.kafka_header().map(|h| kafka::BatchHeader { batch_length: 0, crc: 0, ..*h })
}

#[test]
fn parse_records_rewrite_gives_back_the_batch() {
    for case in all_cases() {
        let what = &case.what;
        let batch = case.format.parse(&case.bytes, true).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(batch.len(), case.bytes.len(), "{what}: one batch spans the bytes");
        assert_eq!(batch.format(), case.format, "{what}");
        assert_eq!(case.format.batch_len(&case.bytes), Ok(case.bytes.len()), "{what}: the length prefix");
        let mut scratch = Vec::new();
        let before = owned(&batch, &mut scratch);
        assert_eq!(before.len() as u64, batch.record_count, "{what}");
        assert_eq!(before.first().map(|r| r.0), Some(batch.base_offset), "{what}");

        let mut scratch = Vec::new();
        let kept: Vec<_> = batch.records(&mut scratch).expect("records").map(|r| r.expect("record")).collect();
        let (mut out, mut rewrite_scratch) = (Vec::new(), Vec::new());
        let stamp = batch.rewrite(&kept, batch.delete_horizon, &mut out, &mut rewrite_scratch).expect("rewrites");
        let again = case.format.parse(&out, true).unwrap_or_else(|e| panic!("{what}: rewritten: {e}"));
        assert_eq!((stamp.base_offset, stamp.last_offset), (batch.base_offset, batch.last_offset), "{what}");
        assert_eq!(
            (again.base_offset, again.last_offset, again.record_count, again.max_timestamp, again.delete_horizon),
            (batch.base_offset, batch.last_offset, batch.record_count, batch.max_timestamp, batch.delete_horizon),
            "{what}: the rewritten batch's stamp"
        );
        assert_eq!(header_fields(&again), header_fields(&batch), "{what}: header fields");
        assert_eq!(again.producer_id(), batch.producer_id(), "{what}");
        let mut scratch = Vec::new();
        assert_eq!(owned(&again, &mut scratch), before, "{what}: records");
    }
}

#[test]
fn a_cut_batch_is_always_an_error() {
    for case in all_cases() {
        for cut in 0..case.bytes.len() {
            let head = &case.bytes[..cut];
            for verify in [true, false] {
                assert!(
                    case.format.parse(head, verify).is_err(),
                    "{}: {cut} of {} bytes parsed (verify {verify})",
                    case.what,
                    case.bytes.len()
                );
            }
            if let Ok(len) = case.format.batch_len(head) {
                assert!(len > cut, "{}: a cut of {cut} bytes claims a whole batch of {len}", case.what);
            }
        }
    }
}

#[test]
fn a_batch_with_bytes_after_it_parses_as_itself() {
    for case in all_cases() {
        let mut more = case.bytes.clone();
        more.extend_from_slice(&case.bytes);
        let batch = case.format.parse(&more, true).unwrap_or_else(|e| panic!("{}: {e}", case.what));
        assert_eq!(batch.bytes(), &case.bytes[..], "{}", case.what);
    }
}

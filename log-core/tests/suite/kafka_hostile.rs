//! Hostile Kafka batches: random bytes, and valid batches of every codec with bytes flipped, cut or their
//! header fields (length, count, codec) forged, never panic, never read past their bytes, and never
//! allocate more than the decompression bound; a valid batch always reads back what was written.

#![expect(clippy::big_endian_bytes, reason = "Kafka's format is big-endian")]

use log_core::kafka::{
    Batch, BatchProblem, Compression, MAX_DECOMPRESSED_BYTES, RecordToWrite, new_header, write_batch,
};
use proptest::prelude::*;

fn valid_batch(codec: Compression, n: usize, value_len: usize) -> Vec<u8> {
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i}").into_bytes()).collect();
    let value = vec![b'x'; value_len];
    let records: Vec<RecordToWrite<'_>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| RecordToWrite {
            offset: 10 + i as i64,
            timestamp: 1_000 + i as i64,
            key: Some(k),
            value: (i % 3 != 0).then_some(value.as_slice()),
            header_count: 0,
            header_bytes: &[],
        })
        .collect();
    let mut out = Vec::new();
    write_batch(&new_header(10, n as i32), codec, None, &records, &mut out, &mut Vec::new()).expect("write");
    out
}

/// Reads everything a batch holds, as every command does; returns the records read or the first problem.
fn read_all(bytes: &[u8]) -> Result<usize, BatchProblem> {
    let batch = Batch::parse(bytes)?;
    let mut scratch = Vec::new();
    let mut n = 0;
    for r in batch.records(&mut scratch)? {
        let r = r?;
        let _ = r.headers().count();
        n += 1;
    }
    assert!(scratch.capacity() <= 2 * MAX_DECOMPRESSED_BYTES);
    Ok(n)
}

fn codec() -> impl Strategy<Value = Compression> {
    prop::sample::select(Compression::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = read_all(&bytes);
    }

    #[test]
    fn damaged_batches_are_errors_and_valid_ones_read_back(
        codec in codec(), n in 1usize..40, value_len in 0usize..200,
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        cut in any::<prop::sample::Index>(), do_cut in any::<bool>(),
    ) {
        let good = valid_batch(codec, n, value_len);
        prop_assert_eq!(read_all(&good), Ok(n));
        let mut bad = good.clone();
        for (at, x) in &flips {
            let i = at.index(bad.len());
            bad[i] ^= x;
        }
        if do_cut {
            bad.truncate(cut.index(bad.len()));
        }
        // The base offset (bytes 0-7) and leader epoch (12-15) are outside the CRC; anything else changed is
        // refused, and nothing panics either way.
        let outside_crc = flips.iter().all(|(at, _)| matches!(at.index(good.len()), 0..=7 | 12..=15));
        let result = read_all(&bad);
        if !do_cut && !flips.is_empty() && !outside_crc {
            prop_assert!(result.is_err(), "a changed batch was read: {:?}", result);
        }
    }

    #[test]
    fn forged_headers_with_a_valid_crc_are_bounded(
        codec in codec(), n in 1usize..20, count in any::<i32>(), length_delta in -70i32..70,
    ) {
        let mut b = valid_batch(codec, n, 50);
        b[57..61].copy_from_slice(&count.to_be_bytes());
        let len = i32::from_be_bytes([b[8], b[9], b[10], b[11]]).saturating_add(length_delta);
        b[8..12].copy_from_slice(&len.to_be_bytes());
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        // A forged count the bytes cannot hold is refused before any record is read.
        let _ = read_all(&b);
    }
}

/// Every record's offset and key by the key-only walk ([`log_core::kafka::Records::next_key`]), or its first
/// problem.
/// Offsets and keys read, or the first problem.
type Keys = Result<Vec<(i64, Option<Vec<u8>>)>, BatchProblem>;

fn keys_only(batch: &Batch<'_>, scratch: &mut Vec<u8>) -> Keys {
    let mut records = batch.records(scratch)?;
    let mut out = Vec::new();
    while let Some(r) = records.next_key() {
        let (offset, key) = r?;
        out.push((offset, key.map(<[u8]>::to_vec)));
    }
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The key-only walk pass 1 takes reads the offsets and keys the whole reading does wherever that reads
    /// the batch, never panics on records damaged under a valid CRC, and reads no record the whole reading
    /// does not also reach (it checks less of each record: its value and headers are pass 2's to check).
    #[test]
    fn the_key_only_walk_agrees_with_the_whole_reading(
        codec in codec(), n in 1usize..40, value_len in 0usize..200,
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
    ) {
        let mut b = valid_batch(codec, n, value_len);
        for (at, x) in &flips {
            let i = 61 + at.index(b.len() - 61);
            b[i] ^= x;
        }
        let crc = crc32c::crc32c(&b[21..]);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        let Ok(batch) = Batch::parse(&b) else { return Ok(()) };
        let mut scratch = Vec::new();
        let whole: Keys = batch
            .records(&mut scratch)
            .and_then(|rs| rs.map(|r| r.map(|r| (r.offset, r.key.map(<[u8]>::to_vec)))).collect());
        let keys = keys_only(&batch, &mut scratch);
        match whole {
            Ok(w) => prop_assert_eq!(keys, Ok(w)),
            Err(_) if flips.is_empty() => prop_assert!(false, "a valid batch did not read"),
            Err(_) => {}
        }
    }
}

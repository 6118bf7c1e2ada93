//! Opening a log after trouble: a torn active tail is cut, a corrupt closed segment is an error naming the
//! file and byte position, and an interrupted cleaning swap is completed or rolled back.

use std::sync::Arc;

use log_core::format::native::names::{FileKind, file_name};
use log_core::{CorruptKind, Error, Log, LogConfig, SegmentStore};
use storage_mem::MemStore;

/// A dense index (an entry per record), so the hint's cheap checks at open look only at the last record.
fn open(store: &Arc<MemStore>) -> Result<Log, Error> {
    Log::open(
        Arc::clone(store) as Arc<dyn SegmentStore>,
        log_core::OpenOptions::new(LogConfig { index_interval_bytes: 16, ..LogConfig::default() }),
    )
}

/// A copy of every file of `src`, with the bytes of file `flip.0` at `flip.1` inverted.
fn copy_store(src: &MemStore, flip: Option<(&str, usize)>) -> Arc<MemStore> {
    let dst = Arc::new(MemStore::new());
    for name in src.list().expect("list") {
        let from = src.open(&name).expect("open");
        let mut bytes = vec![0; from.len() as usize];
        from.read_at(0, &mut bytes).expect("read");
        if let Some((n, at)) = flip
            && n == name
        {
            bytes[at] ^= 0xff;
        }
        dst.create(&name).expect("create").append(&bytes).expect("append");
    }
    dst
}

fn three_segments() -> Arc<MemStore> {
    let store = Arc::new(MemStore::new());
    let log = open(&store).expect("open");
    for seg in 0..3u8 {
        for i in 0..4u8 {
            log.put(&[b'k', i], &[seg]).expect("put");
        }
        if seg < 2 {
            log.roll().expect("roll");
        }
    }
    store
}

#[test]
fn a_torn_tail_of_the_active_segment_is_cut_and_reported() -> Result<(), Error> {
    let store = three_segments();
    let active = file_name(8, FileKind::Log);
    let good_len = store.open(&active)?.len();
    // Half a frame: a crash in the middle of an append.
    store.open(&active)?.append(&[20, 0, 0, 0, 1, 2, 3])?;
    let log = open(&store)?;
    let torn = log.recovery_report().truncated_tail.clone().expect("reported");
    assert_eq!((torn.segment.as_str(), torn.position, torn.bytes), (active.as_str(), good_len, 7));
    assert!(matches!(torn.kind, CorruptKind::Truncated { .. }), "{:?}", torn.kind);
    assert_eq!(store.open(&active)?.len(), good_len);
    assert_eq!(log.next_offset(), 12);
    assert_eq!(log.put(b"new", b"x")?, 12);
    Ok(())
}

#[test]
fn garbage_after_the_last_record_is_cut() -> Result<(), Error> {
    let store = three_segments();
    let active = file_name(8, FileKind::Log);
    store.open(&active)?.append(&[0xAB; 100])?;
    let log = open(&store)?;
    assert!(log.recovery_report().truncated_tail.is_some());
    assert_eq!(log.next_offset(), 12);
    Ok(())
}

#[test]
fn a_flipped_byte_in_a_closed_segment_is_an_error_naming_file_and_position() {
    let src = three_segments();
    let name = file_name(4, FileKind::Log);
    let second_frame = {
        let seg = src.open(&name).expect("open");
        let mut head = [0u8; 4];
        seg.read_at(0, &mut head).expect("read");
        8 + u32::from_le_bytes(head) as usize
    };
    let expect_corrupt = |err: Error| match err {
        Error::Corrupt { segment, position, kind } => {
            assert_eq!((segment.as_str(), position), (name.as_str(), second_frame as u64));
            assert!(matches!(kind, CorruptKind::ChecksumMismatch { .. }), "{kind:?}");
        }
        other => panic!("wrong error {other}"),
    };
    // With its index hint in place open trusts the segment (no scan), but every read checks checksums.
    let store = copy_store(&src, Some((&name, second_frame + 12)));
    let log = open(&store).expect("a valid hint spares the scan");
    let err = log.snapshot().reader(0).find_map(Result::err).expect("corruption must not be skipped");
    expect_corrupt(err);
    drop(log);
    // Without the hint open scans the segment and refuses it.
    store.delete(&file_name(4, FileKind::Index)).expect("delete hint");
    expect_corrupt(open(&store).expect_err("corruption must not be skipped"));
    // The files are untouched: nothing stored is lost.
    assert!(store.list().expect("list").contains(&name));
}

/// Sets up the files a cleaning swap of segment 0 leaves at each of its steps, and checks what open does.
#[test]
fn an_interrupted_swap_is_rolled_back_before_the_commit_point() -> Result<(), Error> {
    let store = three_segments();
    // Crash while writing the cleaned copies: one `.cleaned` (half written), one already `.swap`.
    store.create(&file_name(0, FileKind::Cleaned))?.append(b"half")?;
    store.create(&file_name(4, FileKind::Swap))?.append(b"whatever")?;
    let log = open(&store)?;
    assert_eq!(log.recovery_report().cleaned_files_discarded, 2);
    assert_eq!(log.snapshot().reader(0).count(), 12, "the old segments stay");
    let names = store.list()?;
    assert!(names.iter().all(|n| !n.ends_with(".cleaned") && !n.ends_with(".swap")), "{names:?}");
    Ok(())
}

#[test]
fn an_interrupted_swap_is_completed_after_the_commit_point() -> Result<(), Error> {
    let src = three_segments();
    // The cleaned copy of segment 4 keeps only its last record; segment 0 was cleaned away (a removal marker).
    let seg4 = src.open(&file_name(4, FileKind::Log))?;
    let mut bytes = vec![0; seg4.len() as usize];
    seg4.read_at(0, &mut bytes)?;
    let mut pos = 0;
    let mut last = 0;
    while pos < bytes.len() {
        last = pos;
        pos += 8 + u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes")) as usize;
    }
    let store = copy_store(&src, None);
    store.create(&file_name(4, FileKind::Swap))?.append(&bytes[last..])?;
    store.create(&file_name(0, FileKind::Swap))?.append(&log_core::removal::encode(0, 4))?;
    // Crash after segment 0 was renamed `.deleted`.
    store.rename(&file_name(0, FileKind::Log), &file_name(0, FileKind::Deleted))?;
    let log = open(&store)?;
    assert_eq!(log.recovery_report().swaps_completed, 2);
    let snap = log.snapshot();
    let bases: Vec<u64> = snap.closed().iter().map(|s| s.base()).collect();
    assert_eq!(bases, vec![4]);
    let offsets: Vec<u64> = snap.reader(0).map(|r| r.map(|r| r.offset)).collect::<Result<_, _>>()?;
    assert_eq!(offsets, vec![7, 8, 9, 10, 11]);
    let names = store.list()?;
    assert!(names.iter().all(|n| n.ends_with(".log") || n.ends_with(".lcindex")), "{names:?}");
    Ok(())
}

#[test]
fn a_record_of_an_unknown_format_version_in_the_active_segment_is_refused_not_cut() -> Result<(), Error> {
    let store = three_segments();
    let active = file_name(8, FileKind::Log);
    // A well-formed frame with a correct checksum but format version 9.
    let mut body = vec![9u8, 0];
    body.extend_from_slice(&12u64.to_le_bytes());
    body.extend_from_slice(&0i64.to_le_bytes());
    body.extend_from_slice(&[0, 0]);
    let mut frame = (body.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&crc32c_of(&body).to_le_bytes());
    frame.extend_from_slice(&body);
    let len = store.open(&active)?.len();
    store.open(&active)?.append(&frame)?;
    match open(&store) {
        Err(Error::Corrupt { segment, position, kind: CorruptKind::UnknownVersion(9) }) => {
            assert_eq!((segment, position), (active.clone(), len));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(store.open(&active)?.len(), len + frame.len() as u64, "nothing was cut");
    Ok(())
}

/// CRC-32C (Castagnoli), bit by bit: an independent check of the codec's checksum.
fn crc32c_of(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn a_flipped_byte_in_the_middle_of_the_active_segment_is_refused_and_nothing_is_cut() {
    let store = three_segments();
    let active = file_name(8, FileKind::Log);
    let bytes = {
        let f = store.open(&active).expect("open");
        let mut b = vec![0; f.len() as usize];
        f.read_at(0, &mut b).expect("read");
        b
    };
    let second = 8 + u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
    let damaged = copy_store(&store, Some((&active, second + 12)));
    match open(&damaged) {
        Err(Error::CorruptNotTorn { segment, position, resumes_at, .. }) => {
            assert_eq!((segment.as_str(), position), (active.as_str(), second as u64));
            assert!(resumes_at > position);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(damaged.open(&active).expect("open").len(), bytes.len() as u64, "nothing was cut");
    let read_only = Log::open(
        Arc::clone(&damaged) as Arc<dyn SegmentStore>,
        log_core::OpenOptions::new(LogConfig::default()).read_only(true),
    );
    assert!(matches!(read_only, Err(Error::CorruptNotTorn { .. })), "{read_only:?}");
}

#[test]
fn a_hint_that_misstates_the_last_offset_is_not_trusted() {
    let store = three_segments();
    let hint = file_name(0, FileKind::Index);
    let f = store.open(&hint).expect("hint");
    let mut bytes = vec![0; f.len() as usize];
    f.read_at(0, &mut bytes).expect("read");
    // Claim segment 0 ends at offset 1 (it holds 0..=3), with a valid checksum: trusted, it would send a read
    // of offset 2 past segment 0.
    bytes[56..64].copy_from_slice(&1u64.to_le_bytes());
    let body = bytes.len() - 4;
    let crc = crc32c::crc32c(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    store.delete(&hint).expect("delete");
    store.create(&hint).expect("create").append(&bytes).expect("write");
    let log = open(&store).expect("open");
    assert_eq!(log.recovery_report().indexes_rebuilt, 1, "the hint was rejected and rebuilt");
    assert_eq!(log.read(2).expect("read").map(|r| r.offset), Some(2));
}

#[test]
fn a_swap_whose_offsets_run_into_the_next_segment_is_refused_before_anything_changes() {
    let src = three_segments();
    let store = copy_store(&src, None);
    // A "cleaned copy" of segment 0 holding segment 4's records as well: offsets 0..=7, but 4 is the next base.
    let mut swap = Vec::new();
    for name in [file_name(0, FileKind::Log), file_name(4, FileKind::Log)] {
        let f = src.open(&name).expect("open");
        let mut b = vec![0; f.len() as usize];
        f.read_at(0, &mut b).expect("read");
        swap.extend_from_slice(&b);
    }
    store.create(&file_name(0, FileKind::Swap)).expect("create").append(&swap).expect("write");
    let before = store.list().expect("list");
    match open(&store) {
        Err(Error::Corrupt { segment, kind: CorruptKind::OffsetBeyondNextSegment { next_base: 4, .. }, .. }) => {
            assert_eq!(segment, file_name(0, FileKind::Swap));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(store.list().expect("list"), before, "nothing was renamed or removed");
}

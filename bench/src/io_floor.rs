//! The disk's floor under a compaction: the partition read once and what is kept written once. No cleaner can
//! do less I/O than this on one machine, so a cleaner's seconds over it say how far from the speed of the disk
//! (and the page cache) it runs.
//!
//! Read: every closed segment's `.log` file mapped (by the file store, as a pass maps it) and its CRC-32C
//! taken over every byte (the check a pass makes of every batch it reads; a bare sum would be as fast and prove
//! nothing read). Write: `kept` bytes (copied
//! from the mapped segments, in order) into one file, a file store's bulk copy as a pass's output is
//! (`SegmentStore::create_copy`: past the page cache where the file system allows), then synced.
//! No parse, no map, no index.
//!
//! # Example
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let partition = dir.path().join("t-0");
//! std::fs::create_dir(&partition).unwrap();
//! // Two closed segments and the active one (which a pass never reads).
//! std::fs::write(partition.join("00000000000000000000.log"), vec![1u8; 4096]).unwrap();
//! std::fs::write(partition.join("00000000000000000100.log"), vec![2u8; 4096]).unwrap();
//! std::fs::write(partition.join("00000000000000000200.log"), vec![3u8; 4096]).unwrap();
//! let f = bench::io_floor::read_once_write_once(&partition, 5000, &dir.path().join("out")).unwrap();
//! assert_eq!((f.bytes_read, f.bytes_written), (8192, 5000));
//! ```

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Bytes handed to the file at a time.
const PIECE: usize = 512 << 10;

/// What the floor took.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IoFloor {
    /// Seconds reading (mapping and checking every byte).
    pub read_seconds: f64,
    /// Seconds writing the kept bytes and syncing them.
    pub write_seconds: f64,
    /// Bytes read: every closed segment's `.log`.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

impl IoFloor {
    /// Seconds in all.
    pub fn seconds(&self) -> f64 {
        self.read_seconds + self.write_seconds
    }
}

/// The closed segments' `.log` files of the partition directory `dir`, in offset order: every `.log` but the
/// one of the highest base offset (the active segment, which no pass reads).
///
/// # Errors
/// A directory that does not list, as text.
pub fn closed_logs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    // Kafka's names are the base offset in 20 digits: their order is the offsets'.
    logs.sort();
    logs.pop();
    Ok(logs)
}

/// The closed segments' `.log` files of the partition directory `dir` ([`closed_logs`]), mapped as a pass maps
/// them.
///
/// # Errors
/// A file that does not open or map, as text.
pub fn mapped_closed_logs(dir: &Path) -> Result<Vec<log_core::SegmentBytes>, String> {
    // Writable, as a compaction opens it (a read-only store reads its segments, never maps them); the
    // segments are only sealed (mapped), not changed, and the lock is on the directory, not a file in it.
    let store = storage_file::FileStore::open_existing(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let logs = closed_logs(dir)?;
    let mut maps = Vec::with_capacity(logs.len());
    for path in &logs {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let view = log_core::SegmentStore::open(&store, &name)
            .and_then(|s| s.seal().and_then(|()| s.view()))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        maps.push(view);
    }
    Ok(maps)
}

/// The floor over the partition directory `dir`, writing `kept` bytes (at most what it read) into a file in
/// the new directory `out` (created, then removed).
///
/// # Errors
/// A file that does not read or write, as text.
pub fn read_once_write_once(dir: &Path, kept: u64, out: &Path) -> Result<IoFloor, String> {
    let t = Instant::now();
    let maps = mapped_closed_logs(dir)?;
    let (mut bytes_read, mut crc) = (0u64, 0u32);
    for view in &maps {
        crc = crc32c::crc32c_append(crc, view);
        bytes_read += view.len() as u64;
    }
    std::hint::black_box(crc);
    let read_seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let failed = |e: &dyn std::fmt::Display| format!("{}: {e}", out.display());
    let out_store = storage_file::FileStore::open(out).map_err(|e| failed(&e))?;
    let file = log_core::SegmentStore::create_copy(&out_store, "floor.log").map_err(|e| failed(&e))?;
    let mut left = kept.min(bytes_read);
    for map in &maps {
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(map.len());
        for piece in map[..n].chunks(PIECE) {
            file.append(piece).map_err(|e| failed(&e))?;
        }
        left -= n as u64;
    }
    file.sync().map_err(|e| failed(&e))?;
    let write_seconds = t.elapsed().as_secs_f64();
    drop((file, out_store));
    let _ = std::fs::remove_dir_all(out);
    Ok(IoFloor { read_seconds, write_seconds, bytes_read, bytes_written: kept.min(bytes_read) })
}

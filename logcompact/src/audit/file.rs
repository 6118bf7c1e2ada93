//! The audit file of one broker: what each of its partition replicas holds, as a consumer would rebuild it.
//!
//! Layout (integers little-endian):
//! ```text
//! "LCAUDIT\0"  u32 version (1)
//! u32 n, n bytes: the broker's header (JSON: BrokerHeader)
//! per partition, in name order:
//!   u8 1, u32 n, n bytes: its header (JSON: PartitionHeader), u64 entries, entries x 24 bytes,
//!   u64 xxh3-64 of the header's bytes and the entries' bytes
//!   (a summary, `audit --summary`, holds its key ranges' hashes in the header and no entries)
//! u8 0, u64 partitions: the end (a file without it was cut short)
//! ```
//! A reader checks the magic, the version, each partition's checksum and the end, so a truncated, damaged or
//! other-version file is an error naming the file and where, never a partition that seems to agree.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::digest::{ENTRY_BYTES, Entry};
use kafka_records::kraft::image::PartitionState;

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"LCAUDIT\0";
/// The layout's version.
pub const VERSION: u32 = 1;
/// The largest header read back (a header is a few hundred bytes; a bigger one is damage).
const MAX_HEADER: u32 = 64 << 20;

/// What the file says of the broker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BrokerHeader {
    /// The broker's `node.id` (`meta.properties`).
    pub node_id: Option<i32>,
    /// The cluster's id (`meta.properties`).
    pub cluster_id: Option<String>,
    /// Its log directories audited.
    pub log_dirs: Vec<PathBuf>,
    /// When the audit began (ms since the epoch).
    pub written_ms: i64,
    /// The tool that wrote it.
    pub tool: String,
    /// Each partition's replicas and leader as this broker's metadata log says, by `<topic>-<partition>`.
    pub metadata: std::collections::BTreeMap<String, PartitionState>,
    /// Where that metadata came from (or why none was read).
    pub metadata_source: String,
}

/// What the file says of one partition replica.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PartitionHeader {
    /// `<topic>-<partition>`.
    pub name: String,
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The topic id in `partition.metadata`.
    pub topic_id: Option<String>,
    /// The partition directory.
    pub dir: PathBuf,
    /// The log start offset.
    pub log_start: u64,
    /// The log end offset.
    pub log_end: u64,
    /// The high watermark (`replication-offset-checkpoint`), if recorded.
    pub high_watermark: Option<u64>,
    /// The last stable offset: what `read_committed` reads up to now (capped by the high watermark; the digest
    /// covers up to the first open transaction, and the comparison stops at the lowest of these).
    pub last_stable_offset: u64,
    /// Open transactions: (producer id, first offset).
    pub open_transactions: Vec<(i64, u64)>,
    /// The cleaner checkpoint (`cleaner-offset-checkpoint`; 0 when none).
    pub cleaner_checkpoint: u64,
    /// `leader-epoch-checkpoint`: (epoch, start offset).
    pub leader_epochs: Vec<(i32, u64)>,
    /// Records read below the last stable offset (aborted ones and markers left out).
    pub records: u64,
    /// Of those, records without a key (not in the digest).
    pub keyless: u64,
    /// Records of aborted transactions passed over.
    pub aborted_records: u64,
    /// Distinct keys (entries).
    pub keys: u64,
    /// Why the replica could not be read, when it could not (its entries are then none).
    pub error: Option<String>,
    /// Set by `audit --summary`: its live keys by key-hash range ([`super::digest::RangeHashes`]), and no
    /// entries follow the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranges: Option<super::digest::RangeHashes>,
}

impl PartitionHeader {
    /// Entries that follow the header: every key's, or none in a summary.
    pub fn entries(&self) -> u64 {
        if self.ranges.is_some() { 0 } else { self.keys }
    }
}

/// Why an audit file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum AuditFileError {
    /// A read or write failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The file is not an audit file of this version, or is damaged.
    #[error("{} at byte {at}: {what}", path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// Where.
        at: u64,
        /// What is wrong.
        what: String,
    },
}

/// Where a partition's entries go, one at a time, in key-hash order.
pub type EntrySink<'s> = dyn FnMut(Entry) -> io::Result<()> + 's;

/// Writes an audit file, one partition after another.
#[derive(Debug)]
pub struct AuditWriter {
    w: BufWriter<File>,
    path: PathBuf,
    partitions: u64,
}

fn json_bytes<T: Serialize>(v: &T) -> Vec<u8> {
    // A header is plain data (strings, numbers, lists): serde_json cannot fail on it.
    serde_json::to_vec(v).unwrap_or_default()
}

impl AuditWriter {
    /// Starts the file at `path` (written whole, then renamed into place by [`AuditWriter::finish`]).
    ///
    /// # Errors
    /// [`AuditFileError::Io`].
    pub fn create(path: &Path, broker: &BrokerHeader) -> Result<AuditWriter, AuditFileError> {
        let io = |source| AuditFileError::Io { path: path.to_path_buf(), source };
        let file = File::create(path).map_err(io)?;
        let mut w = AuditWriter { w: BufWriter::with_capacity(1 << 16, file), path: path.to_path_buf(), partitions: 0 };
        let header = json_bytes(broker);
        w.put(MAGIC)?;
        w.put(&VERSION.to_le_bytes())?;
        w.put(&u32::try_from(header.len()).unwrap_or(u32::MAX).to_le_bytes())?;
        w.put(&header)?;
        Ok(w)
    }

    fn put(&mut self, b: &[u8]) -> Result<(), AuditFileError> {
        self.w.write_all(b).map_err(|source| AuditFileError::Io { path: self.path.clone(), source })
    }

    /// Writes a partition: its header, then `entries` calls `each` with a sink for its entries in key-hash
    /// order, returning how many.
    ///
    /// # Errors
    /// [`AuditFileError::Io`]; what `entries` returns.
    pub fn partition(
        &mut self,
        header: &PartitionHeader,
        entries: &mut dyn FnMut(&mut EntrySink<'_>) -> io::Result<u64>,
    ) -> Result<(), AuditFileError> {
        let json = json_bytes(header);
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&json);
        self.put(&[1])?;
        self.put(&u32::try_from(json.len()).unwrap_or(u32::MAX).to_le_bytes())?;
        self.put(&json)?;
        self.put(&header.entries().to_le_bytes())?;
        let w = &mut self.w;
        let written = entries(&mut |e| {
            let b = e.to_bytes();
            hasher.update(&b);
            w.write_all(&b)
        })
        .map_err(|source| AuditFileError::Io { path: self.path.clone(), source })?;
        if written != header.entries() {
            return Err(AuditFileError::Bad {
                path: self.path.clone(),
                at: 0,
                what: format!("{}: {written} entries written, {} announced", header.name, header.entries()),
            });
        }
        self.put(&hasher.digest().to_le_bytes())?;
        self.partitions += 1;
        Ok(())
    }

    /// Ends the file and makes it durable.
    ///
    /// # Errors
    /// [`AuditFileError::Io`].
    pub fn finish(mut self) -> Result<(), AuditFileError> {
        self.put(&[0])?;
        let n = self.partitions;
        self.put(&n.to_le_bytes())?;
        let io = |source| AuditFileError::Io { path: self.path.clone(), source };
        self.w.flush().map_err(io)?;
        self.w.get_ref().sync_all().map_err(io)
    }
}

/// Reads an audit file, one partition after another.
#[derive(Debug)]
pub struct AuditReader {
    r: BufReader<File>,
    path: PathBuf,
    at: u64,
    /// The broker's header.
    pub broker: BrokerHeader,
    partitions: u64,
    ended: bool,
}

/// A partition being read: its header; its entries follow ([`AuditReader::next_entry`]).
pub struct PartitionReading {
    /// Its header.
    pub header: PartitionHeader,
    left: u64,
    hasher: xxhash_rust::xxh3::Xxh3,
}

impl std::fmt::Debug for PartitionReading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionReading").field("header", &self.header).field("left", &self.left).finish()
    }
}

impl AuditReader {
    /// Opens the audit file `path` and reads its broker header.
    ///
    /// # Errors
    /// [`AuditFileError`]: not an audit file, another version, cut short.
    pub fn open(path: &Path) -> Result<AuditReader, AuditFileError> {
        let file = File::open(path).map_err(|source| AuditFileError::Io { path: path.to_path_buf(), source })?;
        let mut r = AuditReader {
            r: BufReader::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            at: 0,
            broker: BrokerHeader::default(),
            partitions: 0,
            ended: false,
        };
        let mut magic = [0u8; 8];
        r.exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(r.bad("not a logcompact audit file (no LCAUDIT magic)".into()));
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(r.bad(format!("audit file version {version}; this build reads version {VERSION}")));
        }
        let json = r.header_bytes()?;
        r.broker =
            serde_json::from_slice(&json).map_err(|e| r.bad(format!("a broker header that does not parse: {e}")))?;
        Ok(r)
    }

    fn bad(&self, what: String) -> AuditFileError {
        AuditFileError::Bad { path: self.path.clone(), at: self.at, what }
    }

    fn exact(&mut self, b: &mut [u8]) -> Result<(), AuditFileError> {
        match self.r.read_exact(b) {
            Ok(()) => {
                self.at += b.len() as u64;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(self.bad(
                "cut short (the file ends before its end mark: an audit still running, or a copy cut off)".into(),
            )),
            Err(source) => Err(AuditFileError::Io { path: self.path.clone(), source }),
        }
    }

    fn u32(&mut self) -> Result<u32, AuditFileError> {
        let mut b = [0u8; 4];
        self.exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, AuditFileError> {
        let mut b = [0u8; 8];
        self.exact(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn header_bytes(&mut self) -> Result<Vec<u8>, AuditFileError> {
        let n = self.u32()?;
        if n > MAX_HEADER {
            return Err(self.bad(format!("a header of {n} bytes (at most {MAX_HEADER})")));
        }
        let mut json = vec![0u8; n as usize];
        self.exact(&mut json)?;
        Ok(json)
    }

    /// The next partition's header, or `None` after the last (the end mark checked).
    ///
    /// # Errors
    /// [`AuditFileError`].
    pub fn next_partition(&mut self) -> Result<Option<PartitionReading>, AuditFileError> {
        if self.ended {
            return Ok(None);
        }
        let mut tag = [0u8; 1];
        self.exact(&mut tag)?;
        match tag[0] {
            0 => {
                let n = self.u64()?;
                if n != self.partitions {
                    return Err(
                        self.bad(format!("the end mark counts {n} partitions, the file holds {}", self.partitions))
                    );
                }
                self.ended = true;
                Ok(None)
            }
            1 => {
                let json = self.header_bytes()?;
                let header: PartitionHeader = serde_json::from_slice(&json)
                    .map_err(|e| self.bad(format!("a partition header that does not parse: {e}")))?;
                let left = self.u64()?;
                if left != header.entries() {
                    return Err(self.bad(format!(
                        "{}: {left} entries, its header says {}",
                        header.name,
                        header.entries()
                    )));
                }
                let mut hasher = xxhash_rust::xxh3::Xxh3::new();
                hasher.update(&json);
                self.partitions += 1;
                if left == 0 {
                    let sum = self.u64()?;
                    if sum != hasher.digest() {
                        return Err(
                            self.bad(format!("{}: its checksum does not match: the file is damaged", header.name))
                        );
                    }
                }
                Ok(Some(PartitionReading { header, left, hasher }))
            }
            t => Err(self.bad(format!("a section of unknown kind {t}"))),
        }
    }

    /// The next entry of the partition being read, or `None` after its last (its checksum checked).
    ///
    /// # Errors
    /// [`AuditFileError`]: cut short, or the checksum differs.
    pub fn next_entry(&mut self, p: &mut PartitionReading) -> Result<Option<Entry>, AuditFileError> {
        if p.left == 0 {
            return Ok(None);
        }
        let mut b = [0u8; ENTRY_BYTES];
        self.exact(&mut b)?;
        p.hasher.update(&b);
        p.left -= 1;
        if p.left == 0 {
            let sum = self.u64()?;
            if sum != p.hasher.digest() {
                return Err(self.bad(format!("{}: its checksum does not match: the file is damaged", p.header.name)));
            }
        }
        Ok(Some(Entry::from_bytes(&b)))
    }
}

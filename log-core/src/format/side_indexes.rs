//! The index files a segment writer builds beside the batches of its format, entry by entry: Kafka's
//! `.index` and `.timeindex`; the native format builds none (its hint is written from the finished segment).
//! The core's writers hold a [`SideIndexes`] without knowing which format's files it builds; each format with
//! side indexes is a variant of it and of [`SideIndexFiles`].

use super::kafka::index::KafkaIndexes;
use super::{Format, Stamp};
use crate::error::Result;
use crate::names::Stage;
use crate::storage::SegmentStore;

/// A finished segment's side index files' bytes, by format (the native format has none).
#[derive(Debug, Clone)]
pub enum SideIndexFiles {
    /// Kafka's `.index` and `.timeindex`.
    Kafka(super::kafka::index::KafkaIndexFiles),
}

/// The builder of a segment's side index files, by format.
#[derive(Debug, Clone)]
pub(crate) enum SideIndexes {
    /// Kafka's `.index` and `.timeindex`, an entry every `index.interval.bytes`.
    Kafka(KafkaIndexes),
}

impl SideIndexes {
    /// The builder for a segment of `format` based at `base`, if the format keeps side indexes.
    pub(crate) fn new(format: Format, base: u64, index_interval: u64) -> Option<SideIndexes> {
        match format {
            Format::Native => None,
            Format::Kafka => Some(SideIndexes::Kafka(KafkaIndexes::new(base, index_interval))),
        }
    }

    /// Notes a batch written at byte `pos`, `len` bytes long.
    #[inline]
    pub(crate) fn on_batch(&mut self, stamp: &Stamp, pos: u64, len: u64) {
        let SideIndexes::Kafka(k) = self;
        k.on_batch(stamp, pos, len);
    }

    /// The finished files' bytes.
    pub(crate) fn finish(self) -> SideIndexFiles {
        let SideIndexes::Kafka(k) = self;
        SideIndexFiles::Kafka(k.finish())
    }
}

/// Writes a finished segment's side index files under `stage` (see [`SideIndexes`]).
///
/// # Errors
/// [`crate::Error::Io`] naming the file.
pub(crate) fn write_side_indexes(
    store: &dyn SegmentStore,
    base: u64,
    files: &SideIndexFiles,
    stage: Stage,
) -> Result<()> {
    let SideIndexFiles::Kafka(files) = files;
    super::kafka::files::write_indexes(store, base, files, stage)
}

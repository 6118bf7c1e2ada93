//! The index files a segment writer builds beside the batches of its format, entry by entry: Kafka's
//! `.index` and `.timeindex`; the native format builds none (its hint is written from the finished segment).
//! The core's writers hold a [`SideIndexes`] without knowing which format's files it builds.

use super::kafka::index::KafkaIndexes;
use super::{Format, Stamp};
use crate::error::Result;
use crate::names::Stage;
use crate::storage::SegmentStore;

/// A finished segment's side index files' bytes.
pub use super::kafka::index::KafkaIndexFiles as SideIndexFiles;

/// The builder of a segment's side index files.
#[derive(Debug, Clone)]
pub(crate) struct SideIndexes(KafkaIndexes);

impl SideIndexes {
    /// The builder for a segment of `format` based at `base`, if the format keeps side indexes.
    pub(crate) fn new(format: Format, base: u64, index_interval: u64) -> Option<SideIndexes> {
        match format {
            Format::Native => None,
            Format::Kafka => Some(SideIndexes(KafkaIndexes::new(base, index_interval))),
        }
    }

    /// Notes a batch written at byte `pos`, `len` bytes long.
    #[inline]
    pub(crate) fn on_batch(&mut self, stamp: &Stamp, pos: u64, len: u64) {
        self.0.on_batch(stamp, pos, len);
    }

    /// The finished files' bytes.
    pub(crate) fn finish(self) -> SideIndexFiles {
        self.0.finish()
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
    super::kafka::files::write_indexes(store, base, files, stage)
}

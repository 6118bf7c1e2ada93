//! Finding the damaged byte ranges of one segment, in either format, in bounded memory: batches are read in
//! windows ([`SegmentScan`]), and from a bad batch the search for the next valid one is linear in the bytes
//! after it ([`next_valid_batch`], with its checksum budget).

use std::sync::Arc;

use crate::error::{CorruptKind, Error, Result};
use crate::format::Format;
use crate::names::MAX_OFFSET;
use crate::scan::{SegmentScan, SegmentSource};
use crate::segment::Stamp;
use crate::storage::Segment;
use crate::tail::{Found, next_valid_batch};

/// What a scan of one segment found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Damage {
    /// `[start, end)` byte ranges holding no valid batch that continues the segment's offsets.
    pub ranges: Vec<(u64, u64)>,
    /// For each range, the offsets around it: one past the last valid record before it, and one before the
    /// first valid batch after it in this segment (`None` when none follows here; [`Damage::dropped`] then
    /// bounds it by the next segment).
    pub around: Vec<(u64, Option<u64>)>,
    /// Valid batches kept.
    pub batches: u64,
    /// Records in them.
    pub records: u64,
    /// Offset of the first valid batch's first record.
    pub first: Option<u64>,
    /// Offset of the last valid batch's last record.
    pub last: Option<u64>,
    /// Where the segment's data ends: its length, or where a Kafka zero fill (`log.preallocate`) starts.
    pub data_end: u64,
    /// Why part of the segment cannot be judged (data of another format version, damage crafted past the
    /// search's budget), with the position: nothing may be cut there.
    pub cannot_judge: Option<(u64, String)>,
}

/// Scans the segment `name` based at `base` (read through `file`, never mapped), whose first batch must lie
/// above `floor` (the last offset of the segment before it).
///
/// # Errors
/// [`Error::Io`] from a read.
pub(crate) fn scan(
    format: Format,
    base: u64,
    name: &str,
    file: &Arc<dyn Segment>,
    floor: Option<u64>,
) -> Result<Damage> {
    let len = file.len();
    let source = SegmentSource::Reads(Arc::clone(file));
    let mut damage = Damage { data_end: len, ..Damage::default() };
    let mut pos = 0u64;
    // A batch's records read back as `check` reads them (a compressed batch whose records do not decode is damage
    // to both: repair never contradicts check).
    let mut scratch = Vec::new();
    // The range whose end offset the next valid batch tells.
    let mut pending: Option<usize> = None;
    'segment: while pos < len {
        let mut scan = SegmentScan::new(format, name, &source, pos, len, true);
        // Where the batches stop being good, and why; `None` once the scan reached the end.
        let mut bad: Option<(u64, CorruptKind)> = None;
        'scan: while let Some(window) = scan.next_window()? {
            for item in window.batches() {
                match item {
                    Ok(placed) => {
                        if let Err(kind) = records_read(&placed.batch, &mut scratch) {
                            bad = Some((placed.position, kind));
                            break 'scan;
                        }
                        let stamp = Stamp::of(&placed.batch);
                        let above = damage.last.or(floor).max(base.checked_sub(1));
                        if above.is_some_and(|f| stamp.base_offset <= f) || stamp.last_offset >= MAX_OFFSET {
                            let previous = above.unwrap_or(0);
                            bad = Some((
                                placed.position,
                                CorruptKind::OffsetNotIncreasing { previous, found: stamp.base_offset },
                            ));
                            break 'scan;
                        }
                        if let Some(i) = pending.take()
                            && let Some(around) = damage.around.get_mut(i)
                        {
                            around.1 = Some(stamp.base_offset.saturating_sub(1));
                        }
                        damage.batches += 1;
                        damage.records += stamp.records;
                        damage.first.get_or_insert(stamp.base_offset);
                        damage.last = Some(stamp.last_offset);
                    }
                    Err(Error::Corrupt { position, kind, .. }) => {
                        bad = Some((position, kind));
                        break 'scan;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        if let Some(at) = scan.zero_fill() {
            damage.data_end = at;
            break;
        }
        let Some((at, kind)) = bad else { break };
        drop(scan);
        if kind.is_other_format() {
            damage.cannot_judge = Some((at, format!("{kind}: data of another format version is never cut")));
            break;
        }
        let above = damage.last.or(floor).max(base.checked_sub(1));
        let first_dropped = above.map_or(0, |a| a.saturating_add(1));
        let read_at = |p: u64, out: &mut [u8]| file.read_at(p, out);
        match next_valid_batch(format, &read_at, at + 1, len, above).map_err(Error::io("read", name))? {
            Found::At(resumes) => {
                damage.ranges.push((at, resumes));
                damage.around.push((first_dropped, None));
                pending = Some(damage.around.len() - 1);
                pos = resumes;
            }
            Found::None => {
                damage.ranges.push((at, len));
                damage.around.push((first_dropped, None));
                break 'segment;
            }
            Found::TooMany => {
                damage.cannot_judge =
                    Some((at, format!("{kind}, followed by more plausible batch starts than a search may check")));
                break 'segment;
            }
        }
    }
    Ok(damage)
}

impl Damage {
    /// The offsets each range held, as far as the valid records around it tell: a range that no valid batch
    /// of its segment follows runs to the base of `next_base` (the next segment), or to the end of the log
    /// when there is none.
    pub(crate) fn dropped(&self, next_base: Option<u64>) -> Vec<super::DroppedOffsets> {
        self.around
            .iter()
            .map(|&(first, last)| {
                let last = last.or_else(|| next_base.map(|b| b.saturating_sub(1)));
                match last {
                    Some(l) if l >= first => super::DroppedOffsets {
                        first: Some(first),
                        last: Some(l),
                        records_at_most: Some(l - first + 1),
                    },
                    // The valid records on both sides have adjacent offsets: bytes, but no record, go.
                    Some(_) => super::DroppedOffsets { first: None, last: None, records_at_most: Some(0) },
                    None => super::DroppedOffsets { first: Some(first), last: None, records_at_most: None },
                }
            })
            .collect()
    }
}

/// Reads every record of `batch` (decompressing it), as `check` does: the first error.
fn records_read(batch: &crate::BatchRef<'_>, scratch: &mut Vec<u8>) -> std::result::Result<(), CorruptKind> {
    for record in batch.records(scratch)? {
        record?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::test_frames as frames;

    /// A segment read from memory.
    #[derive(Debug)]
    struct Bytes(Vec<u8>);

    impl Segment for Bytes {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn append(&self, _: &[u8]) -> std::io::Result<u64> {
            Err(std::io::ErrorKind::Unsupported.into())
        }
        fn read_at(&self, pos: u64, out: &mut [u8]) -> std::io::Result<()> {
            let start = usize::try_from(pos).map_err(|_| std::io::ErrorKind::InvalidInput)?;
            out.copy_from_slice(self.0.get(start..start + out.len()).ok_or(std::io::ErrorKind::UnexpectedEof)?);
            Ok(())
        }
        fn truncate(&self, _: u64) -> std::io::Result<()> {
            Err(std::io::ErrorKind::Unsupported.into())
        }
        fn sync(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn seal(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn is_sealed(&self) -> bool {
            true
        }
        fn view(&self) -> std::io::Result<crate::storage::SegmentBytes> {
            Err(std::io::ErrorKind::Unsupported.into())
        }
        fn file_id(&self) -> u64 {
            0
        }
    }

    fn file(bytes: &[u8]) -> Arc<dyn Segment> {
        Arc::new(Bytes(bytes.to_vec()))
    }

    #[test]
    fn damage_between_valid_frames_is_one_range_and_the_rest_is_kept() {
        let good = frames(0..10);
        let one = good.len() / 10;
        let mut bytes = good.clone();
        bytes[3 * one + 5] ^= 0xff;
        let d = scan(Format::Native, 0, "s", &file(&bytes), None).expect("scans");
        assert_eq!(d.ranges, [(3 * one as u64, 4 * one as u64)]);
        assert_eq!((d.batches, d.first, d.last), (9, Some(0), Some(9)));
        // Garbage at the end runs to the end.
        let mut bytes = good;
        bytes.extend_from_slice(&[0xAB; 40]);
        let d = scan(Format::Native, 0, "s", &file(&bytes), None).expect("scans");
        assert_eq!(d.ranges, [(10 * one as u64, 10 * one as u64 + 40)]);
    }

    #[test]
    fn a_frame_whose_offset_goes_back_is_damage() {
        let mut bytes = frames(0..3);
        bytes.extend(frames([1]));
        bytes.extend(frames([3, 4]));
        let one = frames([0]).len() as u64;
        let d = scan(Format::Native, 0, "s", &file(&bytes), None).expect("scans");
        assert_eq!(d.ranges, [(3 * one, 4 * one)]);
        assert_eq!(d.last, Some(4));
        let d = scan(Format::Native, 0, "s", &file(&frames(5..7)), Some(5)).expect("scans");
        assert_eq!(d.ranges.len(), 1, "the first frame must lie above the segment before: {d:?}");
    }
}

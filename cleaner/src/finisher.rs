//! Pass 2's groups copied by one thread while a helper finishes the group before: writes its last bytes, syncs
//! it, writes and syncs its index files. A sync waits for the disk (on a virtual machine, for the host to
//! flush: 0.15-0.8 s a gigabyte-sized group), so a thread that finished each group itself sat idle for it
//! between groups; with the helper the wait overlaps the next group's copy. The helper takes one group at a
//! time (a rendezvous channel): a thread waits for it only when the group before is still being synced, and
//! at most one finished copy (its write buffer) is held besides the one being copied.
//!
//! Durability is unchanged: every output is synced by its finish, and the pass commits only after every
//! finish has returned.

use std::sync::Arc;
use std::sync::mpsc::sync_channel;

use log_core::{Cleaning, GroupCopy, Replacement, SealedSegment};

use crate::error::{Error, Result};
use crate::keep::CopyCounts;
use crate::pace::{Pace, panic_message};
use crate::pass2::{Buffers, CopyContext, copy_segments};

/// Copies the groups `next_group` hands out (indexes into `groups`, until it gives `None`), each finished on a
/// helper thread while the next is copied. Returns each group's replacement with its index (none for a group
/// left as it was).
///
/// # Errors
/// A finish's or the copy's error (after a finish's the helper takes no more groups, and this thread stops at
/// the next hand-off, or sooner on the poisoned log); of two, the one that is not the log's poisoning by the
/// other, else the finish's.
pub(crate) fn copy_and_finish(
    cleaning: &Cleaning<'_>,
    groups: &[Vec<Arc<SealedSegment>>],
    mut next_group: impl FnMut() -> Option<usize>,
    cx: &CopyContext<'_>,
    bufs: &mut Buffers,
    counts: &mut CopyCounts,
    pace: &mut Pace<'_>,
) -> Result<Vec<(usize, Replacement)>> {
    std::thread::scope(|scope| {
        let (to_helper, finishing) = sync_channel::<(usize, GroupCopy<'_>)>(0);
        let helper = scope.spawn(move || -> Result<Vec<(usize, Replacement)>> {
            let mut done = Vec::new();
            for (i, copy) in finishing {
                if let Some(r) = copy.finish()? {
                    done.push((i, r));
                }
            }
            Ok(done)
        });
        let copied = (|| -> Result<()> {
            while let Some(i) = next_group() {
                let Some(group) = groups.get(i) else { break };
                let mut copy = cleaning.copy(group);
                copy_segments(group, cx, bufs, counts, pace, &mut copy)?;
                if to_helper.send((i, copy)).is_err() {
                    // The helper stopped on a finish's error, which is the pass's.
                    break;
                }
            }
            Ok(())
        })();
        drop(to_helper);
        let finished = helper.join().unwrap_or_else(|p| Err(Error::Panicked { message: panic_message(&*p) }));
        match (finished, copied) {
            (Ok(done), Ok(())) => Ok(done),
            (Err(e), Ok(())) | (Ok(_), Err(e)) => Err(e),
            // The failure, not its consequence: a failed step poisons the log, and the other thread's next
            // step then fails as poisoned. Else the helper's, about the earlier group.
            (Err(finish), Err(copy)) => Err(if is_poisoned(&finish) { copy } else { finish }),
        }
    })
}

fn is_poisoned(e: &Error) -> bool {
    matches!(e, Error::Log(log_core::Error::Poisoned))
}

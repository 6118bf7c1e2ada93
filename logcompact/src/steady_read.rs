//! Reading a directory a running broker may be changing: an open for reading is taken from a directory whose
//! names did not change while it was read, or read again.
//!
//! A reading command takes no lock, so a broker can rename files while it lists and opens them: its cleaner
//! renames a `.cleaned` copy to `.swap`, the segments it replaces to `.deleted`, then the `.swap` to `.log`. A
//! directory listed in the middle of that (a listing is not atomic against renames) can show a `.swap` without
//! the segments it replaces, which an open rightly refuses as damage a cleaning pass never leaves, and a read
//! that succeeds can have missed a segment renamed under it. So the names are listed before and after each
//! attempt; when they differ the attempt is made again, a few times ([`ATTEMPTS`]) (a check only when it
//! failed: [`check_while_still`]). A directory that stays
//! the same gives the first attempt's answer, error or not: damage found in a still directory is damage.

use std::path::Path;
use std::time::Duration;

use crate::look::Listing;

/// Attempts at most, while the directory keeps changing under them.
pub(crate) const ATTEMPTS: usize = 4;

/// The pause before another attempt: long enough for a broker to finish a swap's renames.
const PAUSE: Duration = Duration::from_millis(100);

/// `open` of `dir`, made again while the directory's names change during it (at most [`ATTEMPTS`] times; the last
/// attempt's answer stands).
pub(crate) fn read_while_still<T, E>(dir: &Path, open: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    read_again_while(dir, open, |_| true)
}

/// `check` of `dir`, made again only when it failed while the directory's names changed during it (at most
/// [`ATTEMPTS`] times; the last attempt's answer stands). A check reads every record, so one that passed
/// stands even if the broker rolled or swapped segments meanwhile (what it read was whole, and another read
/// of a partition that keeps rolling would find it changed again); one that failed may have met a swap's
/// renames half done, which a still directory never shows.
pub(crate) fn check_while_still<T, E>(dir: &Path, check: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    read_again_while(dir, check, Result::is_err)
}

/// `read` of `dir`, made again while its answer is one `worth_again` accepts and the directory's names changed
/// during it, at most [`ATTEMPTS`] times.
fn read_again_while<T, E>(
    dir: &Path,
    mut read: impl FnMut() -> Result<T, E>,
    worth_again: impl Fn(&Result<T, E>) -> bool,
) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        let before = sorted_names(dir);
        let result = read();
        if attempt >= ATTEMPTS || !worth_again(&result) || sorted_names(dir) == before {
            return result;
        }
        attempt += 1;
        std::thread::sleep(PAUSE);
    }
}

fn sorted_names(dir: &Path) -> Vec<String> {
    let mut names = Listing::read(dir).names().to_vec();
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `run` answers with `attempt` as the read (given its attempt's number, from 1), and the attempts made.
    fn attempts<T, E>(
        run: impl FnOnce(&mut dyn FnMut() -> Result<T, E>) -> Result<T, E>,
        mut attempt: impl FnMut(usize) -> Result<T, E>,
    ) -> (Result<T, E>, usize) {
        let mut calls = 0;
        let got = run(&mut || {
            calls += 1;
            attempt(calls)
        });
        (got, calls)
    }

    /// Renames the directory's segment as a broker's swap does with a segment it replaces.
    fn a_swap_half_done(dir: &Path) {
        let segment = dir.join("00000000000000000000.log");
        std::fs::rename(&segment, segment.with_extension("log.deleted")).expect("rename");
    }

    #[test]
    fn a_directory_changed_during_an_open_is_read_again_and_a_still_one_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = |read: &mut dyn FnMut() -> Result<&'static str, usize>| read_while_still(dir.path(), read);
        std::fs::write(dir.path().join("00000000000000000000.log"), b"").expect("write");
        // The first attempt sees a rename half done (and fails); the directory changed, so it is read again.
        let got = attempts(open, |n| {
            if n == 1 {
                a_swap_half_done(dir.path());
                return Err(0);
            }
            Ok("read")
        });
        assert_eq!(got, (Ok("read"), 2));
        // A still directory: its error stands, found once.
        assert_eq!(attempts(open, |_| Err(7)), (Err(7), 1));
        // A directory that never stops changing: the last attempt's answer, after `ATTEMPTS`.
        let got = attempts(open, |n| {
            std::fs::write(dir.path().join(format!("{n:020}.log")), b"").expect("write");
            Err(n)
        });
        assert_eq!(got, (Err(ATTEMPTS), ATTEMPTS));
    }

    #[test]
    fn a_check_is_made_again_only_when_it_failed_while_the_directory_changed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let check = |read: &mut dyn FnMut() -> Result<&'static str, &'static str>| check_while_still(dir.path(), read);
        std::fs::write(dir.path().join("00000000000000000000.log"), b"").expect("write");
        // Failed while a swap's renames went on: checked again, and the second check stands.
        let got = attempts(check, |n| {
            if n == 1 {
                a_swap_half_done(dir.path());
                return Err("a swap without its segments");
            }
            Ok("intact")
        });
        assert_eq!(got, (Ok("intact"), 2));
        // Passed while the directory changed (a broker rolled a segment): the pass stands, read once.
        let got = attempts(check, |n| {
            std::fs::write(dir.path().join(format!("{n:020}.log")), b"").expect("write");
            Ok("intact")
        });
        assert_eq!(got, (Ok("intact"), 1));
        // Failed in a still directory: damage, found once.
        assert_eq!(attempts(check, |_| Err("damage")), (Err("damage"), 1));
    }
}

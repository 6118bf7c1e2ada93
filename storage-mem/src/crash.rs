//! A crash-simulating [`SegmentStore`]: a page cache over a disk, for crash-consistency tests.
//!
//! [`CrashStore`] keeps two images of everything:
//!
//! - every file has a *live* image (what the running process sees: appends and truncations apply at once)
//!   and a *durable* image (what a crash leaves on disk); [`Segment::sync`] copies live to durable;
//! - the directory has *live* names and *durable* names (name to file identity); create, rename and delete
//!   change the live names at once and [`SegmentStore::sync_dir`] copies live names to durable names.
//!
//! So a file whose name was never synced with `sync_dir` is lost in a crash even if its data was synced, an
//! unsynced rename is undone, an unsynced delete is undone, and unsynced appends or truncations vanish.
//!
//! Every call to [`Segment::sync`] or [`SegmentStore::sync_dir`] is a numbered *sync point* (0, 1, 2, ... in
//! call order across the whole store). [`CrashStore::crash_at`] arms a crash at sync point `k`: that sync does
//! not take effect and it, and every later mutating operation on the store or its files, fails with an
//! [`io::Error`] of kind [`io::ErrorKind::Other`] and message `"simulated crash"` (see [`is_crash_error`]).
//! Reads of open handles ([`Segment::len`], [`Segment::read_at`], [`Segment::view`]) keep working. Since a
//! crashed store cannot change any more, its durable state stays the one of the moment of the crash, and
//! [`CrashStore::crash_image`] turns it into a fresh store, as a restarted process would find the disk,
//! optionally with a torn (partially written) unsynced tail on each file.
//!
//! The usual loop: run a workload on a fresh store and read [`CrashStore::sync_points`]; then for every `k`
//! below it, rerun the workload on a fresh store with `crash_at(k)`, take `crash_image`, reopen the log on the
//! image and check its invariants.
//!
//! # What it does not model
//!
//! - Reordering or loss of data writes within a file beyond the torn tail: a torn image keeps the durable bytes
//!   plus a *prefix* of the unsynced appended bytes, never holes, garbage, zeroed blocks or later bytes without
//!   earlier ones. A file whose live image is not an extension of its durable image (it was truncated below
//!   its durable length since the last sync) comes back exactly as durable.
//! - Partial syncs: a sync either takes full effect or is the crash point. Failed syncs that leave the process
//!   running (an `EIO` after which the kernel drops the dirty pages) are not modeled.
//! - Rename atomicity is assumed: after a crash a name maps to its old file or its new one, never to neither
//!   or to a mixture. [`CrashStore::crash_image`] makes every name change since the last directory sync vanish
//!   together; [`CrashStore::crash_image_ordered`] keeps any prefix of them in the order they were made,
//!   as a file system journaling them in order leaves them; no other reordering of name changes is modeled. File data and directory entries are independent: syncing a file never makes its name
//!   durable (stricter than some file systems, which is the safe side for tests).
//! - Metadata other than names and bytes (sizes, times, permissions), block or page granularity, and
//!   concurrent writers racing with the crash beyond a single global order of operations.
//! - Sealing as a durability step: [`Segment::seal`] never makes anything durable and is not a sync point.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use log_core::storage::{not_sealed_error, sealed_error};
use log_core::{Segment, SegmentBytes, SegmentStore};

/// The payload of the error every operation returns once the store has crashed.
#[derive(Debug)]
struct SimulatedCrash;

impl fmt::Display for SimulatedCrash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("simulated crash")
    }
}

impl std::error::Error for SimulatedCrash {}

fn crash_error() -> io::Error {
    io::Error::other(SimulatedCrash)
}

/// True if `err` is the error a crashed [`CrashStore`] returns (kind [`io::ErrorKind::Other`], message
/// `"simulated crash"`).
pub fn is_crash_error(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::Other && err.get_ref().is_some_and(|inner| inner.is::<SimulatedCrash>())
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file named {name:?}"))
}

/// A change of names not yet made durable by a directory sync, in the order it was made.
#[derive(Clone)]
enum NameOp {
    Create(String, Arc<File>),
    Rename(String, String),
    Delete(String),
}

/// The directory and the crash bookkeeping of a store. Lock order: this mutex before any file's lock. Every
/// mutation of a file happens with this mutex held, so a crash (which sets `crashed` under it) freezes all
/// durable and live state at once.
#[derive(Default)]
struct Dir {
    live: BTreeMap<String, Arc<File>>,
    durable: BTreeMap<String, Arc<File>>,
    /// Name changes since the last directory sync, in order (for images of a file system that journals them in
    /// order: [`CrashStore::crash_image_ordered`]).
    pending: Vec<NameOp>,
    /// Sync points reached so far (the number of the next one).
    sync_points: u64,
    crash_at: Option<u64>,
    crashed: bool,
}

impl Dir {
    fn check(&self) -> io::Result<()> {
        if self.crashed { Err(crash_error()) } else { Ok(()) }
    }

    /// Reaches the next sync point. `Err` if the store has crashed or crashes here: the sync must then not
    /// take effect.
    fn sync_point(&mut self) -> io::Result<()> {
        self.check()?;
        let k = self.sync_points;
        self.sync_points += 1;
        if self.crash_at == Some(k) {
            self.crashed = true;
            return Err(crash_error());
        }
        Ok(())
    }
}

/// One file's identity and both of its images.
#[derive(Default)]
struct File {
    state: RwLock<FileState>,
}

impl File {
    fn with_bytes(bytes: Vec<u8>) -> Self {
        let state = FileState { live: bytes.clone(), sealed: None, durable: bytes, diverged: false };
        File { state: RwLock::new(state) }
    }

    fn read(&self) -> RwLockReadGuard<'_, FileState> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, FileState> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(Default)]
struct FileState {
    /// Live bytes while open for appends.
    live: Vec<u8>,
    /// Live bytes once sealed (`live` is then empty).
    sealed: Option<SegmentBytes>,
    /// The bytes a crash leaves.
    durable: Vec<u8>,
    /// False while `durable` is known to be a prefix of the live bytes (lets a sync copy only the new tail).
    diverged: bool,
}

impl FileState {
    fn live_bytes(&self) -> &[u8] {
        self.sealed.as_deref().unwrap_or(&self.live)
    }

    fn sync(&mut self) {
        let FileState { live, sealed, durable, diverged } = self;
        let bytes = sealed.as_deref().unwrap_or(live);
        match bytes.get(durable.len()..) {
            Some(tail) if !*diverged => durable.extend_from_slice(tail),
            _ => {
                durable.clear();
                durable.extend_from_slice(bytes);
            }
        }
        *diverged = false;
    }

    /// The bytes this file would hold after a crash now; with `torn`, a seeded prefix of an unsynced
    /// appended tail survives too.
    fn crash_bytes(&self, name: &str, torn: Option<u64>) -> Vec<u8> {
        let mut out = self.durable.clone();
        let live = self.live_bytes();
        if let Some(seed) = torn
            && live.starts_with(&self.durable)
            && let Some(tail) = live.get(self.durable.len()..)
            && !tail.is_empty()
        {
            let tail_len = tail.len() as u64;
            let keep = splitmix64(seed ^ fnv1a(name.as_bytes())) % (tail_len + 1);
            let keep = usize::try_from(keep).unwrap_or(tail.len()).min(tail.len());
            out.extend_from_slice(tail.get(..keep).unwrap_or(tail));
        }
        out
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3))
}

fn lock(dir: &Mutex<Dir>) -> MutexGuard<'_, Dir> {
    dir.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A [`SegmentStore`] that simulates a page cache over a disk and crashes on demand (see the
/// [module docs](crate::crash)).
pub struct CrashStore {
    dir: Arc<Mutex<Dir>>,
}

impl Default for CrashStore {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for CrashStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = lock(&self.dir);
        f.debug_struct("CrashStore")
            .field("live", &dir.live.keys().collect::<Vec<_>>())
            .field("durable", &dir.durable.keys().collect::<Vec<_>>())
            .field("sync_points", &dir.sync_points)
            .field("crash_at", &dir.crash_at)
            .field("crashed", &dir.crashed)
            .finish()
    }
}

impl CrashStore {
    /// An empty store with nothing durable, no crash armed.
    pub fn new() -> Self {
        CrashStore { dir: Arc::new(Mutex::new(Dir::default())) }
    }

    fn dir(&self) -> MutexGuard<'_, Dir> {
        lock(&self.dir)
    }

    fn handle(&self, file: Arc<File>) -> Arc<dyn Segment> {
        Arc::new(CrashSegment { dir: Arc::clone(&self.dir), file })
    }

    /// How many sync points ([`Segment::sync`] and [`SegmentStore::sync_dir`] calls) have been reached, the
    /// one that crashed included; calls made after the crash are not counted.
    pub fn sync_points(&self) -> u64 {
        self.dir().sync_points
    }

    /// Arms a crash at sync point `k` (numbered from 0 across the store): that sync will not take effect and
    /// the store becomes crashed. Replaces an earlier armed point. Never fires if `k` has already been
    /// reached; no effect on a crashed store.
    pub fn crash_at(&self, k: u64) {
        self.dir().crash_at = Some(k);
    }

    /// Crashes the store now: every later mutating operation fails, the durable state is frozen.
    pub fn crash_now(&self) {
        self.dir().crashed = true;
    }

    /// True once the store has crashed (by [`CrashStore::crash_at`] or [`CrashStore::crash_now`]).
    pub fn is_crashed(&self) -> bool {
        self.dir().crashed
    }

    /// A new, un-crashed store holding what would be on disk after a crash now (or at the moment of the
    /// crash if this store has crashed): every durable name, mapped to its file's durable bytes. Both images
    /// of the new store are those bytes and its files are unsealed, as after a restart.
    ///
    /// With `torn = Some(seed)`, a file whose live bytes extend its durable bytes (an unsynced append) keeps
    /// the durable bytes plus a prefix of the unsynced tail, of a length between 0 and the whole tail drawn
    /// deterministically from `seed` and the file name: a torn write. This store is not changed.
    pub fn crash_image(&self, torn: Option<u64>) -> CrashStore {
        self.crash_image_ordered(torn, 0)
    }

    /// Name changes made since the last directory sync (up to the crash, once crashed).
    pub fn pending_name_changes(&self) -> usize {
        self.dir().pending.len()
    }

    /// As [`CrashStore::crash_image`], with the first `applied` of the name changes made since the last
    /// directory sync durable too, in the order they were made: the disk of a file system that journals
    /// directory changes in order and crashed part-way through writing them out (most journaling file systems
    /// keep one directory's changes in order; none promises which prefix reached the disk). A created file
    /// that becomes durable this way keeps only its durable (synced) bytes, plus a torn tail as `torn` says.
    pub fn crash_image_ordered(&self, torn: Option<u64>, applied: usize) -> CrashStore {
        let files: Vec<(String, Vec<u8>)> = {
            let dir = self.dir();
            let mut names = dir.durable.clone();
            for op in dir.pending.iter().take(applied) {
                match op {
                    NameOp::Create(name, file) => {
                        names.insert(name.clone(), Arc::clone(file));
                    }
                    NameOp::Rename(from, to) => {
                        if let Some(file) = names.remove(from) {
                            names.insert(to.clone(), file);
                        }
                    }
                    NameOp::Delete(name) => {
                        names.remove(name);
                    }
                }
            }
            names.iter().map(|(name, file)| (name.clone(), file.read().crash_bytes(name, torn))).collect()
        };
        let mut dir = Dir::default();
        for (name, bytes) in files {
            let file = Arc::new(File::with_bytes(bytes));
            dir.live.insert(name.clone(), Arc::clone(&file));
            dir.durable.insert(name, file);
        }
        CrashStore { dir: Arc::new(Mutex::new(dir)) }
    }
}

impl SegmentStore for CrashStore {
    fn create(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        let file = {
            let mut dir = self.dir();
            dir.check()?;
            if dir.live.contains_key(name) {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, format!("{name:?} exists")));
            }
            let file = Arc::new(File::default());
            dir.live.insert(name.to_owned(), Arc::clone(&file));
            dir.pending.push(NameOp::Create(name.to_owned(), Arc::clone(&file)));
            file
        };
        Ok(self.handle(file))
    }

    fn open(&self, name: &str) -> io::Result<Arc<dyn Segment>> {
        let file = {
            let dir = self.dir();
            dir.check()?;
            Arc::clone(dir.live.get(name).ok_or_else(|| not_found(name))?)
        };
        Ok(self.handle(file))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let dir = self.dir();
        dir.check()?;
        Ok(dir.live.keys().cloned().collect())
    }

    fn file_id(&self, name: &str) -> io::Result<u64> {
        let dir = self.dir();
        dir.live.get(name).map(|f| Arc::as_ptr(f) as usize as u64).ok_or_else(|| not_found(name))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut dir = self.dir();
        dir.check()?;
        let file = dir.live.remove(from).ok_or_else(|| not_found(from))?;
        dir.live.insert(to.to_owned(), file);
        dir.pending.push(NameOp::Rename(from.to_owned(), to.to_owned()));
        Ok(())
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        let mut dir = self.dir();
        dir.check()?;
        dir.live.remove(name).map(drop).ok_or_else(|| not_found(name))?;
        dir.pending.push(NameOp::Delete(name.to_owned()));
        Ok(())
    }

    fn sync_dir(&self) -> io::Result<()> {
        let mut dir = self.dir();
        dir.sync_point()?;
        dir.durable = dir.live.clone();
        dir.pending.clear();
        Ok(())
    }
}

/// A handle on a file of a [`CrashStore`]. Stays valid after the file is renamed or deleted.
pub struct CrashSegment {
    dir: Arc<Mutex<Dir>>,
    file: Arc<File>,
}

impl fmt::Debug for CrashSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.file.read();
        f.debug_struct("CrashSegment")
            .field("live_len", &state.live_bytes().len())
            .field("durable_len", &state.durable.len())
            .field("sealed", &state.sealed.is_some())
            .finish()
    }
}

impl Segment for CrashSegment {
    fn len(&self) -> u64 {
        self.file.read().live_bytes().len() as u64
    }

    fn append(&self, data: &[u8]) -> io::Result<u64> {
        let dir = lock(&self.dir);
        dir.check()?;
        let mut state = self.file.write();
        if state.sealed.is_some() {
            return Err(sealed_error());
        }
        let pos = state.live.len() as u64;
        state.live.extend_from_slice(data);
        Ok(pos)
    }

    fn read_at(&self, pos: u64, out: &mut [u8]) -> io::Result<()> {
        crate::copy_out(self.file.read().live_bytes(), pos, out)
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let dir = lock(&self.dir);
        dir.check()?;
        let mut state = self.file.write();
        if state.sealed.is_some() {
            return Err(sealed_error());
        }
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        if len > state.live.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "truncate beyond the end"));
        }
        state.live.truncate(len);
        if len < state.durable.len() {
            state.diverged = true;
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut dir = lock(&self.dir);
        dir.sync_point()?;
        self.file.write().sync();
        Ok(())
    }

    fn seal(&self) -> io::Result<()> {
        let dir = lock(&self.dir);
        dir.check()?;
        let mut state = self.file.write();
        if state.sealed.is_none() {
            let data = std::mem::take(&mut state.live);
            state.sealed = Some(SegmentBytes::new(data));
        }
        Ok(())
    }

    fn is_sealed(&self) -> bool {
        self.file.read().sealed.is_some()
    }

    fn view(&self) -> io::Result<SegmentBytes> {
        self.file.read().sealed.clone().ok_or_else(not_sealed_error)
    }

    fn file_id(&self) -> u64 {
        Arc::as_ptr(&self.file) as usize as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// All live bytes of a handle, read through the trait.
    fn read_all(seg: &dyn Segment) -> io::Result<Vec<u8>> {
        let mut bytes = vec![0; usize::try_from(seg.len()).expect("fits")];
        seg.read_at(0, &mut bytes)?;
        Ok(bytes)
    }

    /// Every file of `store` with its live bytes.
    fn contents(store: &CrashStore) -> io::Result<BTreeMap<String, Vec<u8>>> {
        let mut out = BTreeMap::new();
        for name in store.list()? {
            out.insert(name.clone(), read_all(&*store.open(&name)?)?);
        }
        Ok(out)
    }

    fn map(entries: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
        entries.iter().map(|(n, b)| ((*n).to_owned(), b.to_vec())).collect()
    }

    fn assert_crash<T: fmt::Debug>(result: io::Result<T>) {
        let err = result.expect_err("should fail after the crash");
        assert!(is_crash_error(&err), "unexpected error {err:?}");
        assert_eq!(err.kind(), io::ErrorKind::Other);
        assert_eq!(err.to_string(), "simulated crash");
    }

    #[test]
    fn is_send_sync_and_a_segment_store() {
        fn check<T: Send + Sync + 'static>() {}
        check::<CrashStore>();
        check::<CrashSegment>();
        let store: Arc<dyn SegmentStore> = Arc::new(CrashStore::default());
        assert!(store.list().expect("list").is_empty());
        assert!(format!("{store:?}").starts_with("CrashStore"));
    }

    #[test]
    fn unsynced_appends_vanish_from_the_image() -> io::Result<()> {
        let store = CrashStore::new();
        let seg = store.create("a.log")?;
        store.sync_dir()?;
        assert_eq!(seg.append(b"abc")?, 0);
        seg.sync()?;
        assert_eq!(seg.append(b"def")?, 3);

        let image = store.crash_image(None);
        assert_eq!(contents(&image)?, map(&[("a.log", b"abc")]));
        // The running store still sees everything and is not crashed by taking an image.
        assert_eq!(contents(&store)?, map(&[("a.log", b"abcdef")]));
        assert!(!store.is_crashed());
        seg.append(b"g")?;
        Ok(())
    }

    #[test]
    fn unsynced_truncation_vanishes_and_synced_one_survives() -> io::Result<()> {
        let store = CrashStore::new();
        let seg = store.create("a.log")?;
        store.sync_dir()?;
        seg.append(b"abcdef")?;
        seg.sync()?;
        seg.truncate(2)?;
        assert!(seg.truncate(3).is_err(), "truncate beyond the end must fail");
        assert_eq!(contents(&store.crash_image(None))?, map(&[("a.log", b"abcdef")]));
        // A truncated file is not an extension of its durable image, even once longer again: a torn image is
        // the durable one.
        seg.append(b"uvwxyz")?;
        for seed in 0..16 {
            assert_eq!(contents(&store.crash_image(Some(seed)))?, map(&[("a.log", b"abcdef")]));
        }
        seg.sync()?;
        assert_eq!(contents(&store.crash_image(None))?, map(&[("a.log", b"abuvwxyz")]));
        Ok(())
    }

    #[test]
    fn synced_data_survives_only_with_a_synced_name() -> io::Result<()> {
        let store = CrashStore::new();
        let seg = store.create("a.log")?;
        seg.append(b"data")?;
        seg.sync()?;
        assert!(contents(&store.crash_image(None))?.is_empty(), "name never synced: file lost");

        store.sync_dir()?;
        assert_eq!(contents(&store.crash_image(None))?, map(&[("a.log", b"data")]));

        // A delete is undone until the directory is synced; the open handle stays valid meanwhile.
        store.delete("a.log")?;
        assert!(store.list()?.is_empty());
        assert_eq!(seg.len(), 4);
        seg.append(b"!")?;
        assert_eq!(contents(&store.crash_image(None))?, map(&[("a.log", b"data")]));
        store.sync_dir()?;
        assert!(contents(&store.crash_image(None))?.is_empty());
        Ok(())
    }

    #[test]
    fn rename_is_undone_unless_the_directory_is_synced() -> io::Result<()> {
        let store = CrashStore::new();
        let old = store.create("0.log")?;
        old.append(b"old")?;
        old.sync()?;
        let new = store.create("0.log.cleaned")?;
        new.append(b"new")?;
        new.sync()?;
        store.sync_dir()?;

        store.rename("0.log.cleaned", "0.log")?;
        assert_eq!(contents(&store)?, map(&[("0.log", b"new")]));
        // The handle on the replaced file still reads its own bytes.
        let mut buf = [0; 3];
        old.read_at(0, &mut buf)?;
        assert_eq!(&buf, b"old");
        assert_eq!(contents(&store.crash_image(None))?, map(&[("0.log", b"old"), ("0.log.cleaned", b"new")]));

        store.sync_dir()?;
        assert_eq!(contents(&store.crash_image(None))?, map(&[("0.log", b"new")]));
        Ok(())
    }

    #[test]
    fn crash_at_fails_that_sync_and_everything_after() -> io::Result<()> {
        let store = CrashStore::new();
        store.crash_at(2);
        let seg = store.create("a.log")?;
        let other = store.create("b.log")?;
        seg.append(b"one")?;
        seg.sync()?; // sync point 0
        store.sync_dir()?; // sync point 1
        assert_eq!(store.sync_points(), 2);
        seg.append(b"two")?;
        seg.seal()?;
        assert!(!store.is_crashed());

        assert_crash(seg.sync()); // sync point 2: crashes, does not take effect
        assert!(store.is_crashed());
        assert_eq!(store.sync_points(), 3);

        assert_crash(other.append(b"x"));
        assert_crash(other.truncate(0));
        assert_crash(other.sync());
        assert_crash(other.seal());
        assert_crash(seg.seal());
        assert_crash(store.create("c.log"));
        assert_crash(store.open("a.log"));
        assert_crash(store.rename("a.log", "c.log"));
        assert_crash(store.delete("a.log"));
        assert_crash(store.sync_dir());
        assert_crash(store.list());
        assert_eq!(store.sync_points(), 3, "calls after the crash are not sync points");
        assert!(!other.is_sealed(), "a failed seal does nothing");

        // Reads of open handles keep working.
        assert_eq!(seg.len(), 6);
        assert_eq!(&*seg.view()?, b"onetwo");
        let mut buf = [0; 3];
        seg.read_at(3, &mut buf)?;
        assert_eq!(&buf, b"two");

        // The image is the state before sync point 2, however often it is taken.
        let image = store.crash_image(None);
        assert!(!image.is_crashed());
        assert_eq!(image.sync_points(), 0);
        assert_eq!(contents(&image)?, map(&[("a.log", b"one"), ("b.log", b"")]));
        assert_eq!(contents(&store.crash_image(None))?, contents(&image)?);
        Ok(())
    }

    #[test]
    fn crash_at_sync_dir_keeps_old_names() -> io::Result<()> {
        let store = CrashStore::new();
        store.crash_at(1);
        let seg = store.create("a.log")?;
        seg.sync()?; // 0
        seg.append(b"data")?;
        store.rename("a.log", "b.log")?;
        assert_crash(store.sync_dir()); // 1
        assert!(contents(&store.crash_image(None))?.is_empty(), "no name was ever made durable");
        Ok(())
    }

    #[test]
    fn crash_at_a_past_point_never_fires_and_crash_now_does() -> io::Result<()> {
        let store = CrashStore::new();
        let seg = store.create("a.log")?;
        seg.sync()?; // 0
        store.sync_dir()?; // 1
        store.crash_at(0);
        seg.append(b"x")?;
        seg.sync()?; // 2
        assert!(!store.is_crashed());
        assert_eq!(store.sync_points(), 3);

        seg.append(b"y")?;
        store.crash_now();
        assert!(store.is_crashed());
        assert_crash(seg.append(b"z"));
        assert_crash(seg.sync());
        assert_eq!(store.sync_points(), 3);
        assert_eq!(read_all(&*seg)?, b"xy");
        assert_eq!(contents(&store.crash_image(None))?, map(&[("a.log", b"x")]));
        Ok(())
    }

    #[test]
    fn torn_images_keep_a_prefix_between_durable_and_live() -> io::Result<()> {
        let store = CrashStore::new();
        let a = store.create("a.log")?;
        let b = store.create("b.log")?;
        store.sync_dir()?;
        a.append(b"durable-")?;
        a.sync()?;
        let tail: Vec<u8> = (0..=255).collect();
        a.append(&tail)?;
        b.append(b"synced")?;
        b.sync()?;
        store.crash_now();

        let live = read_all(&*a)?;
        let mut lengths = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let image = contents(&store.crash_image(Some(seed)))?;
            let torn = image.get("a.log").expect("a.log is durable");
            assert!(torn.starts_with(b"durable-"), "seed {seed}: durable bytes kept");
            assert!(live.starts_with(torn), "seed {seed}: a prefix of the live bytes");
            assert_eq!(image.get("b.log").map(Vec::as_slice), Some(&b"synced"[..]), "nothing unsynced in b.log");
            assert_eq!(contents(&store.crash_image(Some(seed)))?, image, "seed {seed}: deterministic");
            lengths.insert(torn.len());
        }
        assert!(lengths.len() > 8, "the torn length varies with the seed: {lengths:?}");
        assert!(lengths.iter().all(|&n| (8..=8 + 256).contains(&n)));
        assert_eq!(contents(&store.crash_image(None))?.get("a.log").map(Vec::as_slice), Some(&b"durable-"[..]));
        Ok(())
    }

    #[test]
    fn image_files_are_unsealed_writable_and_independent() -> io::Result<()> {
        let store = CrashStore::new();
        let seg = store.create("a.log")?;
        seg.append(b"abc")?;
        seg.seal()?;
        seg.sync()?;
        store.sync_dir()?;
        store.crash_now();

        let image = store.crash_image(None);
        let reopened = image.open("a.log")?;
        assert!(!reopened.is_sealed());
        assert_eq!(reopened.append(b"d")?, 3);
        reopened.sync()?;
        image.sync_dir()?;
        assert_eq!(contents(&image.crash_image(None))?, map(&[("a.log", b"abcd")]));
        assert_eq!(read_all(&*seg)?, b"abc", "the crashed store is untouched");
        assert!(store.is_crashed());
        Ok(())
    }

    #[test]
    fn seal_behaves_like_mem_segment_and_is_not_durable() -> io::Result<()> {
        let store = CrashStore::new();
        let seg = store.create("a.log")?;
        store.sync_dir()?;
        seg.append(b"abc")?;
        assert_eq!(seg.view().expect_err("not sealed").kind(), io::ErrorKind::InvalidInput);
        seg.seal()?;
        seg.seal()?;
        assert!(seg.is_sealed());
        assert_eq!(seg.append(b"x").expect_err("sealed").kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(seg.truncate(0).expect_err("sealed").kind(), io::ErrorKind::PermissionDenied);
        let (v1, v2) = (seg.view()?, seg.view()?);
        assert_eq!(&*v1, b"abc");
        assert_eq!(v1.as_ptr(), v2.as_ptr(), "views share one buffer");
        assert_eq!(contents(&store.crash_image(None))?, map(&[("a.log", b"")]), "seal does not sync");
        // Another handle on the same file sees the seal.
        assert!(store.open("a.log")?.is_sealed());
        seg.sync()?;
        assert_eq!(contents(&store.crash_image(None))?, map(&[("a.log", b"abc")]));
        Ok(())
    }

    #[test]
    fn ordered_images_keep_a_prefix_of_the_name_changes_in_order() -> io::Result<()> {
        let store = CrashStore::new();
        let a = store.create("a")?;
        a.append(b"A")?;
        a.sync()?;
        store.sync_dir()?;
        store.rename("a", "b")?;
        let c = store.create("c")?;
        c.append(b"C")?;
        c.sync()?;
        store.delete("b")?;
        store.crash_now();
        assert_eq!(store.pending_name_changes(), 3);
        let images: Vec<BTreeMap<String, Vec<u8>>> =
            (0..=3).map(|j| contents(&store.crash_image_ordered(None, j))).collect::<io::Result<_>>()?;
        assert_eq!(images[0], map(&[("a", b"A")]));
        assert_eq!(images[1], map(&[("b", b"A")]));
        assert_eq!(images[2], map(&[("b", b"A"), ("c", b"C")]));
        assert_eq!(images[3], map(&[("c", b"C")]));
        assert_eq!(contents(&store.crash_image(None))?, images[0], "the plain image applies none");
        Ok(())
    }

    #[test]
    fn namespace_errors_and_rename_semantics() -> io::Result<()> {
        let store = CrashStore::new();
        store.create("b")?;
        store.create("a")?;
        assert_eq!(store.create("a").expect_err("exists").kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(store.open("zz").expect_err("missing").kind(), io::ErrorKind::NotFound);
        assert_eq!(store.delete("zz").expect_err("missing").kind(), io::ErrorKind::NotFound);
        assert_eq!(store.rename("zz", "a").expect_err("missing").kind(), io::ErrorKind::NotFound);
        assert_eq!(store.list()?, ["a", "b"]);
        store.open("a")?.append(b"from a")?;
        store.rename("a", "b")?;
        assert_eq!(contents(&store)?, map(&[("b", b"from a")]));
        Ok(())
    }
}

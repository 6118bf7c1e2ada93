//! Copying a log directory (either format) into a new directory, for `compact --out`: the copy is cleaned in
//! place afterwards, and the source is never written.
//!
//! The source is read through a read-only open (no lock; a consistent snapshot even beside a writer: a pending
//! swap is resolved as the next open would, a torn tail left out), and written into a directory beside the
//! target named after it (`.<name>.logcompact-copy-<pid>`), every file synced ([`copy_beside`]). `compact
//! --out` cleans it there and only then renames it into place at once ([`place`]), so a run that fails or is
//! killed, whenever, leaves no target: at most that temporary directory, which names its target and process,
//! and which the next run on the target removes once that process is gone (a rerun starts over). Two runs on
//! one target cannot both win: the rename of the second fails once the target holds the first's copy.

use log_core::progress::Meter;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use log_core::kafka::files::{SegmentFile, Stage, name as kafka_name};
use log_core::{Format, SegmentSource};

use crate::dir::{OpenError, open_read_only};

/// Why a copy could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyError {
    /// The target cannot be used.
    #[error("the copy's place {target}: {why}")]
    BadTarget {
        /// The target.
        target: PathBuf,
        /// Why not.
        why: String,
    },
    /// The source could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Reading the source or writing the copy failed.
    #[error("copying to {path}: {source}")]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The source's data could not be read.
    #[error(transparent)]
    Log(#[from] log_core::Error),
}

/// What a copy holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// The source's cleaner checkpoint (the first dirty offset), for the copy to start from.
    pub checkpoint: u64,
    /// Bytes of segments copied.
    pub bytes: u64,
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> CopyError + '_ {
    move |source| CopyError::Io { path: path.to_path_buf(), source }
}

/// Checks that `target` may receive a copy of `source`: it does not exist or is an empty directory, its
/// parent exists, and it does not lie inside the source (links and `..` resolved).
///
/// # Errors
/// [`CopyError::BadTarget`] saying why.
pub fn check_target(source: &Path, format: Format, target: &Path) -> Result<(), CopyError> {
    let bad = |why: String| CopyError::BadTarget { target: target.to_path_buf(), why };
    if target.exists() && fs::read_dir(target).map(|mut d| d.next().is_some()).unwrap_or(true) {
        return Err(bad("it exists and is not an empty directory".into()));
    }
    if inside(target, source) {
        let what = if format == Format::Kafka { "partition" } else { "log" };
        return Err(bad(format!("it is inside the source {what} {}, which is never written", source.display())));
    }
    let (Some(parent), Some(_)) = (target.parent(), target.file_name()) else {
        return Err(bad("it names no directory".into()));
    };
    let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
    if !parent.is_dir() {
        return Err(bad("its parent directory does not exist".into()));
    }
    if storage_file::kafka::is_broker_log_dir(parent) {
        // A copy there is a partition the broker does not own (its line in the broker's
        // cleaner-offset-checkpoint, a topic it never created), or under another name a directory that stops
        // the broker at start ("is not in the form of topic-partition").
        return Err(bad(format!(
            "it is inside the broker's log directory {} (it holds meta.properties): a broker would take the copy \
             for a partition it does not own, or refuse to start; make the copy elsewhere",
            parent.display()
        )));
    }
    Ok(())
}

/// Copies the log of `format` in `source` to `target` (see the module docs): [`copy_beside`], then `place` (the
/// rename into the target).
///
/// # Errors
/// [`CopyError`]; nothing is left at `target` then.
pub fn copy_log(source: &Path, format: Format, target: &Path) -> Result<Copied, CopyError> {
    let unplaced = copy_beside(source, format, target)?;
    place(&unplaced.temp, target)?;
    Ok(unplaced.copied)
}

/// A copy made beside its target, not yet in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaced {
    /// The temporary directory holding it (`.<target name>.logcompact-copy-<pid>`, beside the target).
    pub temp: PathBuf,
    /// What it holds.
    pub copied: Copied,
}

/// The temporary directory for a copy to `target` made by process `pid`.
fn temp_for(target: &Path, pid: u32) -> (PathBuf, String) {
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.logcompact-copy-");
    (parent.join(format!("{prefix}{pid}")), prefix)
}

/// Removes the temporary copies to `target` left by runs whose process is gone (killed): a rerun starts over.
/// One of a live process (another run on the same target) is left to it.
fn remove_stale_copies(target: &Path) {
    let (own, prefix) = temp_for(target, std::process::id());
    let Some(parent) = own.parent() else { return };
    let Ok(entries) = fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(&prefix)).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() || pid == std::process::id() {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Copies the log of `format` in `source` into a temporary directory beside `target` (see the module docs),
/// every file and the directory synced; `target` is not touched.
///
/// # Errors
/// [`CopyError`]; the temporary directory is removed then.
pub fn copy_beside(source: &Path, format: Format, target: &Path) -> Result<Unplaced, CopyError> {
    copy_beside_metered(source, format, target, None)
}

/// The stage a [`Meter`] shows while [`copy_beside_metered`] copies the segments.
pub const STAGE_COPY: &str = "copy to the target";

/// As [`copy_beside`], counting the segment bytes copied on `meter` (a stage of the log's segment bytes).
///
/// # Errors
/// As [`copy_beside`].
pub fn copy_beside_metered(
    source: &Path,
    format: Format,
    target: &Path,
    meter: Option<&Meter>,
) -> Result<Unplaced, CopyError> {
    check_target(source, format, target)?;
    // A copy of the metadata log would be a cleaned metadata log one rename away from the broker's.
    storage_file::refuse_metadata_log(source)
        .map_err(|e| CopyError::Open(OpenError::Store { dir: source.to_path_buf(), source: e }))?;
    let opened = open_read_only(source, format)?;
    let log = &opened.log;
    let snapshot = log.snapshot();
    remove_stale_copies(target);
    let (temp, _) = temp_for(target, std::process::id());
    fs::create_dir(&temp).map_err(io_at(&temp))?;
    let result = (|| -> Result<Copied, CopyError> {
        let mut bytes = 0;
        let live = |base: u64| match format {
            Format::Native => {
                log_core::format::native::names::file_name(base, log_core::format::native::names::FileKind::Log)
            }
            Format::Kafka => kafka_name(base, SegmentFile::Log, Stage::Live),
        };
        if let Some(m) = meter {
            let total = snapshot.closed().iter().map(|s| s.size()).sum::<u64>() + snapshot.active_len();
            m.begin(STAGE_COPY, Some(total));
        }
        for s in snapshot.closed() {
            bytes += write_from(s.source(), s.size(), &temp.join(live(s.base())), meter)?;
        }
        let active = temp.join(live(snapshot.active_base()));
        bytes += write_from(snapshot.active_source(), snapshot.active_len(), &active, meter)?;
        match format {
            Format::Native => {
                // Hints are rebuilt by the copy's first open; the checkpoint goes with the records.
                let text = format!("logcompact-checkpoint 1\n{}\n", log.cleaner_checkpoint());
                write_bytes(&temp.join(log_core::names::CHECKPOINT_FILE), text.as_bytes())?;
            }
            Format::Kafka => copy_kafka_files(source, &temp, &snapshot)?,
        }
        fs::File::open(&temp).and_then(|d| d.sync_all()).map_err(io_at(&temp))?;
        Ok(Copied { checkpoint: log.cleaner_checkpoint(), bytes })
    })();
    match result {
        Ok(copied) => Ok(Unplaced { temp, copied }),
        Err(e) => {
            let _ = fs::remove_dir_all(&temp);
            Err(e)
        }
    }
}

/// Renames the finished copy `temp` to `target` at once and syncs their directory; on failure (another run's
/// copy got there first) `temp` is removed.
///
/// # Errors
/// [`CopyError::BadTarget`] when `target` cannot take it; [`CopyError::Io`] when the directory cannot be synced.
pub fn place(temp: &Path, target: &Path) -> Result<(), CopyError> {
    if let Err(e) = fs::rename(temp, target) {
        let _ = fs::remove_dir_all(temp);
        return Err(CopyError::BadTarget {
            target: target.to_path_buf(),
            why: format!("cannot move the copy there: {e}"),
        });
    }
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::File::open(&parent).and_then(|d| d.sync_all()).map_err(io_at(&parent))
}

/// A Kafka partition's other files: each segment's indexes (the transaction index above all, which says which
/// transactions were aborted), producer snapshots, the leader epoch checkpoint and the partition metadata.
fn copy_kafka_files(source: &Path, temp: &Path, snapshot: &log_core::LogSnapshot) -> Result<(), CopyError> {
    let store = storage_file::FileStore::open_read_only(source)
        .map_err(|e| CopyError::Io { path: source.to_path_buf(), source: e.into() })?;
    let layout = log_core::kafka::KafkaLayout::scan(&store)?;
    let bases: Vec<u64> =
        snapshot.closed().iter().map(|s| s.base()).chain(std::iter::once(snapshot.active_base())).collect();
    let mut names = Vec::new();
    for base in bases {
        let Some(files) = layout.segments.get(&base) else { continue };
        for file in [SegmentFile::OffsetIndex, SegmentFile::TimeIndex, SegmentFile::TxnIndex] {
            // The live file, or the one a pending swap is about to put in its place.
            let found = files.get(&(file, Stage::Swap)).or_else(|| files.get(&(file, Stage::Live)));
            if let Some(n) = found {
                names.push((n.clone(), kafka_name(base, file, Stage::Live)));
            }
        }
    }
    names.extend(layout.kept.iter().map(|n| (n.clone(), n.clone())));
    for (from, to) in names {
        let path = source.join(&from);
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => m,
            _ => continue,
        };
        let mut f = fs::File::open(&path).map_err(io_at(&path))?;
        let out_path = temp.join(&to);
        let mut out = fs::File::create(&out_path).map_err(io_at(&out_path))?;
        std::io::copy(&mut (&mut f).take(meta.len()), &mut out).map_err(io_at(&out_path))?;
        out.sync_all().map_err(io_at(&out_path))?;
    }
    Ok(())
}

/// Writes the first `len` bytes of `source` to `path`, synced, counting them on `meter`; returns `len`.
fn write_from(source: &SegmentSource, len: u64, path: &Path, meter: Option<&Meter>) -> Result<u64, CopyError> {
    let mut out = fs::File::create(path).map_err(io_at(path))?;
    let mut buf = vec![0u8; (1 << 20).min(usize::try_from(len).unwrap_or(usize::MAX)).max(1)];
    let mut at = 0;
    while at < len {
        let n = usize::try_from(len - at).unwrap_or(usize::MAX).min(buf.len());
        source.read_at(at, &mut buf[..n]).map_err(io_at(path))?;
        out.write_all(&buf[..n]).map_err(io_at(path))?;
        at += n as u64;
        if let Some(m) = meter {
            m.add(n as u64, 0);
        }
    }
    out.sync_all().map_err(io_at(path))?;
    Ok(len)
}

fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), CopyError> {
    let mut out = fs::File::create(path).map_err(io_at(path))?;
    out.write_all(bytes).and_then(|()| out.sync_all()).map_err(io_at(path))
}

/// True when `path` (which may not exist yet) lies in `dir`: its deepest existing ancestor is resolved (links,
/// `..`) and the rest of it appended.
pub fn inside(path: &Path, dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else { return false };
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map(|c| c.join(path)).unwrap_or_else(|_| path.to_path_buf())
    };
    let parts: Vec<std::path::Component<'_>> = absolute.components().collect();
    let Some(known) = (0..=parts.len()).rev().find(|&i| parts[..i].iter().collect::<PathBuf>().exists()) else {
        return false;
    };
    let Ok(mut resolved) = parts[..known].iter().collect::<PathBuf>().canonicalize() else { return false };
    for part in &parts[known..] {
        match part {
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            std::path::Component::Normal(name) => resolved.push(name),
            _ => {}
        }
    }
    resolved.starts_with(&dir)
}

//! Mistakes answered once, with the fix, before a command prints anything else: a path that does not exist
//! (named once, with the nearest existing sibling), a broker's log directory or a data directory given where
//! one log is wanted (`--dir`), one log given where a directory of logs is wanted (`--data-dir`), and a
//! broker's log directory given to `clean` or `status` without `--format kafka`.
//!
//! What a directory is, the library tells once ([`logcompact::dir::DirKind`], from names and a few read-only
//! opens); this file only words it with the command line's flags. A directory that passes is judged again by
//! the command itself, so a check here can only add a better first line.

use std::path::{Path, PathBuf};

use log_core::Format;
use logcompact::dir::DirKind;

use crate::failure::Failure;
use crate::hints::format_flag;

/// `a, b, c` or `a, b, c, ...` when there may be more.
fn listed(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
    if names.len() > 3 { format!("{}, ...", shown.join(", ")) } else { shown.join(", ") }
}

/// The edit distance between `a` and `b` (insertions, deletions and substitutions of characters).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != cb)).min(row[j] + 1).min(here + 1);
            previous = here;
        }
    }
    row[b.len()]
}

/// `path` does not exist: the error, naming it once, with the existing entry of its parent nearest to its
/// name, or the nearest existing ancestor when the parent is missing too.
fn missing(path: &Path, flag: &str) -> Failure {
    let shown = path.display();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if parent.is_dir() {
        let nearest = std::fs::read_dir(parent).ok().and_then(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().is_dir())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| !n.starts_with('.'))
                .map(|n| (distance(&name, &n), n))
                // Only a near miss is a suggestion: at most a third of the name differs.
                .filter(|(d, _)| *d <= name.chars().count().div_ceil(3).max(1))
                .min()
        });
        return Failure::Usage(match nearest {
            Some((_, n)) => format!("{flag} {shown} does not exist; did you mean {}?", parent.join(n).display()),
            None => format!("{flag} {shown} does not exist (nor anything named like it in {})", parent.display()),
        });
    }
    let mut up: PathBuf = parent.to_path_buf();
    while !up.is_dir() {
        match up.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => up = p.to_path_buf(),
            None => return Failure::Usage(format!("{flag} {shown} does not exist")),
        }
    }
    Failure::Usage(format!("{flag} {shown} does not exist: the nearest existing directory is {}", up.display()))
}

/// Before a command that creates or continues one log in `--dir` (`gen`, `run --backend file`): a directory of
/// logs or a file is refused as [`one_log`] refuses it (the command would write a log's segments beside the logs
/// it holds); a path not there yet is the command's to create.
///
/// # Errors
/// [`Failure::Usage`] with the fix.
pub fn one_log_or_new(dir: &Path, format: Format, command: &str) -> Result<(), Failure> {
    if dir.symlink_metadata().is_err() {
        return Ok(());
    }
    one_log(dir, format, command, None).map(|_| ())
}

/// A file given where a directory goes: named as one, with the directory that holds it (a segment file's log).
fn a_file(path: &Path, flag: &str) -> Failure {
    let holder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Failure::Usage(format!(
        "{flag} {} is a file, not a directory: {flag} takes the directory that holds a log's files (this file is in {})",
        path.display(),
        holder.display()
    ))
}

/// Before a command that takes one log with `--dir`: a missing path, or a directory of logs (a broker's log
/// directory or a data directory), is refused with the form that fits. `data_dir_form` is the command line
/// that takes the whole directory, when the command has one (`clean` for `compact`). Returns the directory's
/// listing (empty for a path that is not a directory), read once here for the checks that follow.
///
/// # Errors
/// [`Failure::Usage`] with the fix.
pub fn one_log(
    dir: &Path,
    format: Format,
    command: &str,
    data_dir_form: Option<&str>,
) -> Result<logcompact::dir::Listing, Failure> {
    let listing = logcompact::dir::Listing::read(dir);
    let (logs, broker) = match listing.kind() {
        DirKind::Missing => return Err(missing(dir, "--dir")),
        DirKind::NotADirectory => return Err(a_file(dir, "--dir")),
        DirKind::Logs { logs, broker } => (logs, broker),
        _ => return Ok(listing),
    };
    // The partition suggested is never the cluster's metadata log, which no command writes.
    let not_metadata = |n: &&String| {
        !log_core::kafka::topic_partition(n)
            .is_some_and(|(topic, _)| log_core::kafka::metadata_log::is_metadata_topic(topic))
    };
    let Some(first) = logs.iter().find(not_metadata) else { return Ok(listing) };
    let (what, flag) = if broker {
        ("a Kafka broker's log directory", " --format kafka")
    } else {
        ("a data directory", format_flag(format))
    };
    let mut text = format!(
        "--dir {} is {what} (it holds {}), not one {}: `logcompact {command}{flag} --dir {}` takes one",
        dir.display(),
        listed(&logs),
        if broker { "partition" } else { "log" },
        dir.join(first).display()
    );
    if let Some(form) = data_dir_form {
        text.push_str(&format!(", `logcompact {form}{flag} --data-dir {}` all of them", dir.display()));
        if form == "clean" {
            text.push_str(" (with --until-clean)");
        }
    }
    Err(Failure::Usage(text))
}

/// Before a command that takes a directory of logs with `--data-dir`: a missing path, one log given instead
/// (suggesting `one_log_form`, the command that takes it with `--dir`), and a broker's log directory without
/// `--format kafka` are refused with the fix.
///
/// # Errors
/// [`Failure::Usage`] with the fix.
pub fn data_dir(dir: &Path, format: Format, command: &str, one_log_form: &str) -> Result<(), Failure> {
    match logcompact::dir::dir_kind(dir) {
        DirKind::Missing => Err(missing(dir, "--data-dir")),
        DirKind::NotADirectory => Err(a_file(dir, "--data-dir")),
        DirKind::OneLog => {
            let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            let flag = if format == Format::Kafka || log_core::kafka::topic_partition(name).is_some() {
                " --format kafka"
            } else {
                ""
            };
            Err(Failure::Usage(format!(
                "--data-dir {} is one log (it holds segment files), not a directory of logs: `logcompact \
                 {one_log_form}{flag} --dir {}` takes it",
                dir.display(),
                dir.display()
            )))
        }
        DirKind::Logs { logs, broker: true } if format == Format::Native => {
            let until = if command == "clean" { " --until-clean" } else { "" };
            Err(Failure::Usage(format!(
                "--data-dir {} is a Kafka broker's log directory{}: give --format kafka, as in `logcompact {command} \
                 --format kafka --data-dir {}{until}`",
                dir.display(),
                if logs.is_empty() { String::new() } else { format!(" (partitions {})", listed(&logs)) },
                dir.display()
            )))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_names_are_near() {
        assert_eq!(distance("ordres-0", "orders-0"), 2);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("orders-0", "orders-0"), 0);
    }
}

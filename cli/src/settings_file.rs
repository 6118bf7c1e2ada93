//! The per-log settings file of `logcompact clean --config FILE`: Kafka's topic settings under their names,
//! defaults first and then a section per log.
//!
//! ```text
//! # Every log of the data directory.
//! min.cleanable.dirty.ratio = 0.3
//!
//! [orders]
//! delete.retention.ms = 3600000
//! segment.bytes = 64MiB
//!
//! [audit]
//! cleanup.policy = delete
//! ```
//!
//! Lines are `name = value`, `[log]` section headers, blank, or comments starting with `#`. A setting before
//! the first section applies to every log (over the command line's flags); one in a section to that log.
//! `segment.bytes` takes units as the command line does.

use std::collections::BTreeMap;

use cleaner::LogSettings;

/// Settings given by name, as text, in file order.
pub type Overrides = Vec<(String, String, usize)>;

/// A parsed settings file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SettingsFile {
    /// For every log: `(name, value, line)`.
    pub defaults: Overrides,
    /// Per log, by name.
    pub logs: BTreeMap<String, Overrides>,
}

/// A line of the file that is not right.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct FileError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub problem: String,
}

impl SettingsFile {
    /// Parses the text of a settings file.
    ///
    /// # Errors
    /// [`FileError`] naming the first bad line.
    pub fn parse(text: &str) -> Result<Self, FileError> {
        let mut file = SettingsFile::default();
        let mut section: Option<String> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let l = raw.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            if let Some(rest) = l.strip_prefix('[') {
                let name = rest.strip_suffix(']').map(str::trim).filter(|n| !n.is_empty()).ok_or_else(|| {
                    FileError { line, problem: format!("{l:?} is not a section header ([log-name])") }
                })?;
                if file.logs.contains_key(name) {
                    return Err(FileError { line, problem: format!("section [{name}] appears twice") });
                }
                file.logs.insert(name.to_owned(), Vec::new());
                section = Some(name.to_owned());
                continue;
            }
            let Some((name, value)) = l.split_once('=') else {
                return Err(FileError { line, problem: format!("{l:?} is not `name = value`") });
            };
            let (name, value) = (name.trim(), value.trim());
            if !cleaner::settings::SETTING_NAMES.contains(&name) {
                return Err(FileError {
                    line,
                    problem: format!(
                        "unknown setting {name:?} (known: {})",
                        cleaner::settings::SETTING_NAMES.join(", ")
                    ),
                });
            }
            let entry = (name.to_owned(), value.to_owned(), line);
            match &section {
                Some(s) => file.logs.entry(s.clone()).or_default().push(entry),
                None => file.defaults.push(entry),
            }
        }
        Ok(file)
    }

    /// The settings of the log `name`: `base` (the command line's), then the file's defaults, then its
    /// section.
    ///
    /// # Errors
    /// [`FileError`] for a value that does not parse or is out of range.
    pub fn settings_for(&self, name: &str, base: &LogSettings) -> Result<LogSettings, FileError> {
        let mut s = base.clone();
        let section = self.logs.get(name).into_iter().flatten();
        for (setting, value, line) in self.defaults.iter().chain(section) {
            apply(&mut s, setting, value).map_err(|problem| FileError { line: *line, problem })?;
        }
        Ok(s)
    }
}

/// Sets one setting, with units for `segment.bytes`.
fn apply(s: &mut LogSettings, name: &str, value: &str) -> Result<(), String> {
    let value = if name == "segment.bytes" { crate::size::parse_bytes(value)?.to_string() } else { value.to_owned() };
    s.set(name, &value).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleaner::CleanupPolicy;

    #[test]
    fn defaults_then_sections_over_the_command_line() {
        let text = "# c\nmin.cleanable.dirty.ratio = 0.3\n\n[orders]\ndelete.retention.ms=5\nsegment.bytes = 1MiB\n[audit]\ncleanup.policy = delete\n";
        let f = SettingsFile::parse(text).expect("parses");
        let base = LogSettings { min_compaction_lag_ms: 7, ..LogSettings::default() };
        let orders = f.settings_for("orders", &base).expect("orders");
        assert_eq!(
            (orders.min_cleanable_dirty_ratio, orders.delete_retention_ms, orders.segment_bytes),
            (0.3, 5, 1 << 20)
        );
        assert_eq!(orders.min_compaction_lag_ms, 7, "the command line's value stays");
        assert_eq!(f.settings_for("audit", &base).expect("audit").cleanup_policy, CleanupPolicy::Delete);
        assert_eq!(f.settings_for("other", &base).expect("other").min_cleanable_dirty_ratio, 0.3);
    }

    #[test]
    fn bad_lines_name_their_number() {
        for (text, line, needle) in [
            ("a.b = 1\n", 1, "unknown setting"),
            ("\n[x\n", 2, "section header"),
            ("[x]\n[x]\n", 2, "twice"),
            ("[x]\nnothing here\n", 2, "name = value"),
        ] {
            let e = SettingsFile::parse(text).expect_err(text);
            assert_eq!(e.line, line, "{text:?}");
            assert!(e.problem.contains(needle), "{e}");
        }
        let f = SettingsFile::parse("[x]\nmin.cleanable.dirty.ratio = 2\n").expect("parses");
        let e = f.settings_for("x", &LogSettings::default()).expect_err("out of range");
        assert_eq!(e.line, 2);
        assert!(e.problem.contains("min.cleanable.dirty.ratio"), "{e}");
    }
}

//! Which logs of a data directory are compacted, and with what settings: Kafka's topic settings under their
//! names, in layers, each setting remembering where it came from.
//!
//! From the lowest layer up: the built-in defaults (Kafka's broker defaults; for a Kafka topic
//! `cleanup.policy=delete`, Kafka's default; for `__consumer_offsets` and `__transaction_state`, what Kafka
//! creates them with: `cleanup.policy=compact`, 100 MiB segments); then either what an earlier run saved in the
//! data directory ([`SAVED_FILE`]: its settings file, then its flags) or, when this run has a settings file
//! (`--config`: lines before any section for every log, then `[name]` sections), that file instead; then this
//! run's flags. A run saves what it was given, so a later run without `--config` or flags behaves as it did:
//! a `--config` replaces everything saved, a flag replaces the saved value of that setting.
//!
//! In a native data directory every subdirectory is a log and is managed. In a Kafka log directory a section
//! is a topic (`[orders]` applies to every `orders-N`), and naming a topic in a section makes it compacted
//! unless the section says otherwise; `cleanup.policy = compact` before any section (or the flag) makes every
//! topic compacted. A topic whose policy stays Kafka's default `delete` is left alone, and listed as such.
//!
//! ```text
//! # Every log (or topic named below).
//! min.cleanable.dirty.ratio = 0.3
//!
//! [orders]
//! delete.retention.ms = 3600000
//! segment.bytes = 64MiB
//!
//! [audit]
//! cleanup.policy = delete
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use kafka_records::files::read_bounded;

use cleaner::LogSettings;
use log_core::Format;
use serde::{Deserialize, Serialize};

/// The file a run saves its settings in, in the data directory.
pub const SAVED_FILE: &str = "logcompact-settings.json";
/// The largest settings file read (a FIFO or `/dev/zero` given as `--config` is refused, never waited on).
pub const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// Settings by name, as text: `(name, value, where)` in file order.
pub type Overrides = Vec<(String, String, String)>;

/// A parsed settings file.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsFile {
    /// For every managed log.
    pub defaults: Overrides,
    /// Per log (native) or topic (Kafka), by name.
    pub logs: BTreeMap<String, Overrides>,
}

/// A line of a settings file that is not right.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct FileError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub problem: String,
}

/// Why settings could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The settings file cannot be read (missing, not a regular file, too large).
    #[error("cannot read the settings file {path}: {why}")]
    Unreadable {
        /// The file.
        path: String,
        /// Why not.
        why: String,
    },
    /// A line of it is wrong.
    #[error("{path}: {error}")]
    Line {
        /// The file.
        path: String,
        /// The line.
        error: FileError,
    },
    /// A value does not fit its setting.
    #[error("{name}: {setting} = {value} ({from}): {why}")]
    Value {
        /// The log or topic.
        name: String,
        /// The setting.
        setting: String,
        /// The value.
        value: String,
        /// Where it came from.
        from: String,
        /// Why it does not fit.
        why: String,
    },
}

impl SettingsFile {
    /// Parses the text of a settings file; `origin` (its path) goes into every setting's source.
    ///
    /// # Errors
    /// [`FileError`] naming the first bad line.
    pub fn parse(text: &str, origin: &str) -> Result<Self, FileError> {
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
                if log_core::kafka::topic_partition(name)
                    .map_or(name, |(topic, _)| topic)
                    .eq(log_core::kafka::metadata_log::METADATA_TOPIC)
                {
                    return Err(FileError {
                        line,
                        problem: format!(
                            "section [{name}] names the cluster's KRaft metadata log, which is never cleaned: the \
                             broker's raft layer owns it and compacts it with snapshots"
                        ),
                    });
                }
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
            let entry = (name.to_owned(), value.to_owned(), format!("{origin} line {line}"));
            match &section {
                Some(s) => file.logs.entry(s.clone()).or_default().push(entry),
                None => file.defaults.push(entry),
            }
        }
        Ok(file)
    }

    /// Reads and parses the settings file at `path`, bounded in size and only a regular file (a FIFO is refused,
    /// never waited on).
    ///
    /// # Errors
    /// [`SettingsError`].
    pub fn read(path: &Path) -> Result<Self, SettingsError> {
        let shown = path.display().to_string();
        let unreadable = |why: String| SettingsError::Unreadable { path: shown.clone(), why };
        let text = read_bounded(path, MAX_SETTINGS_BYTES).map_err(unreadable)?;
        SettingsFile::parse(&text, &shown).map_err(|error| SettingsError::Line { path: shown.clone(), error })
    }
}

/// What a run saved for the next ones.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    /// The last settings file's layer.
    pub file: SettingsFile,
    /// The flags given, by setting name: `(value, where)`.
    pub flags: BTreeMap<String, (String, String)>,
}

impl Saved {
    /// The saved settings of `data_dir`; empty when there are none.
    ///
    /// # Errors
    /// [`SettingsError::Unreadable`] for a saved file that does not parse.
    pub fn read(data_dir: &Path) -> Result<Saved, SettingsError> {
        let path = data_dir.join(SAVED_FILE);
        match read_bounded(&path, MAX_SETTINGS_BYTES) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| SettingsError::Unreadable { path: path.display().to_string(), why: e.to_string() }),
            Err(_) if !path.exists() => Ok(Saved::default()),
            Err(why) => Err(SettingsError::Unreadable { path: path.display().to_string(), why }),
        }
    }

    /// Writes these settings into `data_dir` (a temporary file renamed over the old one).
    ///
    /// # Errors
    /// The I/O error.
    pub fn write(&self, data_dir: &Path) -> std::io::Result<()> {
        let text = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        let tmp = data_dir.join(format!("{SAVED_FILE}.tmp"));
        let written = std::fs::write(&tmp, text)
            .and_then(|()| std::fs::File::open(&tmp)?.sync_all())
            .and_then(|()| std::fs::rename(&tmp, data_dir.join(SAVED_FILE)));
        if written.is_err() {
            // A full disk leaves a part-written temporary: removed; the saved settings before it still stand.
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// One log's settings with where each came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    /// The settings.
    pub settings: LogSettings,
    /// Setting name → where its value came from (`default`, a file and line, a flag; `saved: ` in front when
    /// an earlier run gave it).
    pub sources: BTreeMap<String, String>,
}

impl Resolved {
    /// The settings something gave (not a default: neither this project's nor Kafka's), grouped by where they
    /// came from: `name = value, name = value (where from); ...; the rest defaults`, or `all defaults` when
    /// nothing gave any.
    /// What a command that used them prints, so that an operator sees which of the topic's settings it ran
    /// with, in a line.
    pub fn given(&self) -> String {
        let mut by_source: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (setting, source) in &self.sources {
            if source == "default"
                || source.ends_with("Kafka's default")
                || source.ends_with("Kafka's default for a topic")
            {
                continue;
            }
            by_source.entry(source).or_default().push(format!("{setting} = {}", self.settings.get(setting)));
        }
        if by_source.is_empty() {
            return "all defaults".to_owned();
        }
        let groups: Vec<String> =
            by_source.into_iter().map(|(source, set)| format!("{} ({source})", set.join(", "))).collect();
        format!("{}; the rest defaults", groups.join("; "))
    }
}

/// The layers of settings of one run (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Layers {
    /// The data directory's format.
    pub format: Format,
    /// What earlier runs saved.
    pub saved: Saved,
    /// This run's settings file, if one was given.
    pub file: Option<SettingsFile>,
    /// This run's flags, by setting name: `(value, flag)`.
    pub flags: BTreeMap<String, (String, String)>,
    /// A stopped Kafka broker's own settings of its topics (from its metadata log), when they could be read:
    /// the layer under the saved settings, `--config` and flags, in place of Kafka's defaults.
    pub broker: Option<std::sync::Arc<kafka_records::kraft::BrokerSettings>>,
    /// What an operator should be told of where the broker's settings came from, or why they could not be read.
    pub broker_notice: Option<String>,
}

/// Kafka's internal topics, compacted with these settings when a broker creates them.
fn internal_topic(topic: &str) -> Option<&'static [(&'static str, &'static str)]> {
    match topic {
        "__consumer_offsets" | "__transaction_state" => {
            Some(&[("cleanup.policy", "compact"), ("segment.bytes", "104857600")])
        }
        _ => None,
    }
}

/// Sets `setting` to `value` in `settings` (`segment.bytes` with its units), or why the value does not fit.
fn set_one(settings: &mut LogSettings, setting: &str, value: &str) -> Result<(), String> {
    let parsed =
        if setting == "segment.bytes" { crate::size::parse_bytes(value)?.to_string() } else { value.to_owned() };
    settings.set(setting, &parsed).map_err(|e| match e {
        // What this setting must be; the setting and value are named beside it.
        cleaner::Error::InvalidConfig { setting: bad, expected, .. } if bad == setting => expected.to_owned(),
        other => other.to_string(),
    })
}

/// [`set_one`] for the log (or section) `name`, its error naming the setting, the value and where it came from.
fn set_named(
    settings: &mut LogSettings,
    name: &str,
    setting: &str,
    value: &str,
    from: &str,
) -> Result<(), SettingsError> {
    set_one(settings, setting, value).map_err(|why| SettingsError::Value {
        name: name.to_owned(),
        setting: setting.to_owned(),
        value: value.to_owned(),
        from: from.to_owned(),
        why,
    })
}

impl Layers {
    /// Checks every value this run was given (its settings file and its flags), each on its own, before any log
    /// is resolved or anything runs: a value that fits no log (a ratio of 1.7, a size of `abc`) is refused here,
    /// naming its line or flag, rather than found log by log as the run goes and saved for the next run. What
    /// only some logs refuse (a `max.compaction.lag.ms` below one log's `min.compaction.lag.ms`), and what an
    /// earlier run saved (a reading command still shows a directory whatever it holds), are found as each log is
    /// resolved ([`Layers::resolve_all`]).
    ///
    /// # Errors
    /// [`SettingsError::Value`] naming the setting, its value, where it came from, and the section (`every log`
    /// for a line before any section or a flag).
    pub fn check_values(&self) -> Result<(), SettingsError> {
        let every = "every log";
        let file = self.file.iter().flat_map(|file| {
            let defaults = file.defaults.iter().map(move |(setting, value, from)| (every, setting, value, from));
            let sections = file.logs.iter().flat_map(|(section, entries)| {
                entries.iter().map(move |(setting, value, from)| (section.as_str(), setting, value, from))
            });
            defaults.chain(sections)
        });
        let flags = self.flags.iter().map(|(setting, (value, from))| (every, setting, value, from));
        for (name, setting, value, from) in file.chain(flags) {
            set_named(&mut LogSettings::default(), name, setting, value, from)?;
        }
        Ok(())
    }

    /// These layers with the caller's word that the broker compacts the topic (`cleanup.policy = compact`
    /// given as the flag `by`): what `compact` takes to compact a Kafka partition whose own settings say
    /// nothing (see [`crate::compact::topic_policy`]).
    #[must_use]
    pub fn compact_anyway(mut self, by: &str) -> Layers {
        self.flags.insert("cleanup.policy".into(), ("compact".into(), by.to_owned()));
        self
    }

    /// What this run saves: its file and flags when it has a file; else the saved file, and the saved flags
    /// with this run's over them.
    pub fn to_save(&self) -> Saved {
        match &self.file {
            Some(file) => Saved { file: file.clone(), flags: self.flags.clone() },
            None => {
                let mut flags = self.saved.flags.clone();
                flags.extend(self.flags.iter().map(|(k, v)| (k.clone(), v.clone())));
                Saved { file: self.saved.file.clone(), flags }
            }
        }
    }

    /// The settings file in force: this run's, else the saved one.
    fn file(&self) -> (&SettingsFile, bool) {
        match &self.file {
            Some(f) => (f, false),
            None => (&self.saved.file, true),
        }
    }

    /// True when a section names `name`.
    pub fn names(&self, name: &str) -> bool {
        self.file().0.logs.contains_key(name)
    }

    /// The sections of the file in force that name no log found (for a warning).
    pub fn unknown_sections<'a>(&'a self, found: &'a [String]) -> impl Iterator<Item = &'a String> + 'a {
        self.file().0.logs.keys().filter(move |n| !found.contains(n))
    }

    /// The settings of the log `name` (a native log's directory name, or a Kafka topic), or `None` when it is a
    /// Kafka topic whose `cleanup.policy` does not compact (left alone: never opened).
    ///
    /// # Errors
    /// [`SettingsError::Value`] naming the setting, its value and where it came from.
    pub fn resolve(&self, name: &str) -> Result<Option<Resolved>, SettingsError> {
        let kafka = self.format == Format::Kafka;
        let resolved = self.resolve_all(name)?;
        if kafka && !resolved.settings.cleanup_policy.compacts() {
            return Ok(None);
        }
        Ok(Some(resolved))
    }

    /// Why the Kafka topic `name` is left alone: its `cleanup.policy` and where that came from, with what would
    /// make it compacted, said only as safe when it is (a `delete` topic's unkeyed records would go).
    /// Whether the partition directory `dir` of topic `name` is stray (its topic id is not the broker's topic of
    /// that name: [`kafka_records::kraft::Stray`]); `None` without broker metadata to compare with.
    pub fn stray(&self, dir: &std::path::Path, name: &str) -> Option<kafka_records::kraft::Stray> {
        self.broker.as_ref()?.stray(dir, name)
    }

    /// Why the log `name` is left alone, as its resolved settings say.
    pub fn why_left_alone(&self, name: &str) -> String {
        let Ok(r) = self.resolve_all(name) else { return format!("topic {name}'s settings do not resolve") };
        let from = r.sources.get("cleanup.policy").cloned().unwrap_or_default();
        let policy = r.settings.cleanup_policy.name();
        if from.starts_with("broker:") {
            format!(
                "topic {name}'s cleanup.policy is {policy} ({from}): Kafka's cleaner never compacts it, and neither \
                 does this one"
            )
        } else {
            format!(
                "topic {name}'s cleanup.policy is taken as {policy} ({from}; no broker metadata says otherwise): only \
                 if the broker compacts it (its topic config says cleanup.policy=compact) name it in a settings \
                 section [{name}] with cleanup.policy = compact, or give --metadata-dir; compacting a delete topic \
                 loses its unkeyed records"
            )
        }
    }

    /// The settings of the log `name` and their sources, whatever its `cleanup.policy` (see [`Layers::resolve`]).
    ///
    /// # Errors
    /// As [`Layers::resolve`].
    pub fn resolve_all(&self, name: &str) -> Result<Resolved, SettingsError> {
        let (file, saved) = self.file();
        let kafka = self.format == Format::Kafka;
        let internal = internal_topic(name).filter(|_| kafka);
        let mut settings = LogSettings::default();
        let mut sources: BTreeMap<String, String> =
            cleaner::settings::SETTING_NAMES.iter().map(|n| ((*n).to_owned(), "default".to_owned())).collect();
        let mut layers: Vec<(String, String, String)> = Vec::new();
        let broker = self.broker.as_ref().filter(|_| kafka).and_then(|b| b.topic(name));
        match &broker {
            Some(own) => {
                // What the broker itself holds, in its order: the segment size Kafka's cleaner uses (its
                // internal.segment.bytes when set) last, over segment.bytes.
                let size = kafka_records::kraft::broker_settings::segment_size(own);
                for s in own.iter().filter(|s| cleaner::settings::SETTING_NAMES.contains(&s.name)) {
                    layers.push((s.name.to_owned(), s.value.clone(), format!("broker: {}", s.source)));
                }
                if let Some(size) = size.filter(|s| s.name != "segment.bytes") {
                    layers.push((
                        "segment.bytes".into(),
                        size.value.clone(),
                        format!("broker: {} ({})", size.source, size.name),
                    ));
                }
            }
            None => {
                if kafka {
                    layers.push(("cleanup.policy".into(), "delete".into(), "Kafka's default for a topic".into()));
                }
                for &(setting, value) in internal.unwrap_or(&[]) {
                    layers.push((setting.to_owned(), value.to_owned(), format!("Kafka's default for {name}")));
                }
            }
        }
        let prefix = if saved { "saved: " } else { "" };
        for (setting, value, from) in &file.defaults {
            layers.push((setting.clone(), value.clone(), format!("{prefix}{from}")));
        }
        if let Some(section) = file.logs.get(name) {
            // A section's name alone compacts a topic only where the broker's own policy is not known: naming a
            // delete topic must not compact it (its unkeyed records would go).
            if kafka && broker.is_none() {
                layers.push((
                    "cleanup.policy".into(),
                    "compact".into(),
                    format!("{prefix}named in a section [{name}]"),
                ));
            }
            for (setting, value, from) in section {
                layers.push((setting.clone(), value.clone(), format!("{prefix}{from}")));
            }
        }
        if saved {
            for (setting, (value, from)) in &self.saved.flags {
                if !self.flags.contains_key(setting) {
                    layers.push((setting.clone(), value.clone(), format!("saved: {from}")));
                }
            }
        }
        for (setting, (value, from)) in &self.flags {
            layers.push((setting.clone(), value.clone(), from.clone()));
        }
        // Each setting's last layer only: a layer above replaces a value below it, a bad one too (a flag given to
        // mend what an earlier run saved), and the settings are checked as they end up.
        let mut last: Vec<(String, String, String)> = Vec::with_capacity(layers.len());
        for layer in layers {
            last.retain(|(setting, _, _)| *setting != layer.0);
            last.push(layer);
        }
        for (setting, value, from) in last {
            set_named(&mut settings, name, &setting, &value, &from)?;
            sources.insert(setting, from);
        }
        if kafka && settings.segment_bytes > i32::MAX as u64 {
            return Err(SettingsError::Value {
                name: name.to_owned(),
                setting: "segment.bytes".into(),
                value: settings.segment_bytes.to_string(),
                from: sources.get("segment.bytes").cloned().unwrap_or_default(),
                why: "Kafka's segment.bytes is an int (at most 2147483647)".into(),
            });
        }
        Ok(Resolved { settings, sources })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleaner::CleanupPolicy;

    fn layers(format: Format, file: Option<&str>) -> Layers {
        Layers { format, file: file.map(|t| SettingsFile::parse(t, "f.conf").expect("parses")), ..Layers::default() }
    }

    #[test]
    fn defaults_then_sections_then_flags_each_with_its_source() {
        let text = "# c\nmin.cleanable.dirty.ratio = 0.3\n\n[orders]\ndelete.retention.ms=5\nsegment.bytes = 1MiB\n[audit]\ncleanup.policy = delete\n";
        let mut l = layers(Format::Native, Some(text));
        l.flags.insert("min.compaction.lag.ms".into(), ("7".into(), "--min-compaction-lag-ms".into()));
        let orders = l.resolve("orders").expect("valid").expect("managed");
        let s = &orders.settings;
        assert_eq!((s.min_cleanable_dirty_ratio, s.delete_retention_ms, s.segment_bytes), (0.3, 5, 1 << 20));
        assert_eq!(s.min_compaction_lag_ms, 7);
        assert_eq!(orders.sources["segment.bytes"], "f.conf line 6");
        assert_eq!(orders.sources["min.compaction.lag.ms"], "--min-compaction-lag-ms");
        assert_eq!(orders.sources["max.compaction.lag.ms"], "default");
        let audit = l.resolve("audit").expect("valid").expect("managed");
        assert_eq!(audit.settings.cleanup_policy, CleanupPolicy::Delete);
        assert_eq!(
            l.resolve("other").expect("valid").expect("native logs are all managed").settings.min_cleanable_dirty_ratio,
            0.3
        );
    }

    #[test]
    fn a_kafka_topic_nobody_names_is_left_alone_and_internal_topics_compact() {
        let l = layers(Format::Kafka, Some("[orders]\nsegment.bytes = 64MiB\n"));
        assert!(l.resolve("payments").expect("valid").is_none());
        let offsets = l.resolve("__consumer_offsets").expect("valid").expect("internal");
        assert_eq!(offsets.settings.segment_bytes, 104_857_600);
        assert_eq!(offsets.sources["segment.bytes"], "Kafka's default for __consumer_offsets");
        assert_eq!(l.resolve("orders").expect("valid").expect("named").settings.segment_bytes, 64 << 20);
        let big = layers(Format::Kafka, Some("[orders]\nsegment.bytes = 3GiB\n"));
        assert!(big.resolve("orders").is_err(), "Kafka's segment.bytes is an int");
    }

    #[test]
    fn saved_settings_hold_until_replaced() {
        let first = layers(Format::Native, Some("[audit]\ncleanup.policy = delete\n"));
        let saved = first.to_save();
        let second = Layers { format: Format::Native, saved: saved.clone(), ..Layers::default() };
        let audit = second.resolve("audit").expect("valid").expect("managed");
        assert_eq!(audit.settings.cleanup_policy, CleanupPolicy::Delete, "a second run without --config keeps it");
        assert_eq!(audit.sources["cleanup.policy"], "saved: f.conf line 2");
        let third = Layers { format: Format::Native, saved, file: Some(SettingsFile::default()), ..Layers::default() };
        assert_eq!(
            third.resolve("audit").expect("valid").expect("managed").settings.cleanup_policy,
            CleanupPolicy::Compact
        );
    }

    #[test]
    fn this_runs_settings_file_replaces_everything_saved_and_a_flag_only_its_own_value() {
        // Run 1: a flag. Run 2: a settings file with another value. Run 3: nothing.
        let mut first = Layers { format: Format::Native, ..Layers::default() };
        first.flags.insert("min.cleanable.dirty.ratio".into(), ("0.95".into(), "--min-cleanable-dirty-ratio".into()));
        let second =
            Layers { saved: first.to_save(), ..layers(Format::Native, Some("min.cleanable.dirty.ratio = 0.3\n")) };
        let ratio = |l: &Layers| l.resolve("x").expect("valid").expect("managed").settings.min_cleanable_dirty_ratio;
        assert_eq!(ratio(&second), 0.3, "this run's file beats a saved flag");
        let third = Layers { format: Format::Native, saved: second.to_save(), ..Layers::default() };
        assert_eq!(ratio(&third), 0.3, "a later run behaves as the last one");
        // A flag on a run without a file replaces only its own saved value.
        let mut fourth = Layers { format: Format::Native, saved: third.to_save(), ..Layers::default() };
        fourth.flags.insert("delete.retention.ms".into(), ("5".into(), "--delete-retention-ms".into()));
        let fifth = Layers { format: Format::Native, saved: fourth.to_save(), ..Layers::default() };
        let r = fifth.resolve("x").expect("valid").expect("managed");
        assert_eq!((r.settings.min_cleanable_dirty_ratio, r.settings.delete_retention_ms), (0.3, 5));
        assert_eq!(r.sources["delete.retention.ms"], "saved: --delete-retention-ms");
    }

    #[test]
    fn a_kafka_topic_compacts_when_named_or_when_every_topic_does() {
        let every = layers(Format::Kafka, Some("cleanup.policy = compact\n[audit]\ncleanup.policy = delete\n"));
        let payments = every.resolve("payments").expect("valid").expect("compacted: every topic is");
        assert_eq!(payments.sources["cleanup.policy"], "f.conf line 1");
        assert!(every.resolve("audit").expect("valid").is_none(), "its section says delete");
        let named = layers(Format::Kafka, Some("[orders]\ndelete.retention.ms = 1\n"));
        let orders = named.resolve("orders").expect("valid").expect("named");
        assert_eq!(orders.sources["cleanup.policy"], "named in a section [orders]");
        let mut flag = layers(Format::Kafka, None);
        flag.flags.insert("cleanup.policy".into(), ("compact".into(), "--cleanup-policy".into()));
        assert!(flag.resolve("payments").expect("valid").is_some(), "the flag makes every topic compacted");
    }

    #[test]
    fn bad_lines_name_their_number() {
        for (text, line, needle) in [
            ("a.b = 1\n", 1, "unknown setting"),
            ("\n[x\n", 2, "section header"),
            ("[x]\n[x]\n", 2, "twice"),
            ("[x]\nnothing here\n", 2, "name = value"),
        ] {
            let e = SettingsFile::parse(text, "f").expect_err(text);
            assert_eq!(e.line, line, "{text:?}");
            assert!(e.problem.contains(needle), "{e}");
        }
        let l = layers(Format::Native, Some("[x]\nmin.cleanable.dirty.ratio = 2\n"));
        let e = l.resolve("x").expect_err("out of range");
        assert!(e.to_string().contains("f line 2") && e.to_string().contains("min.cleanable.dirty.ratio"), "{e}");
    }

    #[test]
    fn a_fifo_or_a_huge_file_is_refused_without_waiting_or_reading_it_all() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let fifo = tmp.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
        let e = SettingsFile::read(&fifo).expect_err("a FIFO");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = SettingsFile::read(Path::new("/dev/zero")).expect_err("a device");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let big = tmp.path().join("big");
        std::fs::write(&big, vec![b'#'; (MAX_SETTINGS_BYTES + 1) as usize]).expect("write");
        assert!(SettingsFile::read(&big).expect_err("too big").to_string().contains("larger than"));
    }
}

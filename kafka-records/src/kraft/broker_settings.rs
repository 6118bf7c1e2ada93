//! A topic's settings as a stopped Kafka 4.4 broker resolves them, each with where it came from: the topic's
//! own config in the metadata log, else the dynamic config of this node (`BROKER "<node.id>"`), else the
//! dynamic cluster-wide default (`BROKER ""`), else the broker's `server.properties`, else Kafka's default. The
//! broker layers use each setting's broker-level name (`log.cleaner.delete.retention.ms` for
//! `delete.retention.ms`); `internal.segment.bytes` exists only as a topic config, and when set it is the
//! segment size Kafka's cleaner groups segments by.
//!
//! The static layer (`server.properties`, and any `--override` the broker was started with) is not in the
//! data directories: without `--broker-config FILE` it is left out and Kafka's defaults stand in for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::image::MetadataImage;
use super::metadata_log::{MetadataLogError, Sources, replay};

/// The settings read, as `(topic setting, broker setting, Kafka's default)`; `None` where the broker has no
/// setting of its own.
pub const SETTINGS: [(&str, Option<&str>, Option<&str>); 10] = [
    ("cleanup.policy", Some("log.cleanup.policy"), Some("delete")),
    ("segment.bytes", Some("log.segment.bytes"), Some("1073741824")),
    ("internal.segment.bytes", None, None),
    ("delete.retention.ms", Some("log.cleaner.delete.retention.ms"), Some("86400000")),
    ("min.cleanable.dirty.ratio", Some("log.cleaner.min.cleanable.ratio"), Some("0.5")),
    ("min.compaction.lag.ms", Some("log.cleaner.min.compaction.lag.ms"), Some("0")),
    ("max.compaction.lag.ms", Some("log.cleaner.max.compaction.lag.ms"), Some("9223372036854775807")),
    ("max.decompressed.message.bytes", Some("max.decompressed.message.bytes"), Some("2147483639")),
    ("segment.index.bytes", Some("log.index.size.max.bytes"), Some("10485760")),
    ("index.interval.bytes", Some("log.index.interval.bytes"), Some("4096")),
];

/// Why the broker's settings could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerSettingsError {
    /// The metadata log could not be read.
    #[error("the KRaft metadata log {}: {source}", dir.display())]
    MetadataLog {
        /// Its directory.
        dir: PathBuf,
        /// Why.
        source: MetadataLogError,
    },
    /// A record of it does not decode.
    #[error("the KRaft metadata log {}: {source}", dir.display())]
    Record {
        /// Its directory.
        dir: PathBuf,
        /// The record.
        source: super::image::BadRecord,
    },
    /// The broker's settings file could not be read.
    #[error("{}: {why}", path.display())]
    Properties {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
}

/// One setting's value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The topic-level name.
    pub name: &'static str,
    /// Its value, as the broker holds it.
    pub value: String,
    /// Where it came from, for reports.
    pub source: String,
}

/// What a stopped broker's metadata and settings file say of its topics.
#[derive(Debug, Clone)]
pub struct BrokerSettings {
    /// The metadata log's directory.
    pub metadata_dir: PathBuf,
    /// What was replayed.
    pub sources: Sources,
    /// The replayed metadata.
    pub image: MetadataImage,
    /// This broker's `node.id` (its dynamic configs apply; other nodes' do not).
    pub node_id: Option<String>,
    /// `server.properties`, when given: its path and settings.
    pub static_config: Option<(PathBuf, BTreeMap<String, String>)>,
}

impl BrokerSettings {
    /// Replays the metadata log in `metadata_dir` (a `__cluster_metadata-0` directory) for the broker `node_id`,
    /// with its settings file `server_properties`.
    ///
    /// # Errors
    /// [`BrokerSettingsError`].
    pub fn load(
        metadata_dir: &Path,
        node_id: Option<String>,
        server_properties: Option<&Path>,
    ) -> Result<BrokerSettings, BrokerSettingsError> {
        let dir = metadata_dir.to_path_buf();
        let mut image = MetadataImage::default();
        let mut bad = None;
        let sources = replay(metadata_dir, &mut |r| {
            image.saw_timestamp(r.timestamp);
            if bad.is_none()
                && let Err(e) = image.apply(r.offset, &r.value)
            {
                bad = Some(e);
            }
        })
        .map_err(|source| BrokerSettingsError::MetadataLog { dir: dir.clone(), source })?;
        if let Some(source) = bad {
            return Err(BrokerSettingsError::Record { dir, source });
        }
        let static_config =
            server_properties.map(|p| read_properties(p).map(|props| (p.to_path_buf(), props))).transpose()?;
        Ok(BrokerSettings { metadata_dir: dir, sources, image, node_id, static_config })
    }

    /// The settings of `topic` (every one of [`SETTINGS`] the broker resolves to a value, in that order), or
    /// `None` when the metadata knows no such topic. `internal.segment.bytes` is there only when set: then it is
    /// the segment size of Kafka's cleaner and rolls ([`segment_size`]).
    pub fn topic(&self, topic: &str) -> Option<Vec<Setting>> {
        if !self.image.has_topic(topic) {
            return None;
        }
        let own = self.image.topic_configs(topic);
        let node = self.node_id.as_deref().and_then(|n| self.image.broker_configs(n));
        let cluster = self.image.broker_configs("");
        let mut out = Vec::new();
        for (name, broker_name, default) in SETTINGS {
            let found = own
                .and_then(|c| c.get(name))
                .map(|v| (v.clone(), "topic config (metadata log)".to_owned()))
                .or_else(|| {
                    let b = broker_name?;
                    let layer = |configs: Option<&BTreeMap<String, String>>, what: &str| {
                        configs.and_then(|c| c.get(b)).map(|v| (v.clone(), format!("{what} {b} (metadata log)")))
                    };
                    layer(node, &format!("node {} config", self.node_id.as_deref().unwrap_or("?")))
                        .or_else(|| layer(cluster, "cluster-wide default"))
                        .or_else(|| {
                            let (path, props) = self.static_config.as_ref()?;
                            props.get(b).map(|v| (v.trim().to_owned(), format!("{} {b}", path.display())))
                        })
                        .or_else(|| default.map(|d| (d.to_owned(), "Kafka's default".to_owned())))
                });
            if let Some((value, source)) = found {
                out.push(Setting { name, value: value.trim().to_owned(), source });
            }
        }
        Some(out)
    }
}

/// The segment size Kafka uses (`LogConfig.segmentSize()`): `internal.segment.bytes` when set, else
/// `segment.bytes`, with its source.
pub fn segment_size(settings: &[Setting]) -> Option<&Setting> {
    let get = |n: &str| settings.iter().find(|s| s.name == n);
    get("internal.segment.bytes").or_else(|| get("segment.bytes"))
}

/// The settings of a Java properties file (`server.properties`): `name=value`, `name: value` or `name value`
/// lines, `#` and `!` comments, a line ending in an odd number of backslashes continued on the next.
///
/// # Errors
/// [`BrokerSettingsError::Properties`] when it cannot be read (at most 1 MiB, a regular file).
pub fn read_properties(path: &Path) -> Result<BTreeMap<String, String>, BrokerSettingsError> {
    let text = crate::files::read_bounded(path, 1 << 20)
        .map_err(|why| BrokerSettingsError::Properties { path: path.to_path_buf(), why })?;
    Ok(parse_properties(&text))
}

/// Checks the values of a broker's `server.properties` this tool reads (each of [`SETTINGS`]' broker-level
/// names) as Kafka checks them before it starts: a value it would refuse stops a run before anything is
/// written, even when no topic takes it (`log.segment.bytes=0`, `log.cleanup.policy=Compact`). `Err` names the
/// setting, its value and what Kafka wants.
///
/// # Errors
/// The first value Kafka would refuse.
pub fn check_properties(props: &BTreeMap<String, String>) -> Result<(), String> {
    for (topic_name, broker_name, _) in SETTINGS {
        let Some(broker_name) = broker_name else { continue };
        let Some(value) = props.get(broker_name) else { continue };
        let value = value.trim();
        // The ranges of Kafka's ConfigDef beyond what a topic setting's parse checks.
        let floor = match broker_name {
            "log.segment.bytes" => Some(1 << 20),
            "log.index.size.max.bytes" => Some(4),
            "log.index.interval.bytes" => Some(0),
            _ => None,
        };
        if let Some(min) = floor
            && value.parse::<i64>().map_or(true, |v| v < min)
        {
            return Err(format!("{broker_name}={value}: Kafka wants a whole number of at least {min}"));
        }
        // The topic settings this tool takes are checked as it takes them.
        if cleaner::settings::SETTING_NAMES.contains(&topic_name) {
            let mut s = cleaner::settings::LogSettings::default();
            s.set(topic_name, value).map_err(|e| format!("{broker_name}={value}: {e}"))?;
        }
    }
    Ok(())
}

/// The settings of a Java properties file's text (see [`read_properties`]).
pub fn parse_properties(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut logical = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!')) {
            continue;
        }
        let trailing = line.len() - line.trim_end_matches('\\').len();
        if trailing % 2 == 1 {
            logical.push_str(&line[..line.len() - 1]);
            continue;
        }
        logical.push_str(line);
        let split = logical.find(['=', ':', ' ', '\t']).unwrap_or(logical.len());
        let (name, rest) = logical.split_at(split);
        let rest = rest.trim_start();
        let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest).trim_start();
        out.insert(name.to_owned(), rest.to_owned());
        logical.clear();
    }
    out
}

/// `name`'s value in the properties file `meta.properties` of the log directory `dir`.
pub fn meta_property(dir: &Path, name: &str) -> Option<String> {
    let text = crate::files::read_bounded(&dir.join("meta.properties"), 1 << 16).ok()?;
    parse_properties(&text).remove(name)
}

/// Where a data directory's metadata log is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// Found, and how (for the run's note).
    Found {
        /// The `__cluster_metadata-0` directory.
        dir: PathBuf,
        /// How it was chosen.
        how: String,
    },
    /// None that provably belongs to the data directory; why.
    NotFound {
        /// Why, for the run's note.
        why: String,
    },
}

/// Why the metadata log of a data directory cannot be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocateError {
    /// The broker's settings name a metadata log that is not there.
    #[error("{by} names {}, which holds no metadata log (__cluster_metadata-0)", path.display())]
    NamedMissing {
        /// The directory named.
        path: PathBuf,
        /// What named it.
        by: String,
    },
    /// Several metadata logs beside the data directory each register it: which is the broker's is not known.
    #[error(
        "{} holds no metadata log, and {} beside it each register it (directory.id {directory_id}): a copy \
         would give stale settings; choose the broker's with --metadata-dir",
        data_dir.display(),
        candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(" and ")
    )]
    Ambiguous {
        /// The data directory.
        data_dir: PathBuf,
        /// The metadata logs that register it.
        candidates: Vec<PathBuf>,
        /// Its `directory.id`.
        directory_id: String,
    },
}

/// The metadata log directory of the broker whose log directory is `data_dir`: the one `server.properties`
/// names (`metadata.log.dir`, else the first of `log.dirs`; an error when it is not there), else `data_dir`'s
/// own `__cluster_metadata-0`, else the one of a sibling log directory of the same node (its `meta.properties`
/// with the same `cluster.id` and `node.id`) whose metadata registers `data_dir` (this node's registration
/// lists `data_dir`'s `directory.id`): a copy of a node's directory (a backup) has the same node and would
/// give stale settings, so a sibling is taken only when it provably belongs, and two that both qualify are an
/// error.
///
/// # Errors
/// [`LocateError`].
pub fn locate(data_dir: &Path, server_properties: Option<&BTreeMap<String, String>>) -> Result<Location, LocateError> {
    const PARTITION: &str = "__cluster_metadata-0";
    if let Some(props) = server_properties {
        let named = props
            .get("metadata.log.dir")
            .map(|d| (d.clone(), "metadata.log.dir"))
            .or_else(|| props.get("log.dirs").or_else(|| props.get("log.dir")).map(|d| (d.clone(), "log.dirs")))
            .and_then(|(v, by)| v.split(',').map(str::trim).find(|d| !d.is_empty()).map(|d| (d.to_owned(), by)));
        if let Some((dir, by)) = named {
            let dir = Path::new(&dir).join(PARTITION);
            if dir.is_dir() {
                return Ok(Location::Found { dir, how: format!("named by {by} in the broker's settings") });
            }
            return Err(LocateError::NamedMissing { path: dir, by: format!("the broker's settings' {by}") });
        }
    }
    let own = data_dir.join(PARTITION);
    if own.is_dir() {
        return Ok(Location::Found { dir: own, how: "in the data directory".into() });
    }
    let not_found = |why: String| Ok(Location::NotFound { why });
    let Some(cluster) = meta_property(data_dir, "cluster.id") else {
        return not_found(format!("{} holds neither a metadata log nor meta.properties", data_dir.display()));
    };
    let node = meta_property(data_dir, "node.id");
    let Some(parent) = data_dir.canonicalize().ok().and_then(|d| d.parent().map(Path::to_path_buf)) else {
        return not_found(format!("{} has no parent directory to look beside", data_dir.display()));
    };
    let mut siblings: Vec<PathBuf> =
        std::fs::read_dir(&parent).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    siblings.retain(|p| {
        p.join(PARTITION).is_dir()
            && meta_property(p, "cluster.id").as_ref() == Some(&cluster)
            && meta_property(p, "node.id") == node
    });
    siblings.sort();
    if siblings.is_empty() {
        return not_found(format!("no metadata log in {} nor beside it", data_dir.display()));
    }
    let (Some(directory_id), Some(node_id)) =
        (meta_property(data_dir, "directory.id"), node.as_deref().and_then(|n| n.parse::<i32>().ok()))
    else {
        return not_found(format!(
            "{} has no directory.id or node.id in its meta.properties, so none of the metadata logs beside it ({}) \
             can be shown to be its broker's",
            data_dir.display(),
            siblings.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    };
    let owners: Vec<PathBuf> = siblings
        .iter()
        .map(|s| s.join(PARTITION))
        .filter(|m| {
            BrokerSettings::load(m, node.clone(), None).is_ok_and(|b| b.image.registers(node_id, &directory_id))
        })
        .collect();
    match owners.len() {
        0 => not_found(format!(
            "the metadata logs beside {} ({}) do not register it (no broker registration of node {node_id} lists \
             its directory.id {directory_id})",
            data_dir.display(),
            siblings.iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
        1 => Ok(Location::Found {
            dir: owners.into_iter().next().unwrap_or_default(),
            how: format!("beside it, registering its directory.id {directory_id}"),
        }),
        _ => Err(LocateError::Ambiguous { data_dir: data_dir.to_path_buf(), candidates: owners, directory_id }),
    }
}

/// A partition directory that belongs to no topic the broker knows: its `partition.metadata` names another topic
/// id than the metadata's topic of that name (the topic was deleted and created again while this copy was away),
/// or the metadata knows no such topic. Kafka renames such a directory `<name>.<id>-stray` as it starts and keeps
/// its records; every command leaves it alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stray {
    /// The topic id its `partition.metadata` holds.
    pub directory_topic_id: String,
    /// The id of the metadata's topic of that name, if there is one.
    pub metadata_topic_id: Option<String>,
}

impl std::fmt::Display for Stray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.metadata_topic_id {
            Some(id) => write!(
                f,
                "stray: its partition.metadata says topic id {}, the broker's metadata has the topic as {id} (it \
                 was deleted and created again); Kafka renames the directory -stray at start and keeps it, and it is \
                 left alone",
                self.directory_topic_id
            ),
            None => write!(
                f,
                "stray: its partition.metadata says topic id {}, and the broker's metadata knows no such topic; \
                 Kafka renames the directory -stray at start and keeps it, and it is left alone",
                self.directory_topic_id
            ),
        }
    }
}

/// The topic id in the `partition.metadata` of the partition directory `dir`, if it holds one.
pub fn partition_topic_id(dir: &Path) -> Option<String> {
    let text = crate::files::read_bounded(&dir.join("partition.metadata"), 1 << 12).ok()?;
    text.lines().find_map(|l| l.strip_prefix("topic_id:")).map(|id| id.trim().to_owned())
}

impl BrokerSettings {
    /// Whether the partition directory `dir` of `topic` is stray ([`Stray`]); `None` when it belongs to the
    /// metadata's topic, or holds no topic id to compare.
    pub fn stray(&self, dir: &Path, topic: &str) -> Option<Stray> {
        let directory_topic_id = partition_topic_id(dir)?;
        let metadata_topic_id = self.image.topic_id(topic).map(|id| crate::wire::uuid_string(&id));
        (metadata_topic_id.as_deref() != Some(directory_topic_id.as_str()))
            .then_some(Stray { directory_topic_id, metadata_topic_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_properties_are_read_as_java_reads_them() {
        let p = parse_properties(
            "# a comment\n! another\nlog.dirs=/a,/b\n  log.cleaner.delete.retention.ms : 5\nlog.segment.bytes 1048576\nlong=a\\\n   b\n",
        );
        assert_eq!(p["log.dirs"], "/a,/b");
        assert_eq!(p["log.cleaner.delete.retention.ms"], "5");
        assert_eq!(p["log.segment.bytes"], "1048576");
        assert_eq!(p["long"], "ab");
    }
}

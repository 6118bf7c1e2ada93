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
    let text = crate::datadir::settings::read_bounded(path, 1 << 20)
        .map_err(|why| BrokerSettingsError::Properties { path: path.to_path_buf(), why })?;
    Ok(parse_properties(&text))
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
    let text = crate::datadir::settings::read_bounded(&dir.join("meta.properties"), 1 << 16).ok()?;
    parse_properties(&text).remove(name)
}

/// The metadata log directory of the broker whose log directory is `data_dir`: the one `server.properties`
/// names (`metadata.log.dir`, else the first of `log.dirs`), else `data_dir`'s own `__cluster_metadata-0`, else
/// a sibling log directory of the same node (its `meta.properties` with the same `cluster.id` and `node.id`)
/// holding one. `None` when none is found.
pub fn locate(data_dir: &Path, server_properties: Option<&BTreeMap<String, String>>) -> Option<PathBuf> {
    const PARTITION: &str = "__cluster_metadata-0";
    if let Some(props) = server_properties {
        let named = props
            .get("metadata.log.dir")
            .or_else(|| props.get("log.dirs").or_else(|| props.get("log.dir")))
            .and_then(|v| v.split(',').map(str::trim).find(|d| !d.is_empty()))
            .map(|d| Path::new(d).join(PARTITION));
        if let Some(dir) = named.filter(|d| d.is_dir()) {
            return Some(dir);
        }
    }
    let own = data_dir.join(PARTITION);
    if own.is_dir() {
        return Some(own);
    }
    let cluster = meta_property(data_dir, "cluster.id")?;
    let node = meta_property(data_dir, "node.id");
    let parent = data_dir.canonicalize().ok()?.parent()?.to_path_buf();
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(&parent)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join(PARTITION).is_dir())
        .filter(|p| meta_property(p, "cluster.id").as_ref() == Some(&cluster) && meta_property(p, "node.id") == node)
        .collect();
    candidates.sort();
    candidates.into_iter().next().map(|p| p.join(PARTITION))
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

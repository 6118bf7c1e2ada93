//! Topic settings from a real Kafka 4.4 node's metadata log resolve as its broker resolved them: node a of
//! `interop/kafka/notes/vectors` (static `log.*` settings in server.properties, dynamic cluster-wide and
//! node-1 configs, topic configs set, deleted and appended, a topic deleted and created again, both internal
//! topics), replayed from its latest raft snapshot and log, against every (topic, setting, value, source) the
//! running broker reported through `describeConfigs` before it was stopped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kafka_records::kraft::BrokerSettings;

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../interop/kafka/notes/vectors")
}

/// The bytes of a `*.hex.txt` vector (`#` lines are comments).
fn unhex(name: &str) -> Vec<u8> {
    let text = std::fs::read_to_string(vectors().join(name)).expect("vector");
    let hex: String = text.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().concat();
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
}

/// What the broker reported of each topic: setting -> (value, source kind).
type Reported = BTreeMap<String, BTreeMap<String, (String, String)>>;

/// server.properties's text and what the broker reported.
fn reported() -> (String, Reported) {
    let text = std::fs::read_to_string(vectors().join("a-effective-configs.txt")).expect("vector");
    let mut props = String::new();
    let mut topics = Reported::new();
    let (mut in_props, mut topic) = (false, None::<String>);
    for line in text.lines() {
        if line.starts_with("## server.properties") {
            in_props = true;
            continue;
        }
        if line.starts_with("##") {
            in_props = false;
        }
        if in_props && let Some(l) = line.strip_prefix("    ") {
            props.push_str(l);
            props.push('\n');
        }
        if let Some(rest) = line.strip_prefix("### ") {
            topic = rest.split(" (topic id").next().filter(|_| rest.contains("(topic id")).map(str::to_owned);
            continue;
        }
        if let (Some(t), Some(l)) = (&topic, line.strip_prefix("    ")) {
            let cols: Vec<&str> = l.split_whitespace().collect();
            if cols.len() >= 3 && !l.contains("(not listed") {
                topics
                    .entry(t.clone())
                    .or_default()
                    .insert(cols[0].to_owned(), (cols[1].to_owned(), cols[2].to_owned()));
            }
        }
    }
    (props, topics)
}

#[test]
fn a_real_nodes_topics_resolve_as_its_broker_resolved_them() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let meta = tmp.path().join("__cluster_metadata-0");
    std::fs::create_dir(&meta).expect("mkdir");
    for name in [
        "00000000000000000000.log",
        "00000000000000000101-0000000001.checkpoint",
        "00000000000000000000-0000000000.checkpoint",
    ] {
        std::fs::write(meta.join(name), unhex(&format!("a-{name}.hex.txt"))).expect("write");
    }
    let (props, topics) = reported();
    let props_path = tmp.path().join("server.properties");
    std::fs::write(&props_path, props).expect("props");
    let broker = BrokerSettings::load(&meta, Some("1".into()), Some(&props_path)).expect("replays");
    assert!(
        broker.sources.snapshot.as_ref().is_some_and(|s| s.ends_with("00000000000000000101-0000000001.checkpoint"))
    );
    assert!(topics.len() >= 6, "{topics:?}");
    let mut compared = 0;
    for (topic, settings) in &topics {
        let ours = broker.topic(topic).unwrap_or_else(|| panic!("{topic} is not in the replayed metadata"));
        for s in &ours {
            let Some((value, kind)) = settings.get(s.name) else {
                panic!("{topic}: {} = {} ({}) where the broker listed none", s.name, s.value, s.source)
            };
            let expected_source = match kind.as_str() {
                "DYNAMIC_TOPIC_CONFIG" => "topic config",
                "DYNAMIC_BROKER_CONFIG" => "node 1 config",
                "DYNAMIC_DEFAULT_BROKER_CONFIG" => "cluster-wide default",
                "STATIC_BROKER_CONFIG" => "server.properties",
                "DEFAULT_CONFIG" => "Kafka's default",
                other => panic!("unknown source {other}"),
            };
            assert_eq!(&s.value, value, "{topic} {}", s.name);
            assert!(
                s.source.contains(expected_source),
                "{topic} {}: {} where the broker said {kind}",
                s.name,
                s.source
            );
            compared += 1;
        }
    }
    assert!(compared >= 54, "{compared} settings compared");
    // The topic deleted and created again has none of its old configs; a topic never created is unknown.
    assert!(broker.topic("cfg-gone").expect("re-created").iter().all(|s| !s.source.contains("topic config")));
    assert!(broker.topic("no-such-topic").is_none());
}

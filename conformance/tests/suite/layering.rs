//! The workspace's layering, checked on its sources. log-core stands on floors, one folder or more each
//! (`FLOORS`: the ground and the Kafka codec leaf, the byte seam `format/`, the core, the protocols), and no
//! file imports a floor above its own; the core asks a segment format only through `Format`'s methods (see
//! the `format` module's docs), so its module imports have no circle longer than two files. The front door
//! (`logcompact`), Kafka's records (`kafka-records`) and the cleaner have no import circle at all.
//!
//! A module's imports are the `crate::` and `super::` paths its code names (outside comments and its unit
//! tests), a `mod.rs`'s own `use` of its child modules, and re-exports followed to where the item is defined
//! (`lib.rs`'s and every `mod.rs`'s `pub use`). A method call on `Format` is no import of the module that
//! implements it: that is the seam.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The ground floor's folder: its files may import only each other and the Kafka codec leaf.
const GROUND: &str = "ground/";
/// The Kafka codec, a leaf.
const CODEC: &str = "format/kafka/codec/";
/// log-core's floors, bottom up, by folder (the longest prefix of a file's path names its floor; `""` is the
/// crate's top folder, the core): a file imports its own floor and those below it, never one above. `lib.rs`
/// is the crate's front and re-exports from every floor.
const FLOORS: [(&str, u8); 6] = [(GROUND, 0), (CODEC, 0), ("format/", 1), ("", 2), ("protocol/", 3), ("repair/", 3)];
/// The longest import circle allowed (two modules that name each other's types).
const LONGEST_CIRCLE: usize = 2;

type ModPath = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("list the sources") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `format/kafka/mod.rs` -> `["format", "kafka"]`; `lib.rs` -> `[]`.
fn mod_path(file: &str) -> ModPath {
    let mut parts: ModPath = file.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a file as the check reads it: line comments dropped, its unit tests cut off.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().map(|l| l.find("//").map_or(l, |i| &l[..i])).collect::<Vec<_>>().join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths of a use tree (`a::b::{c, d::{e, f as g}}`), each as its segments (an alias dropped).
fn expand(tree: &str) -> Vec<ModPath> {
    expand_named(tree).into_iter().map(|(path, _)| path).collect()
}

/// As [`expand`], each path with the name it is brought in under (its alias, else its last segment).
fn expand_named(tree: &str) -> Vec<(ModPath, String)> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut parts = tree.split(" as ");
        let path = parts.next().unwrap_or("").trim();
        let segments: ModPath =
            path.split("::").map(str::trim).filter(|s| !s.is_empty() && *s != "self").map(str::to_owned).collect();
        let Some(last) = segments.last().cloned() else { return Vec::new() };
        let name = parts.next().map_or(last, |a| a.trim().to_owned());
        return vec![(segments, name)];
    };
    let prefix: ModPath =
        tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&body[start..]);
    let mut out = Vec::new();
    for item in items {
        for (rest, name) in expand_named(item) {
            out.push((prefix.iter().cloned().chain(rest).collect(), name));
        }
        if item.trim() == "self"
            && let Some(last) = prefix.last()
        {
            out.push((prefix.clone(), last.clone()));
        }
    }
    out
}

/// The use tree that starts at byte `at` of `text` (identifiers, `::`, braces, commas, `as`, white space).
fn tree_at(text: &str, at: usize) -> &str {
    let mut depth = 0;
    for (i, c) in text[at..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return &text[at..at + i],
            '}' => depth -= 1,
            ',' | ' ' | '\n' | '\t' if depth > 0 => {}
            c if is_ident(c) || c == ':' => {}
            _ if depth == 0 => return &text[at..at + i],
            _ => {}
        }
    }
    &text[at..]
}

/// Every `crate::` and `super::` path in `code`, made absolute from the module `here` (a module's `super` is
/// its parent, whether it is a file or a directory module).
fn named_paths(code: &str, here: &[String]) -> Vec<ModPath> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for head in ["crate::", "super::"] {
        for (at, _) in code.match_indices(head) {
            if at > 0 && (is_ident(char::from(bytes[at - 1])) || bytes[at - 1] == b':') {
                continue; // a `super::` inside `super::super::`, counted from its start
            }
            let mut rest = &code[at + head.len()..];
            let mut base: ModPath = Vec::new();
            if head == "super::" {
                base = here[..here.len().saturating_sub(1)].to_vec();
                while let Some(r) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = r;
                }
            }
            for path in expand(tree_at(code, code.len() - rest.len())) {
                out.push(base.iter().cloned().chain(path).collect());
            }
        }
    }
    out
}

struct Crate {
    modules: BTreeMap<ModPath, String>,
    /// `(module, item)` -> where the item comes from, for every `pub use` of a directory module.
    reexports: BTreeMap<(ModPath, String), ModPath>,
}

impl Crate {
    fn resolve(&self, mut parts: ModPath) -> Option<String> {
        for _ in 0..8 {
            let mut changed = false;
            for n in (0..parts.len()).rev() {
                let key = (parts[..n].to_vec(), parts[n].clone());
                if self.modules.contains_key(&parts[..n])
                    && !self.modules.contains_key(&parts[..=n])
                    && let Some(source) = self.reexports.get(&key)
                {
                    parts = source.iter().cloned().chain(parts[n + 1..].iter().cloned()).collect();
                    changed = true;
                    break;
                }
            }
            if !changed {
                break;
            }
        }
        (1..=parts.len()).rev().find_map(|n| self.modules.get(&parts[..n]).cloned())
    }
}

/// The module imports of the workspace crate `name` (its directory), file by file.
fn imports_of(name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name).join("src");
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    let mut sources = BTreeMap::new();
    for p in &paths {
        let name = p.strip_prefix(&root).expect("inside src").to_str().expect("utf-8").replace('\\', "/");
        sources.insert(name, code(&std::fs::read_to_string(p).expect("read a source")));
    }
    let modules: BTreeMap<ModPath, String> = sources.keys().map(|f| (mod_path(f), f.clone())).collect();
    let mut krate = Crate { modules, reexports: BTreeMap::new() };
    // Re-exports of directory modules (`lib.rs` included): `pub use child::path::{items}` and `pub use path;`.
    for (file, text) in &sources {
        if !(file.ends_with("mod.rs") || file == "lib.rs") {
            continue;
        }
        let here = mod_path(file);
        for (at, _) in text.match_indices("pub use ").chain(text.match_indices("pub(crate) use ")) {
            let start = at + text[at..].find("use ").expect("use") + 4;
            let tree = tree_at(text, start);
            if tree.starts_with("crate::") || tree.starts_with("super::") {
                continue;
            }
            let alias = text[start + tree.len()..]
                .trim_start()
                .strip_prefix("as ")
                .map(|r| r.chars().take_while(|&c| is_ident(c)).collect::<String>());
            for (path, name) in expand_named(tree) {
                let name = match (&alias, tree.contains('{')) {
                    (Some(a), false) => a.clone(),
                    _ => name,
                };
                let source: ModPath = here.iter().cloned().chain(path).collect();
                krate.reexports.insert((here.clone(), name), source);
            }
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in &sources {
        let here = mod_path(file);
        let is_dir = file.ends_with("mod.rs") || file == "lib.rs";
        let mut named = named_paths(text, &here);
        if is_dir {
            // `use child::...` in a directory module names its child.
            for (at, _) in text.match_indices("use ") {
                if at > 0 && is_ident(char::from(text.as_bytes()[at - 1])) {
                    continue;
                }
                let tree = tree_at(text, at + 4);
                let tree = tree.strip_prefix("self::").unwrap_or(tree);
                let head: String = tree.chars().take_while(|&c| is_ident(c)).collect();
                let child: ModPath = here.iter().cloned().chain([head]).collect();
                if krate.modules.contains_key(&child) {
                    named.extend(expand(tree).into_iter().map(|p| here.iter().cloned().chain(p).collect()));
                }
            }
        }
        let mut to = BTreeSet::new();
        for path in named {
            if let Some(target) = krate.resolve(path)
                && target != *file
                && target != "lib.rs"
            {
                to.insert(target);
            }
        }
        edges.insert(file.clone(), to);
    }
    edges
}

/// Strongly connected components of `edges` (Tarjan), largest first.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on.insert(v);
        for w in &s.edges[v] {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    let mut out: Vec<Vec<String>> = s.out.into_iter().filter(|c| c.len() > 1).collect();
    out.sort_by_key(|c| std::cmp::Reverse(c.len()));
    out
}

#[test]
fn no_import_circle_is_longer_than_two_files() {
    let edges = imports_of("log-core");
    assert!(edges.len() > 40, "read {} files", edges.len());
    let found = circles(&edges);
    let long: Vec<_> = found.iter().filter(|c| c.len() > LONGEST_CIRCLE).collect();
    assert!(long.is_empty(), "import circles longer than {LONGEST_CIRCLE} files: {long:#?}");
}

#[test]
fn the_ground_floor_and_the_kafka_codec_import_nothing_above_them() {
    let edges = imports_of("log-core");
    for (file, to) in &edges {
        let allowed = |t: &String| t.starts_with(GROUND) || t.starts_with(CODEC);
        if file.starts_with(GROUND) || file.starts_with(CODEC) {
            let above: Vec<_> = to.iter().filter(|t| !allowed(t)).collect();
            assert!(above.is_empty(), "{file} imports {above:?}");
        }
    }
}

#[test]
fn the_core_never_imports_a_formats_own_modules() {
    // The core's files ask the format through `Format`'s methods; only the format wing names its parts.
    let core = ["log.rs", "reader.rs", "segment.rs", "scan.rs", "tail.rs", "cleaning.rs", "group_copy.rs", "open.rs"];
    let edges = imports_of("log-core");
    for file in core {
        let reaching: Vec<_> = edges[file]
            .iter()
            .filter(|t| t.starts_with("protocol/") || t.starts_with("format/native/") || t.starts_with("format/kafka/"))
            .collect();
        assert!(reaching.is_empty(), "{file} imports {reaching:?}");
    }
}

#[test]
fn the_check_sees_a_circle_when_there_is_one() {
    // The check itself can fail: a made-up graph with a three-file circle is reported.
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a.rs", "b.rs"), ("b.rs", "c.rs"), ("c.rs", "a.rs"), ("d.rs", "a.rs")] {
        edges.entry(a.into()).or_default().insert(b.into());
        edges.entry(b.into()).or_default();
    }
    assert_eq!(circles(&edges), vec![vec!["a.rs".to_owned(), "b.rs".to_owned(), "c.rs".to_owned()]]);
    // And the parser reads grouped, nested and aliased uses.
    let paths = named_paths("use crate::a::{b, c::{d, e as f}};\nlet x = super::g::h();", &["n".into(), "m".into()]);
    let want: Vec<ModPath> = vec![
        vec!["a".into(), "b".into()],
        vec!["a".into(), "c".into(), "d".into()],
        vec!["a".into(), "c".into(), "e".into()],
        vec!["n".into(), "g".into(), "h".into()],
    ];
    assert_eq!(paths, want);
    let named = expand_named("a::{b as c, d}");
    assert_eq!(
        named,
        vec![(vec!["a".into(), "b".into()], "c".to_owned()), (vec!["a".into(), "d".into()], "d".to_owned())]
    );
}

#[test]
fn the_front_door_kafkas_records_and_the_cleaner_have_no_import_circle() {
    let found: Vec<_> = ["logcompact", "kafka-records", "cleaner"]
        .into_iter()
        .map(|name| (name, circles(&imports_of(name))))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    assert!(found.is_empty(), "import circles: {found:#?}");
}

/// The floor of a log-core file ([`FLOORS`]); `None` for a folder the table does not name.
fn floor(file: &str) -> Option<u8> {
    let top_folder = file.split_once('/').map(|(d, _)| d);
    let named = top_folder.is_none_or(|d| FLOORS.iter().any(|(f, _)| f.trim_end_matches('/') == d));
    let longest = FLOORS.iter().filter(|(f, _)| file.starts_with(f)).max_by_key(|(f, _)| f.len());
    longest.filter(|_| named).map(|&(_, n)| n)
}

/// Every import of `edges` that reaches a floor above its file's own, as `file -> target`.
fn upward_arrows(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut up = Vec::new();
    for (file, to) in edges.iter().filter(|(f, _)| f.as_str() != "lib.rs") {
        for t in to {
            if floor(t) > floor(file) {
                up.push(format!("{file} -> {t}"));
            }
        }
    }
    up
}

#[test]
fn no_log_core_file_imports_a_floor_above_its_own() {
    let edges = imports_of("log-core");
    let unplaced: Vec<_> = edges.keys().filter(|f| floor(f).is_none()).collect();
    assert!(unplaced.is_empty(), "folders without a floor in FLOORS: {unplaced:?}");
    let up = upward_arrows(&edges);
    assert!(up.is_empty(), "imports of a floor above: {up:#?}");
    // The check can fail: the core reaching a protocol, and the ground reaching the seam, are arrows up.
    let mut made_up: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    made_up.entry("open.rs".into()).or_default().insert("protocol/kafka/recovery.rs".into());
    made_up.entry("ground/error.rs".into()).or_default().insert("format/mod.rs".into());
    made_up.entry("protocol/dispatch.rs".into()).or_default().insert("log.rs".into());
    assert_eq!(upward_arrows(&made_up), ["ground/error.rs -> format/mod.rs", "open.rs -> protocol/kafka/recovery.rs"]);
}

#[test]
fn log_core_names_its_modules_where_they_are() {
    // `crate::kafka` (Kafka's bytes and protocols under one name) is for other crates: inside log-core a path
    // names the floor it reaches, so that the floors above see every import.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../log-core/src");
    let mut paths = Vec::new();
    rust_files(&root, &mut paths);
    for p in paths.iter().filter(|p| !p.ends_with("lib.rs")) {
        let text = code(&std::fs::read_to_string(p).expect("read a source"));
        assert!(!text.contains("crate::kafka::"), "{} names crate::kafka", p.display());
    }
}

#[test]
fn no_format_file_opens_impl_log() {
    // The core runs one open and one commit for every format (`open.rs`, `swap.rs`) and asks a format's
    // protocol for the steps that differ; a format's files are handed what they need, never the `Log`.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../log-core/src");
    for folder in ["format", "protocol", "repair"] {
        let mut paths = Vec::new();
        rust_files(&root.join(folder), &mut paths);
        assert!(!paths.is_empty(), "no files under {folder}/");
        for p in paths {
            let text = code(&std::fs::read_to_string(&p).expect("read a source"));
            assert!(!text.contains("impl Log "), "{} opens impl Log", p.display());
        }
    }
}

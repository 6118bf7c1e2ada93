//! Every command line the README and the guides show parses as the CLI defines it, so the documents cannot
//! drift from the flags again (a flag renamed or removed turns this red, naming the file and line).
//!
//! A command line is a line of a fenced code block that starts with `logcompact` (after an optional `$ ` prompt
//! and `NAME=value` settings of the environment), or that runs the CLI through cargo (`cargo run ... -p cli --`).
//! It ends at a comment, a pipe, a redirection, `&` or `;`. A word in square brackets (`[--apply]`) is an optional
//! flag the line names: it is parsed as given.

use clap::{CommandFactory, Parser};

/// The documents whose command lines are checked, from the workspace's root.
const DOCUMENTS: [&str; 5] = ["README.md", "docs/guide.md", "docs/kafka.md", "docs/reliability.md", "docs/threads.md"];

/// The words of a shell line, quotes removed, up to where the command ends.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for ch in line.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(ch);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '#' | '|' | '&' | ';' | '>') if !in_word => break,
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// The CLI's arguments on a documented line (the program's name first), or `None` for a line that runs
/// something else.
fn command_of(line: &str) -> Option<Vec<String>> {
    let line = line.trim().trim_start_matches("$ ");
    if let Some((_, rest)) = line.split_once(" -p cli -- ") {
        let mut args = vec!["logcompact".to_owned()];
        args.extend(words(rest));
        return Some(args);
    }
    let all = words(line);
    // Skip the environment's NAME=value settings before the program's name.
    let start = all.iter().position(|w| !w.contains('=') || w.starts_with('-'))?;
    let args: Vec<String> = all[start..]
        .iter()
        .map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')).unwrap_or(w).to_owned())
        .collect();
    (args.first().map(String::as_str) == Some("logcompact")).then_some(args)
}

/// `(line number, arguments)` of every command line in the fenced code blocks of `text`.
fn documented(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut fenced = false;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced && let Some(args) = command_of(line) {
            found.push((i + 1, args));
        }
    }
    found
}

/// Why the CLI refuses `args`, or `None` when it takes them: clap's error, or a hidden flag a command keeps only
/// to refuse it with a better message than clap's (`compact --threads`).
fn refused(args: &[String]) -> Option<String> {
    if let Err(e) = crate::Cli::try_parse_from(args) {
        return Some(e.to_string().lines().next().unwrap_or_default().to_owned());
    }
    let command = crate::Cli::command();
    let sub = command.find_subcommand(args.get(1)?)?;
    sub.get_arguments()
        .filter(|a| a.is_hide_set())
        .filter_map(|a| a.get_long())
        .find(|long| args.iter().any(|w| w.strip_prefix("--") == Some(*long)))
        .map(|long| format!("--{long} is a flag the command refuses"))
}

#[test]
fn every_command_line_the_documents_show_parses() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut checked = 0;
    let mut wrong = Vec::new();
    for doc in DOCUMENTS {
        let text = std::fs::read_to_string(root.join(doc)).unwrap_or_else(|e| panic!("{doc}: {e}"));
        for (line, args) in documented(&text) {
            checked += 1;
            if let Some(why) = refused(&args) {
                wrong.push(format!("{doc}:{line}: `{}`: {why}", args.join(" ")));
            }
        }
    }
    assert!(wrong.is_empty(), "command lines the documents show that the CLI refuses:\n{}", wrong.join("\n"));
    assert!(checked >= 20, "only {checked} command lines found: is the extraction still finding them?");
}

#[test]
fn a_removed_flag_in_a_document_is_found() {
    let text = "```sh\nlogcompact compact --dir /tmp/demo --threads 2   # a flag renamed long ago\n```\n";
    let found = documented(text);
    assert_eq!(found.len(), 1);
    assert!(refused(&found[0].1).is_some(), "--threads is compact's old name for --copy-threads");
    assert!(refused(&["logcompact", "compact", "--dir", "d", "--no-such-flag"].map(String::from)).is_some());
    assert_eq!(refused(&["logcompact", "compact", "--dir", "d", "--copy-threads", "2"].map(String::from)), None);
    let text = "```sh\nLOGCOMPACT_PROGRESS_INTERVAL_MS=0 logcompact check --dir 'a b' | head # x\n```\n";
    assert_eq!(documented(text)[0].1, ["logcompact", "check", "--dir", "a b"]);
}

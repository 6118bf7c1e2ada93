//! The command language of `logcompact run`: one command a line.

use std::fmt;

/// One command of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `PUT key value`: append `key = value` (the value is the rest of the line).
    Put { key: String, value: String },
    /// `DEL key`: append a tombstone.
    Del { key: String },
    /// `ROLL`: seal the active segment (a no-op when it is empty).
    Roll,
    /// `COMPACT` or `COMPACT PURGE`: one cleaning pass.
    Compact { purge: bool },
    /// `DUMP`: print every segment.
    Dump,
    /// `READ offset`: print the first record at or after the offset.
    Read { offset: u64 },
}

/// Why a line is not a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(msg.into()))
}

/// Parses one line; `Ok(None)` for a blank line or a `#` comment.
///
/// # Errors
/// A [`ParseError`] saying what is wrong.
pub fn parse_line(line: &str) -> Result<Option<Command>, ParseError> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let (word, rest) = line.split_once(char::is_whitespace).map_or((line, ""), |(w, r)| (w, r.trim()));
    let args: Vec<&str> = rest.split_whitespace().collect();
    let command = match word {
        "PUT" => {
            let Some((key, value)) = rest.split_once(char::is_whitespace) else {
                return err("PUT needs a key and a value: PUT key value");
            };
            Command::Put { key: key.to_owned(), value: value.trim().to_owned() }
        }
        "DEL" => match args.as_slice() {
            [key] => Command::Del { key: (*key).to_owned() },
            _ => return err("DEL needs exactly one key: DEL key"),
        },
        "ROLL" => match args.as_slice() {
            [] => Command::Roll,
            _ => return err("ROLL takes no argument"),
        },
        "COMPACT" => match args.as_slice() {
            [] => Command::Compact { purge: false },
            ["PURGE"] => Command::Compact { purge: true },
            _ => return err("COMPACT takes no argument or PURGE: COMPACT [PURGE]"),
        },
        "DUMP" => match args.as_slice() {
            [] => Command::Dump,
            _ => return err("DUMP takes no argument"),
        },
        "READ" => match args.as_slice() {
            [offset] => match offset.parse() {
                Ok(offset) => Command::Read { offset },
                Err(_) => return err(format!("READ needs a non-negative offset, not {offset:?}")),
            },
            _ => return err("READ needs exactly one offset: READ offset"),
        },
        other => {
            return err(format!("unknown command {other:?} (expected PUT, DEL, ROLL, COMPACT, DUMP or READ)"));
        }
    };
    Ok(Some(command))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_command() {
        let cases = [
            ("PUT p 1", Command::Put { key: "p".into(), value: "1".into() }),
            ("  PUT k hello world ", Command::Put { key: "k".into(), value: "hello world".into() }),
            ("DEL q", Command::Del { key: "q".into() }),
            ("ROLL", Command::Roll),
            ("COMPACT", Command::Compact { purge: false }),
            ("COMPACT PURGE", Command::Compact { purge: true }),
            ("DUMP", Command::Dump),
            ("READ 5", Command::Read { offset: 5 }),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(line), Ok(Some(want)), "{line}");
        }
        assert_eq!(parse_line(""), Ok(None));
        assert_eq!(parse_line("# comment"), Ok(None));
    }

    fn print(c: &Command) -> String {
        match c {
            Command::Put { key, value } => format!("PUT {key} {value}"),
            Command::Del { key } => format!("DEL {key}"),
            Command::Roll => "ROLL".into(),
            Command::Compact { purge: false } => "COMPACT".into(),
            Command::Compact { purge: true } => "COMPACT PURGE".into(),
            Command::Dump => "DUMP".into(),
            Command::Read { offset } => format!("READ {offset}"),
        }
    }

    proptest::proptest! {
        /// The fuzz target `script_parser` on the stable toolchain: arbitrary text never panics the parser,
        /// and an accepted line prints back to one that parses to the same command.
        #[test]
        fn prop_arbitrary_lines_parse_or_fail_cleanly(line in "(PUT|DEL|ROLL|COMPACT|DUMP|READ|PURGE| |\\t|-|[a-z0-9]|\\PC){0,12}") {
            if let Ok(Some(c)) = parse_line(&line) {
                proptest::prop_assert_eq!(parse_line(&print(&c)), Ok(Some(c)));
            }
        }
    }

    #[test]
    fn rejects_bad_lines() {
        for line in ["PUT p", "DEL", "DEL a b", "ROLL x", "COMPACT NOW", "READ -1", "READ", "put p 1", "FLY"] {
            assert!(parse_line(line).is_err(), "{line}");
        }
    }
}

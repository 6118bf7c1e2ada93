//! The script language's parser on arbitrary lines: never panics; what it accepts prints back to a line
//! that parses to the same command.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../cli/src/script.rs"]
#[allow(dead_code)]
mod script;

use script::{Command, parse_line};

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

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for line in text.lines() {
        if let Ok(Some(c)) = parse_line(line) {
            assert_eq!(parse_line(&print(&c)), Ok(Some(c)));
        }
    }
});

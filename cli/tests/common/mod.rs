//! Running the `logcompact` binary from tests.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `logcompact ARGS` with `stdin` as its standard input.
pub fn logcompact(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_logcompact"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn logcompact");
    // The command may exit (on a bad option) before reading its input: a broken pipe is fine then.
    match child.stdin.take().expect("stdin").write_all(stdin.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => panic!("write stdin: {e}"),
        _ => {}
    }
    child.wait_with_output().expect("wait")
}

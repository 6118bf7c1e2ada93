//! The examples are what a program embedding logcompact writes: they reach everything through the `logcompact`
//! crate, never through the crates underneath it.

#[test]
fn the_examples_use_logcompact_alone() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("examples/") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).expect("read");
        for other in ["log_core::", "cleaner::", "storage_file::", "storage_mem::"] {
            let uses =
                text.lines().filter(|l| l.contains(other) && !l.contains(&format!("logcompact::{other}"))).count();
            assert_eq!(uses, 0, "{} reaches {other} directly", path.display());
        }
    }
    assert!(seen >= 3, "the examples were found");
}

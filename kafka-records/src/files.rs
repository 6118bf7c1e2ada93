//! Reading a broker's small text files (`server.properties`, `meta.properties`, `partition.metadata`) and our
//! own settings files, bounded: a file is read only when it is a regular file no larger than asked, so a FIFO,
//! a device or a file grown without bound costs nothing.

use std::path::Path;

/// The text of the regular file `path`, at most `max` bytes.
///
/// # Errors
/// A sentence: not a regular file, larger than `max`, not UTF-8, or the I/O error.
pub fn read_bounded(path: &Path, max: u64) -> Result<String, String> {
    use std::io::Read;
    // Opened without blocking, so a FIFO with no writer is found out instead of waited on.
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(path)
            .map_err(|e| e.to_string())?
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!("it is larger than {max} bytes ({} bytes)", meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("it is larger than {max} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".into())
}

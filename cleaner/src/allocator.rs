//! One process-wide allocator setting for programs that run cleaning passes.
//!
//! The exact map (`fullkey`) and the external pass grow their tables and buffers through the global
//! allocator, freeing the smaller ones as they go. glibc's malloc serves a large block from a separate memory
//! map only above a threshold that it raises, after the first such block is freed, up to 32 MiB; blocks below
//! it come from the heap and stay resident after they are freed. A map of a 25 MiB budget then held 71 MiB:
//! its table's and key arena's earlier sizes, freed but kept. [`return_large_frees_to_the_system`] fixes the
//! threshold instead, so a freed block of 1 MiB or more goes back to the system at once; the `logcompact`
//! binary and the benchmarks call it first thing. Elsewhere (another allocator, another system) it does
//! nothing.

/// Blocks at least this large are mapped on their own and unmapped when freed.
pub const LARGE_BLOCK_BYTES: i32 = 1 << 20;

/// Makes glibc map blocks of [`LARGE_BLOCK_BYTES`] or more on their own (and unmap them when freed) for the
/// rest of the process. Returns whether the setting took.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[expect(unsafe_code, reason = "mallopt has no safe wrapper")]
pub fn return_large_frees_to_the_system() -> bool {
    // SAFETY: mallopt takes two plain integers and changes only the allocator's own parameters, under its
    // locks; M_MMAP_THRESHOLD accepts any value up to 32 MiB.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES) == 1 }
}

/// Elsewhere: nothing to set.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn return_large_frees_to_the_system() -> bool {
    false
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn the_setting_takes() {
        assert!(super::return_large_frees_to_the_system());
    }
}

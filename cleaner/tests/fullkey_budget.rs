//! The exact map stays within its budget at every moment, not only between puts: the heap it holds is
//! counted by a global allocator, whose peak must never pass the budget while keys are put until the map is
//! full. hashbrown grows a table by allocating the new one beside the old, so a map that priced only the table
//! it ends with held up to 1.5 times its budget while it grew. (One test in its own binary, so that no other
//! test's allocations count.)

// A counting global allocator is unsafe to implement; it only passes calls on to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

use cleaner::map::HashBits;
use cleaner::{FullKeyMap, OffsetMap};

/// The system allocator, counting the bytes the test's thread allocates and frees while it measures, and their
/// peak (the harness's other threads allocate too, at moments a loaded machine moves). A reallocation counts as
/// its change in size: the map's large blocks are moved by the kernel (`mremap`) without being held twice.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
}

fn changed(bytes: isize) {
    if MEASURING.with(Cell::get) {
        let live = LIVE.fetch_add(bytes, Ordering::SeqCst) + bytes;
        PEAK.fetch_max(live, Ordering::SeqCst);
    }
}

fn size(bytes: usize) -> isize {
    isize::try_from(bytes).unwrap_or(isize::MAX)
}

// SAFETY: every call is passed on to the system allocator with its own arguments; the counters only observe.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout is passed on as it came.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            changed(size(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (every allocation goes through `alloc` above).
        unsafe { System.dealloc(ptr, layout) };
        changed(-size(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; the caller guarantees `new_size` is valid for `layout`'s alignment.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            changed(size(new_size) - size(layout.size()));
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn the_exact_map_never_holds_more_than_its_budget_while_it_grows() {
    cleaner::allocator::return_large_frees_to_the_system();
    for budget in [100_000usize, 1 << 20, 7 << 20, 25 << 20] {
        for key_len in [8usize, 16, 64] {
            let mut key = vec![b'.'; key_len];
            let mut map = FullKeyMap::new(budget, HashBits::ALL);
            map.begin(0);
            LIVE.store(0, Ordering::SeqCst);
            PEAK.store(0, Ordering::SeqCst);
            MEASURING.with(|m| m.set(true));
            let mut n = 0u64;
            loop {
                key[..8.min(key_len)].copy_from_slice(&n.to_le_bytes()[..8.min(key_len)]);
                if map.put(&key, n).is_err() {
                    break;
                }
                n += 1;
            }
            MEASURING.with(|m| m.set(false));
            let peak = usize::try_from(PEAK.load(Ordering::SeqCst)).unwrap_or(0);
            assert!(
                peak <= budget,
                "{key_len}-byte keys in {budget} bytes: {peak} bytes held at the peak for {n} keys"
            );
            // And the budget is used: a map refusing keys early would pass the bound above trivially.
            assert_eq!(n as usize, FullKeyMap::capacity_for(budget, key_len), "{key_len}-byte keys in {budget}");
            assert!(peak > budget / 2, "{key_len}-byte keys in {budget} bytes: only {peak} bytes held for {n} keys");
            drop(map);
        }
    }
}

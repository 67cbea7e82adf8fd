//! For unit tests only: a test that cannot run here (not root, a tool or the time zone database
//! missing) says so on stderr, as the integration tests' `skip!` does. Library code never
//! prints; this is the one place a test of it may.

use std::io::Write;

/// Says that `test` skipped itself (in full or in part), and why.
pub fn skipped(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// The allocator of the unit tests: the system's, counting what each thread holds, so a test
/// can bound the memory a reader takes on hostile input (`peak_during`).
pub struct Meter;

thread_local! {
    static LIVE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static PEAK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn count(grow: usize, shrink: usize) {
    let _ = LIVE.try_with(|l| {
        let now = l.get().saturating_sub(shrink).saturating_add(grow);
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

// SAFETY: every call is passed to the system allocator unchanged; the counting touches only
// this thread's two cells, whose initialisation allocates nothing.
unsafe impl std::alloc::GlobalAlloc for Meter {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size(), 0);
        // SAFETY: the caller's layout, as the system allocator wants it.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        count(0, layout.size());
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count(layout.size(), 0);
        // SAFETY: as `alloc`.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        count(new, layout.size());
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { std::alloc::System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static METER: Meter = Meter;

/// What `f` returns, and the most this thread held beyond what it held before, meanwhile.
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(|l| l.get());
    PEAK.with(|p| p.set(base));
    let out = f();
    (out, PEAK.with(|p| p.get()).saturating_sub(base))
}

#[test]
fn the_meter_sees_a_large_allocation() {
    let ((), peak) = peak_during(|| {
        let v = vec![1u8; 10 << 20];
        std::hint::black_box(&v);
    });
    assert!(peak >= 10 << 20, "{peak}");
}

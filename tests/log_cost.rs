//! An access line costs no allocation in either log format, once the subscriber's buffers
//! have grown to a line's size: the line is written on every request's way out.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use lingo::observe::LogFormat;
use lingo::observe::log::Lines;

/// The system allocator, counting this thread's allocations.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

#[expect(
    unsafe_code,
    reason = "a global allocator is an unsafe trait; this one only counts"
)]
// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's guarantees for `layout` are the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, that is from the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// An event with the access line's fields, as `observe::access` writes it.
fn access_line(status: u16, error: &str) {
    let method = hyper::Method::POST;
    tracing::info!(
        target: "lingo::access",
        method = %method,
        path = %"/api/chat",
        route = %"prefix /api",
        upstream = %"models",
        status = status,
        duration_ms = 1234.0_f64 / 1000.0,
        bytes = 958u64,
        client = %"app",
        request_id = %"60035f6baa505d2a4e3d22acafd3a3bd",
        outcome = %"complete",
        error = error,
    );
}

#[test]
fn an_access_line_allocates_nothing() {
    for format in [LogFormat::Text, LogFormat::Json] {
        let subscriber = tracing_subscriber::fmt()
            .event_format(Lines(format))
            .with_writer(std::io::sink)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            // The first lines grow the buffers and register the call site.
            for _ in 0..3 {
                access_line(502, "upstream `models` is unreachable: connection refused");
            }
            let before = ALLOCATIONS.with(Cell::get);
            for status in 200..300 {
                access_line(status, "");
                access_line(status, "a \"quoted\" error=with\nlines");
            }
            let after = ALLOCATIONS.with(Cell::get);
            assert_eq!(after - before, 0, "{format:?}");
        });
    }
}

//! The binary's global allocator: mimalloc, asked the cheap way whenever the layout allows.
//!
//! Part of the binary, not the library (the library forbids `unsafe`; this module is the one
//! place that needs it). The `mimalloc` crate hands every allocation to `mi_malloc_aligned`,
//! whose fast path covers only blocks of at most 1 KiB; larger ones (a header map's table,
//! say) take mimalloc's slower, over-allocating path. A Rust layout's alignment is nearly
//! always at most a word, which every mimalloc block has (blocks are whole words, pages start
//! 16-aligned), so those go to plain `mi_malloc`; only larger alignments take the aligned calls.
//! That holds for mimalloc as built here (libmimalloc-sys with no features): its `debug`
//! features can compile in guarded objects, which, when asked for exactly, end a block at a
//! guard page, on any byte; keep them off, or send every call to the aligned functions.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every block from `mi_malloc`, `mi_zalloc` and `mi_realloc` has.
const WORD: usize = std::mem::size_of::<usize>();

/// mimalloc as `#[global_allocator]`.
pub struct Mimalloc;

// SAFETY: each method returns a block of at least `layout.size()` bytes aligned to
// `layout.align()` or null: plain calls only when that alignment is at most a word (which all
// of mimalloc's blocks have), the aligned calls otherwise; `dealloc` frees with `mi_free`,
// which takes a block from either kind of call.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain FFI calls taking sizes; see the impl's comment for alignment.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block this allocator returned.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a block this allocator returned with `layout`; the new
        // block keeps that alignment (a word from `mi_realloc`, the layout's otherwise).
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes around mimalloc's bin and page boundaries and the 1 KiB fast-path limit.
    const SIZES: &[usize] = &[
        1, 7, 8, 9, 15, 16, 17, 24, 40, 48, 100, 1000, 1024, 1025, 1500, 3000, 4096, 5000, 70_000,
        1_048_576,
    ];
    const ALIGNS: &[usize] = &[1, 2, 4, 8, 16, 32, 64, 128, 4096, 65_536];

    fn check(p: *mut u8, layout: Layout, zeroed: bool) {
        assert!(!p.is_null(), "{layout:?}");
        assert_eq!(p as usize % layout.align(), 0, "{layout:?} at {p:p}");
        // SAFETY: `p` is a live block of `layout.size()` bytes.
        let block = unsafe { std::slice::from_raw_parts_mut(p, layout.size()) };
        if zeroed {
            assert!(block.iter().all(|&b| b == 0), "{layout:?} not zeroed");
        }
        block.fill(0xa5);
    }

    #[test]
    fn every_block_has_its_layouts_size_and_alignment() {
        let mut live = Vec::new();
        for &size in SIZES {
            for &align in ALIGNS {
                let layout = Layout::from_size_align(size, align).unwrap();
                for zeroed in [false, true] {
                    // SAFETY: non-zero size; freed below with the same layout.
                    let p = unsafe {
                        if zeroed {
                            Mimalloc.alloc_zeroed(layout)
                        } else {
                            Mimalloc.alloc(layout)
                        }
                    };
                    check(p, layout, zeroed);
                    live.push((p, layout));
                }
            }
        }
        for (p, layout) in live {
            // SAFETY: allocated above with this layout.
            unsafe { Mimalloc.dealloc(p, layout) }
        }
    }

    #[test]
    fn a_reallocated_block_keeps_its_alignment_and_contents() {
        for &align in ALIGNS {
            for &(from, to) in &[(8, 2000), (2000, 8), (1000, 1025), (24, 70_000)] {
                let layout = Layout::from_size_align(from, align).unwrap();
                // SAFETY: non-zero size.
                let p = unsafe { Mimalloc.alloc(layout) };
                check(p, layout, false);
                // SAFETY: `p` came from `alloc` with `layout`; `to` is non-zero.
                let q = unsafe { Mimalloc.realloc(p, layout, to) };
                let moved = Layout::from_size_align(to, align).unwrap();
                assert_eq!(q as usize % align, 0, "{layout:?} -> {to}");
                // SAFETY: `q` holds at least `min(from, to)` bytes copied from `p`.
                let kept = unsafe { std::slice::from_raw_parts(q, from.min(to)) };
                assert!(
                    kept.iter().all(|&b| b == 0xa5),
                    "{layout:?} -> {to} lost bytes"
                );
                // SAFETY: `q` is live with `moved`.
                unsafe { Mimalloc.dealloc(q, moved) }
            }
        }
    }
}

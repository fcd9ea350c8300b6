//! The allocator the `fabsim` binary and the benchmarks install (`sim/main.rs`,
//! `benches/common`); the library itself sets none, so tests and fuzz targets keep the system's.
//!
//! It is mimalloc, asked for a plain block whenever a plain block is aligned enough. The
//! `mimalloc` crate's `GlobalAlloc` asks for every block with `mi_malloc_aligned`, and
//! mimalloc 3 serves that from a page of the requested size only when the size is a power of
//! two (`mi_malloc_is_naturally_aligned`): any other size, such as the 112 bytes of a received
//! prefix's one-path slice in a speaker's table, fell to the over-allocating slow path every
//! time — a block of the next size class, and the page-extension work of the generic path —
//! for about a tenth of an eBGP fabric's convergence wall time. The same finding, and this
//! dispatch, are `purpleprotocol/mimalloc_rust` PR #170 and `reussir-lang/reussir` PR #339.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// mimalloc with plain blocks where they suffice.
pub struct MiMalloc;

/// Whether a plain mimalloc block of `size` bytes is aligned to `align`: every block is 8-byte
/// aligned, and a block of 16 bytes or more is 16-byte aligned (mimalloc `alloc.c`
/// `_mi_page_malloc_zero`'s assertion; `MI_MAX_ALIGN_SIZE` is 16).
fn plain_suffices(size: usize, align: usize) -> bool {
    align <= 8 || (align <= 16 && size >= 16)
}

/// A new block for `layout`: from `plain` when a plain block is aligned enough, else from
/// `aligned` (mimalloc's `…_aligned` variant of the same call).
///
/// # Safety
/// `plain` and `aligned` are mimalloc's allocation functions (they return a block or null).
#[inline]
unsafe fn new_block(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    let (size, align) = (layout.size(), layout.align());
    // SAFETY: plain FFI calls; mimalloc returns null on failure, as `GlobalAlloc` expects.
    unsafe {
        if plain_suffices(size, align) {
            plain(size).cast()
        } else {
            aligned(size, align).cast()
        }
    }
}

// SAFETY: each call hands mimalloc's own result back, from the function whose alignment
// guarantee covers the layout (`plain_suffices`, else mimalloc's aligned variant); every
// block, however allocated, is freed and reallocated by mimalloc.
unsafe impl GlobalAlloc for MiMalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation functions.
        unsafe { new_block(layout, mi::mi_malloc, mi::mi_malloc_aligned) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation functions.
        unsafe { new_block(layout, mi::mi_zalloc, mi::mi_zalloc_aligned) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        // SAFETY: `ptr` came from this allocator; the new block keeps the layout's alignment.
        unsafe {
            if plain_suffices(new_size, align) {
                mi::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, align).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every size and alignment a program asks for come back aligned, and keep
    /// their contents through a reallocation.
    #[test]
    fn blocks_are_aligned_as_asked() {
        let a = MiMalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 7, 8, 9, 15, 16, 24, 48, 96, 100, 112, 1000, 5000] {
                let size = size.max(align);
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null() && p as usize % align == 0, "{size}/{align}");
                    p.write_bytes(0xab, size);
                    let q = a.realloc(p, layout, size * 3);
                    assert!(!q.is_null() && q as usize % align == 0, "{size}/{align} grown");
                    assert!((0..size).all(|i| *q.add(i) == 0xab));
                    a.dealloc(q, Layout::from_size_align(size * 3, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert!(z as usize % align == 0 && (0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}

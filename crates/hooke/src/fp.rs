//! Floating-point environment: flushing subnormal numbers to zero.
//!
//! A disturbance spreading into cloth at rest produces forces and corrections of ever smaller
//! magnitude until they become *subnormal* floats (below 1.2·10⁻³⁸ in f32), which x86
//! processors handle up to 100× slower than normal ones: frames three times slower than their
//! neighbours were seen. Setting the FTZ (flush to zero) and DAZ (denormals are zero) bits of
//! the SSE control register makes such values exact zeros instead — a change of results far
//! below f32 resolution of any position, but a change: bit-for-bit comparisons (and the GPU
//! parity tests) run without it.
//!
//! The bits belong to each thread. [`flush_subnormals`] sets them on the calling thread;
//! [`thread_pool`] builds a rayon pool whose workers set them at start, and installs it as the
//! global pool. The `hooke` command line does both before simulating. Elsewhere than x86-64
//! these functions do nothing.

/// Sets the flush-to-zero and denormals-are-zero bits of this thread's SSE control register
/// (x86-64 only; elsewhere a no-op). Returns whether the bits are now set.
pub fn flush_subnormals() -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: only the FTZ (bit 15) and DAZ (bit 6) modes change; no memory is touched. The
    // intrinsics are deprecated in favour of inline assembly but remain sound for this use.
    #[allow(deprecated)]
    unsafe {
        use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
        _mm_setcsr(_mm_getcsr() | 0x8040);
        _mm_getcsr() & 0x8040 == 0x8040
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether this thread flushes subnormals (FTZ and DAZ set; always `false` off x86-64).
pub fn flushes_subnormals() -> bool {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: reads the control register only.
    #[allow(deprecated)]
    unsafe {
        std::arch::x86_64::_mm_getcsr() & 0x8040 == 0x8040
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Builds rayon's global thread pool with `threads` workers (all cores if `None`), each
/// flushing subnormals when `flush` is set, and sets the calling thread likewise. Returns the
/// number of threads of the global pool.
///
/// # Errors
/// rayon's error if the global pool was already built (then nothing changes on the workers).
pub fn thread_pool(threads: Option<usize>, flush: bool) -> Result<usize, rayon::ThreadPoolBuildError> {
    if flush {
        flush_subnormals();
    }
    let mut pool = rayon::ThreadPoolBuilder::new();
    if flush {
        pool = pool.start_handler(|_| {
            flush_subnormals();
        });
    }
    if let Some(n) = threads {
        pool = pool.num_threads(n);
    }
    pool.build_global()?;
    Ok(rayon::current_num_threads())
}

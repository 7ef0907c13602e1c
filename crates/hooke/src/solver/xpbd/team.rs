//! A team of threads for the colour sweeps: every thread of the pool takes a fixed part of each
//! colour, and the team waits at a barrier between colours.
//!
//! A Gauss–Seidel sweep over a coloured set is a sequence of parallel loops, one per colour
//! (no two constraints of a colour share a particle, so a colour's constraints can be projected
//! in any order and on any thread with the same bits; see the [module above](super)). Run as
//! one rayon loop per colour, each colour wakes the pool, hands out chunks by work stealing and
//! joins; a 512² cloth at 20 substeps makes several hundred such loops per frame, and on many
//! threads their start and end — threads put to sleep and woken, chunks landing on whichever
//! thread steals them, so that each colour reads its particles from another core's cache —
//! cost as much as the work. Here the whole set is one rayon [`broadcast`](rayon::broadcast):
//! thread *t* of *T* projects the *t*-th of *T* contiguous parts of every colour (the same part
//! of the cloth in every colour, substep and iteration, so its particles stay in that core's
//! cache), then waits at a spinning barrier for the others before the next colour — the
//! bulk-synchronous schedule of OpenMP codes, with no thread woken between colours.
//!
//! Each constraint is projected once per sweep by the same kernel, so the result is the
//! sequential sweep's bit for bit, whichever way a sweep runs.
//!
//! A broadcast needs every thread of the pool: one team runs at a time (a second simulation
//! sweeping at the same moment on the same pool takes the per-colour loops instead), and a
//! team waits for threads busy with other work on the pool — for a thread blocked there until
//! it returns, which is why hooke-py runs a batch of several jobs outside the simulations'
//! pool. (Claiming parts instead of assigning them, so that a late thread's parts are taken by
//! the others, was tried: with the pool's threads started one after another by a scope's
//! spawns, it gave back most of the gain — 2 threads, `grid:256`: 67–70 ms a frame against
//! 59–69 with the broadcast and 64–73 with one loop per colour.) A panic in a part is caught,
//! the rest of the sweep is skipped (every thread still meets every barrier), and the panic
//! is raised again when the broadcast has ended.

use rayon::prelude::*;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, TryLockError};

/// Held while a team sweeps: teams on one pool would wait on each other's threads.
static TEAM: Mutex<()> = Mutex::new(());

/// Spins before a waiting thread starts yielding its core (a colour's part takes microseconds
/// to milliseconds; yielding keeps an oversubscribed machine moving).
const SPINS: u32 = 1 << 12;

/// A counter alone on its cache line (the waiting threads poll one while the others add to
/// the other).
#[repr(align(128))]
struct Padded(AtomicUsize);

/// A barrier for a fixed number of threads that spins, then yields, instead of sleeping.
struct SpinBarrier {
    threads: usize,
    arrived: Padded,
    generation: Padded,
}

impl SpinBarrier {
    fn new(threads: usize) -> SpinBarrier {
        SpinBarrier { threads, arrived: Padded(AtomicUsize::new(0)), generation: Padded(AtomicUsize::new(0)) }
    }

    /// Returns once all `threads` threads have called it; what each wrote before it is
    /// visible to all after it.
    fn wait(&self) {
        let generation = self.generation.0.load(Ordering::Acquire);
        if self.arrived.0.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.0.store(0, Ordering::Relaxed);
            self.generation.0.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0;
        while self.generation.0.load(Ordering::Acquire) == generation {
            if spins < SPINS {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// The `part`-th of `parts` contiguous pieces of `0..len`, each but the last a multiple of
/// `align` long.
fn piece(len: usize, part: usize, parts: usize, align: usize) -> Range<usize> {
    let step = len.div_ceil(parts).div_ceil(align) * align;
    (part * step).min(len)..((part + 1) * step).min(len)
}

/// Sweeps the colours of a set in order: `work(colour, units, last)` projects the units
/// `units` (constraints, or blocks of them; indices within the colour) of colour `colour`,
/// and with `last` whatever the colour has beyond its units (a tail of constraints not in a
/// block). `sizes[c]` is colour c's number of units. Every unit of every colour is passed to
/// `work` exactly once, each colour's after all of the colour before.
///
/// Sequential unless `parallel`. In parallel, a colour of fewer than 2·`chunk` units runs on
/// one thread; a larger one is split among the team's threads in parts that are multiples of
/// `align` units (the kernels' lane width), or — when no team can be formed (one thread, or
/// another team sweeping) — into rayon tasks of `chunk` units, its `last` call after them.
///
/// # Safety contract (for `work`)
/// Calls for different units of one colour run at the same time on different threads: `work`
/// may write only what its units own (the particles of a colour's constraints are disjoint).
///
/// # Panics
/// If `work` panics, with its panic, once the sweep has stopped.
pub(crate) fn sweep_colours<F>(sizes: &[usize], parallel: bool, chunk: usize, align: usize, work: F)
where
    F: Fn(usize, Range<usize>, bool) + Sync,
{
    let large = |n: usize| n >= 2 * chunk;
    let threads = rayon::current_num_threads();
    if !parallel || !sizes.iter().any(|&n| large(n)) {
        for (c, &n) in sizes.iter().enumerate() {
            work(c, 0..n, true);
        }
        return;
    }
    // The lock only where a team can be formed (held through the per-colour loops, it would
    // keep another simulation's team from forming for nothing).
    let team = match (threads > 1).then(|| TEAM.try_lock()) {
        Some(Ok(team)) => Some(team),
        // A panic in a team's part is raised after the team (below), with the lock released.
        Some(Err(TryLockError::Poisoned(team))) => Some(team.into_inner()),
        Some(Err(TryLockError::WouldBlock)) | None => None,
    };
    if let Some(team) = team {
        let barrier = SpinBarrier::new(threads);
        let failed = AtomicBool::new(false);
        let panic = Mutex::new(None);
        rayon::broadcast(|ctx| {
            let (t, count) = (ctx.index(), ctx.num_threads());
            debug_assert_eq!(count, threads);
            for (c, &n) in sizes.iter().enumerate() {
                let parts = if large(n) { count } else { 1 };
                if t < parts && !failed.load(Ordering::Acquire) {
                    let part = || work(c, piece(n, t, parts, align), t == parts - 1);
                    if let Err(e) = catch_unwind(AssertUnwindSafe(part)) {
                        failed.store(true, Ordering::Release);
                        panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
                    }
                }
                if c + 1 < sizes.len() {
                    barrier.wait();
                }
            }
        });
        drop(team);
        if let Some(e) = panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
            resume_unwind(e);
        }
        return;
    }
    for (c, &n) in sizes.iter().enumerate() {
        if large(n) {
            (0..n.div_ceil(chunk)).into_par_iter().for_each(|k| work(c, k * chunk..((k + 1) * chunk).min(n), false));
            work(c, n..n, true);
        } else {
            work(c, 0..n, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn pieces_cover_the_range_once_in_aligned_parts() {
        for len in [0, 1, 7, 8, 9, 100, 1023, 4096, 10_001] {
            for parts in [1, 2, 3, 16] {
                for align in [1, 2, 8] {
                    let mut next = 0;
                    for part in 0..parts {
                        let r = piece(len, part, parts, align);
                        assert_eq!(r.start, next.min(len), "len {len} parts {parts} align {align}");
                        if part + 1 < parts && r.end < len {
                            assert_eq!(r.len() % align, 0);
                        }
                        next = r.end;
                    }
                    assert_eq!(next, len);
                }
            }
        }
    }

    /// Every unit of every colour once (each colour's tail too), each colour after the whole
    /// colour before it: a unit of colour c sees every unit of colour c − 1 done.
    fn check(pool: &rayon::ThreadPool, parallel: bool) {
        let sizes = [5000, 3, 4097, 0, 2048, 9000];
        let counts: Vec<Vec<AtomicU32>> =
            sizes.iter().map(|&n| (0..n + 1).map(|_| AtomicU32::new(0)).collect()).collect();
        let done: Vec<AtomicUsize> = sizes.iter().map(|_| AtomicUsize::new(0)).collect();
        let early = AtomicBool::new(false);
        pool.install(|| {
            sweep_colours(&sizes, parallel, 1024, 8, |c, units, last| {
                if c > 0 && done[c - 1].load(Ordering::SeqCst) != sizes[c - 1] + 1 {
                    early.store(true, Ordering::SeqCst);
                }
                for u in units.clone() {
                    counts[c][u].fetch_add(1, Ordering::SeqCst);
                }
                let mut n = units.len();
                if last {
                    counts[c][sizes[c]].fetch_add(1, Ordering::SeqCst);
                    n += 1;
                }
                done[c].fetch_add(n, Ordering::SeqCst);
            });
        });
        assert!(!early.load(Ordering::SeqCst), "a colour began before the one before it was done");
        for (c, row) in counts.iter().enumerate() {
            assert!(row.iter().all(|k| k.load(Ordering::SeqCst) == 1), "colour {c}: a unit or its tail not once");
        }
    }

    #[test]
    fn every_unit_once_and_colours_in_order() {
        for threads in [1, 2, 3, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            check(&pool, false);
            check(&pool, true);
        }
    }

    /// A panic in one part ends the sweep with that panic instead of leaving the others
    /// waiting for the part.
    #[test]
    fn a_panic_in_a_part_is_raised_not_hung() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let (finished, result) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                pool.install(|| {
                    sweep_colours(&[6000, 6000, 6000], true, 1024, 8, |c, units, _| {
                        if c == 1 && units.contains(&10) {
                            panic!("part of colour 1");
                        }
                    })
                })
            }));
            finished.send(outcome.is_err()).unwrap();
        });
        let raised = result.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(raised, Ok(true), "the panic was not raised within 60 s");
    }
}

//! [`ConstraintSet`]: all constraints of one type in a model, sorted by colour, with their
//! families, material sources and the particle → constraint adjacency.

use super::colouring;
use super::constraint::{ConstraintFamily, ParticleConstraint};
use super::material::Element;
use crate::error::ModelError;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

/// The constraints of one type `T` (an N-particle [`ParticleConstraint`]) in a
/// [`Model`](super::Model).
///
/// Constraints are sorted by colour: colour k is `constraints()[colour_ranges()[k]]`, and no
/// two constraints of one colour share a particle (proved by [`colouring::validate`] when the
/// set is built), so each colour can be projected in parallel. The set also holds the
/// particle → constraint adjacency in CSR form, built once here and reused by every solver
/// (force gathers, Jacobi sweeps, the implicit system's pattern).
#[derive(Clone, Debug, PartialEq)]
pub struct ConstraintSet<T> {
    pub(crate) items: Vec<T>,
    pub(crate) family: Vec<ConstraintFamily>,
    /// Where each constraint's stiffness comes from (body and element geometry), for material
    /// changes at run time.
    pub(crate) element: Vec<Element>,
    pub(crate) colour_ranges: Vec<Range<u32>>,
    pub(crate) incidence_offsets: Vec<u32>,
    pub(crate) incidence: Vec<u32>,
}

impl<T> Default for ConstraintSet<T> {
    fn default() -> Self {
        ConstraintSet {
            items: Vec::new(),
            family: Vec::new(),
            element: Vec::new(),
            colour_ranges: Vec::new(),
            incidence_offsets: vec![0],
            incidence: Vec::new(),
        }
    }
}

impl<T> ConstraintSet<T> {
    /// The constraints, sorted by colour.
    pub fn constraints(&self) -> &[T] {
        &self.items
    }
    /// The family of each constraint, parallel to [`ConstraintSet::constraints`].
    pub fn families(&self) -> &[ConstraintFamily] {
        &self.family
    }
    /// Index ranges of [`ConstraintSet::constraints`], one per colour.
    pub fn colour_ranges(&self) -> &[Range<u32>] {
        &self.colour_ranges
    }
    /// Number of colours.
    pub fn colour_count(&self) -> usize {
        self.colour_ranges.len()
    }
    /// Number of constraints.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Indices of the constraints that touch particle `p`, in increasing order.
    pub fn particle_constraints(&self, p: usize) -> &[u32] {
        &self.incidence[self.incidence_offsets[p] as usize..self.incidence_offsets[p + 1] as usize]
    }
    /// The body (index into [`Model::bodies`](super::Model::bodies)) of constraint `k`.
    pub fn body_of(&self, k: usize) -> Option<usize> {
        self.element.get(k).map(|e| e.body as usize)
    }
    /// The particle → constraint adjacency in CSR form: `offsets` has one entry per particle
    /// plus one, and particle p's constraints are `list[offsets[p]..offsets[p + 1]]`, in
    /// increasing constraint order.
    pub fn adjacency(&self) -> (&[u32], &[u32]) {
        (&self.incidence_offsets, &self.incidence)
    }
}

impl<T> ConstraintSet<T> {
    /// Sorts `items` (with their families, elements and colours, all parallel) by colour
    /// (stable, so constraints of one colour keep their order), proves the colouring
    /// conflict-free and builds the adjacency of `particle_count` particles.
    ///
    /// # Errors
    /// [`ModelError::Colouring`] if two constraints of a colour share a particle.
    pub(crate) fn build<const N: usize>(
        particle_count: usize,
        items: Vec<T>,
        family: Vec<ConstraintFamily>,
        element: Vec<Element>,
        colours: Vec<u32>,
    ) -> Result<ConstraintSet<T>, ModelError>
    where
        T: ParticleConstraint<N>,
    {
        // No constraint: every particle's list empty (a model without ropes, say; its torn
        // model too), without a pass over the particles.
        if items.is_empty() {
            return Ok(ConstraintSet {
                items,
                family,
                element,
                colour_ranges: Vec::new(),
                incidence_offsets: vec![0; particle_count + 1],
                incidence: Vec::new(),
            });
        }
        // Sorted by colour, stably; constraints that come in colour order already (a torn
        // model's, say) are taken as they are.
        // `order`: the given index of each sorted constraint (None: the identity).
        let mut order: Option<Vec<u32>> = None;
        let (sorted_items, sorted_family, sorted_element, sorted_colours) = if colours.is_sorted() {
            (items, family, element, colours)
        } else {
            let order = order.insert((0..items.len() as u32).collect());
            order.sort_by_key(|&k| colours[k as usize]);
            let pick = |k: &u32| *k as usize;
            (
                order.iter().map(|k| items[pick(k)]).collect::<Vec<T>>(),
                order.iter().map(|k| family[pick(k)]).collect::<Vec<ConstraintFamily>>(),
                order.iter().map(|k| element[pick(k)]).collect::<Vec<Element>>(),
                order.iter().map(|k| colours[pick(k)]).collect::<Vec<u32>>(),
            )
        };
        let mut colour_ranges = Vec::new();
        let mut start = 0usize;
        for k in 1..=sorted_colours.len() {
            if k == sorted_colours.len() || sorted_colours[k] != sorted_colours[start] {
                colour_ranges.push(start as u32..k as u32);
                start = k;
            }
        }
        // The colouring proved conflict-free, colour by colour in parallel (each particle
        // remembers the last colour that touched it); on a conflict the sequential proof
        // names it. The same pass counts each particle's constraints: within a colour a
        // particle is touched at most once, so its count is read and written by one thread
        // (plain loads and stores; only the proof's exchange is a locked operation) — and a
        // conflict, which would make the count race, ends the build with an error.
        let last: Vec<AtomicU32> = (0..particle_count).map(|_| AtomicU32::new(u32::MAX)).collect();
        let count: Vec<AtomicU32> = (0..particle_count).map(|_| AtomicU32::new(0)).collect();
        let conflict_free = colour_ranges.iter().enumerate().all(|(c, range)| {
            sorted_items[range.start as usize..range.end as usize].par_iter().all(|item| {
                item.particles().iter().all(|&p| {
                    let fresh =
                        last.get(p as usize).is_some_and(|slot| slot.swap(c as u32, Ordering::Relaxed) != c as u32);
                    if fresh {
                        let n = &count[p as usize];
                        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                    }
                    fresh
                })
            })
        });
        if !conflict_free {
            // The same walk as over the given order (colour by colour, stably), its indices
            // given back in that order.
            let tuples: Vec<[u32; N]> = sorted_items.iter().map(|c| c.particles()).collect();
            colouring::validate(particle_count, &tuples, &sorted_colours).map_err(|mut e| {
                if let Some(order) = &order {
                    (e.first, e.second) = (order[e.first] as usize, order[e.second] as usize);
                }
                e
            })?;
        }
        // The adjacency, colour by colour: each particle's list fills in increasing
        // constraint order whatever the threads do. (The counts are whole: the parallel
        // `all` above stops early only on a conflict, which has returned.)
        let mut offsets = vec![0u32; particle_count + 1];
        for k in 0..particle_count {
            offsets[k + 1] = offsets[k] + count[k].load(Ordering::Relaxed);
        }
        let fill: Vec<AtomicU32> = offsets[..particle_count].iter().map(|&o| AtomicU32::new(o)).collect();
        let mut incidence = vec![0u32; offsets[particle_count] as usize];
        {
            // SAFETY: `AtomicU32` has the size and bit validity of `u32`, and its alignment
            // (checked at compile time), and the list is reached only through this view while
            // it lives.
            const { assert!(align_of::<AtomicU32>() == align_of::<u32>()) };
            let slots: &[AtomicU32] = unsafe { &*(incidence.as_mut_slice() as *mut [u32] as *const [AtomicU32]) };
            for range in &colour_ranges {
                (range.start..range.end).into_par_iter().for_each(|k| {
                    // (One thread per particle within a colour, as above: no locked add.)
                    for p in sorted_items[k as usize].particles() {
                        let next = &fill[p as usize];
                        let slot = next.load(Ordering::Relaxed);
                        next.store(slot + 1, Ordering::Relaxed);
                        slots[slot as usize].store(k, Ordering::Relaxed);
                    }
                });
            }
        }
        Ok(ConstraintSet {
            items: sorted_items,
            family: sorted_family,
            element: sorted_element,
            colour_ranges,
            incidence_offsets: offsets,
            incidence,
        })
    }
}

/// The slices `pieces` one after another in one list, copied in parallel blocks (a torn
/// model's sets copy a million records this way at the speed of the memory, not of one
/// thread's copy loop).
pub(crate) fn concat<T: Copy + Send + Sync>(pieces: &[&[T]]) -> Vec<T> {
    const BLOCK: usize = 1 << 14;
    let len: usize = pieces.iter().map(|p| p.len()).sum();
    let mut out: Vec<T> = Vec::with_capacity(len);
    {
        let mut rest = &mut out.spare_capacity_mut()[..len];
        let mut jobs = Vec::with_capacity(len / BLOCK + pieces.len());
        for src in pieces.iter().flat_map(|p| p.chunks(BLOCK)) {
            let (dst, tail) = std::mem::take(&mut rest).split_at_mut(src.len());
            jobs.push((dst, src));
            rest = tail;
        }
        jobs.into_par_iter().for_each(|(dst, src)| {
            dst.iter_mut().zip(src).for_each(|(d, s)| {
                d.write(*s);
            });
        });
    }
    // SAFETY: the blocks cover the first `len` slots exactly (the pieces' lengths sum to
    // `len`), and each was written above.
    unsafe { out.set_len(len) };
    out
}

/// The list of a CSR adjacency (`offsets`: one per row plus one) cut into blocks of `rows`
/// rows, each as (first row, end row, its part of `list`), for filling in parallel.
pub(crate) fn csr_blocks<'a>(list: &'a mut [u32], offsets: &[u32], rows: usize) -> Vec<(usize, usize, &'a mut [u32])> {
    let n = offsets.len().saturating_sub(1);
    let mut rest = list;
    let mut blocks = Vec::with_capacity(n / rows.max(1) + 1);
    for r0 in (0..n).step_by(rows.max(1)) {
        let r1 = (r0 + rows).min(n);
        let (block, tail) = std::mem::take(&mut rest).split_at_mut((offsets[r1] - offsets[r0]) as usize);
        blocks.push((r0, r1, block));
        rest = tail;
    }
    blocks
}

/// A run of constraints that [`ConstraintSet::patched`] copied unchanged, bit for bit, from
/// the old set into the new: the `len` records from index `from` of the old set are those
/// from index `to` of the new. A solver that holds the old set's records on a device can copy
/// these there instead of uploading them (`hooke_gpu` after a tear).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopiedRun {
    /// First index in the old set.
    pub from: u32,
    /// First index in the new set.
    pub to: u32,
    /// Number of constraints.
    pub len: u32,
}

impl CopiedRun {
    /// The parts of this run whose records `keep` holds, `keep` taking a record's offset in
    /// the run (0 to `len` − 1): the run cut at the records it refuses, in order.
    pub fn parts(&self, keep: impl Fn(u32) -> bool) -> Vec<CopiedRun> {
        let mut out = Vec::new();
        let mut d = 0;
        while d < self.len {
            let start = d;
            while d < self.len && keep(d) {
                d += 1;
            }
            if d > start {
                out.push(CopiedRun { from: self.from + start, to: self.to + start, len: d - start });
            }
            d += 1;
        }
        out
    }
}

/// What becomes of one constraint of a set in [`ConstraintSet::patched`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fate<T> {
    /// Left out of the new set.
    Removed,
    /// Kept, on these particles (already in the new numbering).
    Moved(T),
}

impl<T> ConstraintSet<T> {
    /// The set that [`ConstraintSet::build`] would make of this set's constraints in order —
    /// each on its particles renumbered by `renumber` (old particle → new; `None`: the same
    /// numbers), except those `changes` names (sorted by index, each once), removed or moved
    /// onto other particles — followed by `added` (each with the index of the constraint whose
    /// family and element it takes, and its colour: an index into this set's colour ranges, or
    /// beyond them for a new colour), each in its own colour after the kept ones: the same
    /// constraints, ranges and adjacency, bit for bit, in time proportional to the changes
    /// plus one pass over the set's arrays (no sort, no colouring proof of the constraints
    /// that keep their particles: renumbering one-to-one keeps their colours conflict-free).
    /// Made for a tear (`tearing::tear`), which changes a few constraints of a large set.
    /// Also returns the runs of records copied unchanged ([`CopiedRun`]; a record on a
    /// particle that `renumber` renumbers changes, and is in none).
    ///
    /// # Errors
    /// As [`ConstraintSet::build`]: [`ModelError::Colouring`] if a moved or added constraint
    /// shares a particle with another of its colour (or names a particle out of range) — found
    /// by building the set anew, which names the pair.
    pub(crate) fn patched<const N: usize>(
        &self,
        particle_count: usize,
        renumber: Option<&[u32]>,
        changes: &[(u32, Fate<T>)],
        added: &[(T, u32, u32)],
    ) -> Result<(ConstraintSet<T>, Vec<CopiedRun>), ModelError>
    where
        T: ParticleConstraint<N>,
    {
        let m = self.items.len();
        let old_colours = self.colour_ranges.len();
        let colour_of = |k: u32| self.colour_ranges.partition_point(|r| r.end <= k);
        let colours = added.iter().map(|&(_, _, c)| c as usize + 1).max().unwrap_or(0).max(old_colours);
        // Per colour: the kept constraints' count and the added ones'.
        let mut kept_count: Vec<u32> =
            (0..colours).map(|c| self.colour_ranges.get(c).map_or(0, |r| r.len() as u32)).collect();
        let mut added_count = vec![0u32; colours];
        for &(k, fate) in changes {
            if matches!(fate, Fate::Removed) {
                kept_count[colour_of(k)] -= 1;
            }
        }
        for &(_, _, c) in added {
            added_count[c as usize] += 1;
        }
        // New colour starts (an emptied colour takes no range).
        let mut start = vec![0u32; colours + 1];
        for c in 0..colours {
            start[c + 1] = start[c] + kept_count[c] + added_count[c];
        }
        let len = start[colours] as usize;
        // The new index of each old constraint (u32::MAX: removed), run by run: the runs
        // between removed constraints and colour boundaries keep a constant offset.
        let mut runs: Vec<(std::ops::Range<u32>, u32)> = Vec::new(); // (old range, new start)
        {
            let mut removed = changes.iter().filter(|(_, f)| matches!(f, Fate::Removed)).map(|&(k, _)| k).peekable();
            for (c, range) in self.colour_ranges.iter().enumerate() {
                let mut at = range.start;
                let mut to = start[c];
                while at < range.end {
                    let end = match removed.peek() {
                        Some(&k) if k < range.end => k,
                        _ => range.end,
                    };
                    if end > at {
                        runs.push((at..end, to));
                        to += end - at;
                    }
                    at = end;
                    if end < range.end {
                        removed.next();
                        at += 1;
                    }
                }
            }
        }
        // The runs copied unchanged: the runs cut at the moved constraints and, where particles
        // are renumbered, at the constraints on a renumbered particle.
        let copied = {
            let mut moved = changes.iter().filter(|(_, f)| matches!(f, Fate::Moved(_))).map(|&(k, _)| k).peekable();
            let mut copied = Vec::with_capacity(runs.len());
            for (range, to) in &runs {
                let mut at = range.start;
                while at < range.end {
                    while moved.next_if(|&k| k < at).is_some() {}
                    let end = moved.peek().map_or(range.end, |&k| k.min(range.end));
                    if end > at {
                        copied.push(CopiedRun { from: at, to: to + (at - range.start), len: end - at });
                    }
                    at = end + 1;
                }
            }
            match renumber {
                None => copied,
                Some(map) => copied
                    .par_iter()
                    .flat_map_iter(|r| {
                        r.parts(|d| self.items[(r.from + d) as usize].particles().iter().all(|&p| map[p as usize] == p))
                    })
                    .collect(),
            }
        };
        let mut new_index = vec![u32::MAX; m];
        {
            // The runs' slices of `new_index`, in order, filled in parallel.
            let mut rest = &mut new_index[..];
            let mut offset = 0u32;
            let mut parts = Vec::with_capacity(runs.len());
            for (range, to) in &runs {
                let (_, tail) = std::mem::take(&mut rest).split_at_mut((range.start - offset) as usize);
                let (part, tail) = tail.split_at_mut(range.len());
                parts.push((part, *to));
                rest = tail;
                offset = range.end;
            }
            parts.into_par_iter().for_each(|(part, to)| {
                part.iter_mut().enumerate().for_each(|(d, slot)| *slot = to + d as u32);
            });
        }
        // The constraints, families and elements: the runs copied, the added ones at the end of
        // their colours; then the kept ones renumbered, colour by colour in parallel, and the
        // moved ones put in place.
        // The added ones by colour, as lists of their own.
        let mut added_items: Vec<Vec<T>> = vec![Vec::new(); colours];
        let mut added_family: Vec<Vec<ConstraintFamily>> = vec![Vec::new(); colours];
        let mut added_element: Vec<Vec<Element>> = vec![Vec::new(); colours];
        for &(t, source, c) in added {
            added_items[c as usize].push(t);
            added_family[c as usize].push(self.family[source as usize]);
            added_element[c as usize].push(self.element[source as usize]);
        }
        // Each list's pieces in order: per colour its runs, then its added constraints.
        let (mut item_pieces, mut family_pieces, mut element_pieces) = (Vec::new(), Vec::new(), Vec::new());
        let mut run = runs.iter().peekable();
        for c in 0..colours {
            let end = self.colour_ranges.get(c).map_or(0, |r| r.end);
            while let Some((range, _)) = run.next_if(|(range, _)| range.end <= end) {
                let (a, b) = (range.start as usize, range.end as usize);
                item_pieces.push(&self.items[a..b]);
                family_pieces.push(&self.family[a..b]);
                element_pieces.push(&self.element[a..b]);
            }
            item_pieces.push(&added_items[c][..]);
            family_pieces.push(&added_family[c][..]);
            element_pieces.push(&added_element[c][..]);
        }
        let mut items = concat(&item_pieces);
        let family = concat(&family_pieces);
        let element = concat(&element_pieces);
        debug_assert_eq!(items.len(), len);
        if let Some(map) = renumber {
            let mut rest = &mut items[..];
            let mut kept = Vec::with_capacity(colours);
            for c in 0..colours {
                let (part, tail) = std::mem::take(&mut rest).split_at_mut((start[c + 1] - start[c]) as usize);
                kept.push(&mut part[..kept_count[c] as usize]);
                rest = tail;
            }
            kept.into_par_iter().flat_map(|part| part.par_iter_mut()).for_each(|c| {
                *c = c.with_particles(c.particles().map(|p| map[p as usize]));
            });
        }
        for &(k, fate) in changes {
            if let Fate::Moved(t) = fate {
                items[new_index[k as usize] as usize] = t;
            }
        }
        let colour_ranges: Vec<Range<u32>> =
            (0..colours).filter(|&c| start[c + 1] > start[c]).map(|c| start[c]..start[c + 1]).collect();
        // Anything out of the ordinary (a particle out of range) goes through the full build,
        // which names it.
        // (Built from the same constraints in the same order, the runs are copied still.)
        let rebuild = |items: Vec<T>, family: Vec<ConstraintFamily>, element: Vec<Element>| {
            let colours =
                colour_ranges.iter().enumerate().flat_map(|(c, r)| std::iter::repeat_n(c as u32, r.len())).collect();
            ConstraintSet::build::<N>(particle_count, items, family, element, colours).map(|set| (set, copied.clone()))
        };
        let new_of_old = |p: u32| renumber.map_or(p, |map| map[p as usize]);
        // The particles whose lists change: the ends of the removed and moved constraints
        // (old and new) and of the added ones.
        let mut touched: Vec<u32> = Vec::new();
        for &(k, fate) in changes {
            touched.extend(self.items[k as usize].particles().map(new_of_old));
            if let Fate::Moved(t) = fate {
                touched.extend(t.particles());
            }
        }
        for (t, _, _) in added {
            touched.extend(t.particles());
        }
        if touched.iter().any(|&q| q as usize >= particle_count) {
            return rebuild(items, family, element);
        }
        touched.sort_unstable();
        touched.dedup();
        // The old particle each new one takes its list from (u32::MAX: none); without a
        // renumbering, itself (the particles past the old ones have none).
        let old_count = self.incidence_offsets.len() - 1;
        let source: Option<Vec<u32>> = renumber.map(|map| {
            let mut source = vec![u32::MAX; particle_count];
            for p in 0..old_count as u32 {
                if let Some(slot) = source.get_mut(map[p as usize] as usize) {
                    *slot = p;
                }
            }
            source
        });
        let old_list = |q: u32| -> &[u32] {
            let p = match &source {
                Some(source) => source[q as usize],
                None if (q as usize) < old_count => q,
                None => u32::MAX,
            };
            match p {
                u32::MAX => &[],
                p => {
                    &self.incidence
                        [self.incidence_offsets[p as usize] as usize..self.incidence_offsets[p as usize + 1] as usize]
                }
            }
        };
        // The new indices of the moved and the added constraints.
        let moved_or_added: Vec<u32> = changes
            .iter()
            .filter(|(_, f)| matches!(f, Fate::Moved(_)))
            .map(|&(k, _)| new_index[k as usize])
            .chain({
                let mut at: Vec<u32> = (0..colours).map(|c| start[c] + kept_count[c]).collect();
                added.iter().map(move |&(_, _, c)| {
                    let k = at[c as usize];
                    at[c as usize] += 1;
                    k
                })
            })
            .collect();
        // The touched particles' lists, by their index in `touched` (`slot`).
        let mut slot = vec![u32::MAX; particle_count];
        for (at, &q) in touched.iter().enumerate() {
            slot[q as usize] = at as u32;
        }
        let mut lists: Vec<Vec<u32>> = touched
            .iter()
            .map(|&q| {
                old_list(q)
                    .iter()
                    .map(|&k| new_index[k as usize])
                    .filter(|&k| k != u32::MAX && items[k as usize].particles().contains(&q))
                    .collect()
            })
            .collect();
        for &k in &moved_or_added {
            for q in items[k as usize].particles() {
                let list = &mut lists[slot[q as usize] as usize];
                if !list.contains(&k) {
                    list.push(k);
                }
            }
        }
        lists.iter_mut().for_each(|l| l.sort_unstable());
        // The colouring of the moved and added constraints: no other constraint of its colour
        // at any of its particles.
        let colour_of_new = |k: u32| colour_ranges.partition_point(|r| r.end <= k);
        let conflict = moved_or_added.iter().any(|&k| {
            let c = colour_of_new(k);
            items[k as usize]
                .particles()
                .iter()
                .any(|&q| lists[slot[q as usize] as usize].iter().any(|&o| o != k && colour_of_new(o) == c))
        });
        if conflict {
            return rebuild(items, family, element);
        }
        // The adjacency: the other particles' lists are their old ones renumbered.
        // (Counted in parallel; the running sum is one pass of additions.)
        let counts: Vec<u32> = (0..particle_count)
            .into_par_iter()
            .with_min_len(4096)
            .map(|q| match slot[q] {
                u32::MAX => old_list(q as u32).len() as u32,
                at => lists[at as usize].len() as u32,
            })
            .collect();
        let mut offsets = Vec::with_capacity(particle_count + 1);
        offsets.push(0u32);
        let mut total = 0u32;
        for c in counts {
            total += c;
            offsets.push(total);
        }
        let mut incidence = vec![0u32; offsets[particle_count] as usize];
        csr_blocks(&mut incidence, &offsets, 4096).into_par_iter().for_each(|(q0, q1, part)| {
            let base = offsets[q0] as usize;
            for q in q0..q1 {
                let out = &mut part[offsets[q] as usize - base..offsets[q + 1] as usize - base];
                match slot[q] {
                    u32::MAX => out.iter_mut().zip(old_list(q as u32)).for_each(|(o, &k)| *o = new_index[k as usize]),
                    at => out.copy_from_slice(&lists[at as usize]),
                }
            }
        });
        Ok((ConstraintSet { items, family, element, colour_ranges, incidence_offsets: offsets, incidence }, copied))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DistanceConstraint;
    use crate::model::material::ElementStiffness;

    /// Edges of a random graph on `n` particles (a small linear congruential generator).
    fn random_edges(n: u32, m: usize, seed: u64) -> Vec<[u32; 2]> {
        let mut state = seed;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as u32 % n
        };
        (0..m)
            .filter_map(|_| {
                let (i, j) = (next(), next());
                (i != j).then_some([i, j])
            })
            .collect()
    }

    fn set(n: usize, edges: &[[u32; 2]], colours: Vec<u32>) -> Result<ConstraintSet<DistanceConstraint>, ModelError> {
        let items = edges
            .iter()
            .map(|&[i, j]| DistanceConstraint {
                i,
                j,
                rest_length: 1.0,
                compliance_stretch: 0.0,
                compliance_compression: 0.0,
                damping: 0.0,
            })
            .collect();
        let family = vec![ConstraintFamily::Structural; edges.len()];
        let element = vec![Element { body: 0, stiffness: ElementStiffness::Fixed }; edges.len()];
        ConstraintSet::build::<2>(n, items, family, element, colours)
    }

    /// The set built in parallel, colour by colour: sorted stably by colour, and each
    /// particle's constraints those that touch it in increasing order — as a sequential build
    /// gives them — on a colouring given in order and on a shuffled one.
    #[test]
    fn the_adjacency_lists_each_particles_constraints_in_order() {
        let n = 300;
        for seed in 0..6 {
            let edges = random_edges(n as u32, 2000, seed);
            let mut colours = colouring::greedy(n, &edges);
            if seed % 2 == 1 {
                // Colours given out of order: the build sorts them.
                let count = colouring::count(&colours) as u32;
                colours.iter_mut().for_each(|c| *c = count - 1 - *c);
            }
            let mut order: Vec<usize> = (0..edges.len()).collect();
            order.sort_by_key(|&k| colours[k]);
            let s = set(n, &edges, colours.clone()).unwrap();
            let sorted: Vec<[u32; 2]> = order.iter().map(|&k| edges[k]).collect();
            assert_eq!(s.constraints().iter().map(|c| [c.i, c.j]).collect::<Vec<_>>(), sorted);
            for p in 0..n as u32 {
                let expected: Vec<u32> =
                    (0..sorted.len() as u32).filter(|&k| sorted[k as usize].contains(&p)).collect();
                assert_eq!(s.particle_constraints(p as usize), &expected[..], "particle {p}, seed {seed}");
            }
        }
    }

    /// A colouring with a conflict is refused naming the constraints that the sequential proof
    /// names on the constraints as given (not as sorted).
    #[test]
    fn a_conflict_names_the_constraints_as_given() {
        let n = 200;
        let edges = random_edges(n as u32, 1500, 11);
        let mut colours = colouring::greedy(n, &edges);
        // Give the last constraint the colour of another at one of its particles.
        let last = edges.len() - 1;
        let other = (0..last).rev().find(|&k| edges[k].contains(&edges[last][0])).unwrap();
        colours[last] = colours[other];
        let tuples = edges.clone();
        let expected = colouring::validate(n, &tuples, &colours).unwrap_err();
        match set(n, &edges, colours) {
            Err(ModelError::Colouring(e)) => assert_eq!((e.first, e.second), (expected.first, expected.second)),
            other => panic!("expected a colouring conflict, got {other:?}"),
        }
    }
}

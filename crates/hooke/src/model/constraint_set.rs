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

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
        // names it.
        let last: Vec<AtomicU32> = (0..particle_count).map(|_| AtomicU32::new(u32::MAX)).collect();
        let conflict_free = colour_ranges.iter().enumerate().all(|(c, range)| {
            sorted_items[range.start as usize..range.end as usize].par_iter().all(|item| {
                item.particles().iter().all(|&p| {
                    last.get(p as usize).is_some_and(|slot| slot.swap(c as u32, Ordering::Relaxed) != c as u32)
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
        // The adjacency, colour by colour: within a colour a particle is touched at most once,
        // so each particle's list fills in increasing constraint order whatever the threads do.
        let count: Vec<AtomicU32> = last;
        count.par_iter().for_each(|c| c.store(0, Ordering::Relaxed));
        sorted_items.par_iter().for_each(|c| {
            for p in c.particles() {
                count[p as usize].fetch_add(1, Ordering::Relaxed);
            }
        });
        let mut offsets = vec![0u32; particle_count + 1];
        for k in 0..particle_count {
            offsets[k + 1] = offsets[k] + count[k].load(Ordering::Relaxed);
        }
        let fill: Vec<AtomicU32> = offsets[..particle_count].iter().map(|&o| AtomicU32::new(o)).collect();
        let incidence: Vec<AtomicU32> = (0..offsets[particle_count]).map(|_| AtomicU32::new(0)).collect();
        for range in &colour_ranges {
            (range.start..range.end).into_par_iter().for_each(|k| {
                for p in sorted_items[k as usize].particles() {
                    let slot = fill[p as usize].fetch_add(1, Ordering::Relaxed);
                    incidence[slot as usize].store(k, Ordering::Relaxed);
                }
            });
        }
        let incidence: Vec<u32> = incidence.into_par_iter().map(AtomicU32::into_inner).collect();
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

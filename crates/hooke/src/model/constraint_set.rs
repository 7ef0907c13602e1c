//! [`ConstraintSet`]: all constraints of one type in a model, sorted by colour, with their
//! families, material sources and the particle → constraint adjacency.

use super::colouring;
use super::constraint::{ConstraintFamily, ParticleConstraint};
use super::material::Element;
use crate::error::ModelError;
use std::ops::Range;

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
        let tuples: Vec<[u32; N]> = items.iter().map(|c| c.particles()).collect();
        colouring::validate(particle_count, &tuples, &colours)?;
        // Sorted by colour, stably; constraints that come in colour order already (a torn
        // model's, say) are taken as they are.
        let (sorted_items, sorted_family, sorted_element, sorted_colours) = if colours.is_sorted() {
            (items, family, element, colours)
        } else {
            let mut order: Vec<u32> = (0..items.len() as u32).collect();
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
        let mut offsets = vec![0u32; particle_count + 1];
        for c in &sorted_items {
            for p in c.particles() {
                offsets[p as usize + 1] += 1;
            }
        }
        for k in 0..particle_count {
            offsets[k + 1] += offsets[k];
        }
        let mut fill = offsets.clone();
        let mut incidence = vec![0u32; offsets[particle_count] as usize];
        for (k, c) in sorted_items.iter().enumerate() {
            for p in c.particles() {
                incidence[fill[p as usize] as usize] = k as u32;
                fill[p as usize] += 1;
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

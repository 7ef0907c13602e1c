//! Graph colouring of constraints (article §5.2).
//!
//! Two constraints that share a particle cannot be projected at the same time without a data
//! race. Constraints are therefore partitioned into *colours* such that no two constraints of
//! one colour share a particle (a constraint is a tuple of N particles: 2 for a distance, 3
//! for a rope angle, 4 for a dihedral angle; every function here takes `[u32; N]` tuples); all constraints of a colour can then be solved in parallel
//! (on the GPU: one dispatch per colour; on the CPU: one rayon sweep per colour), and the
//! colours are swept one after the other in a fixed order, which is Gauss–Seidel over colours.
//!
//! * Ropes: stretch i–i+1 is red/black (i mod 2); bending i–i+2 takes two more colours.
//! * Grid cloth: structural 4 colours, shear 4 more, bending 4 more — 12 in all, which is
//!   optimal because an interior particle has 12 incident constraints.
//! * Any other mesh: greedy first-fit colouring, constraints visited in decreasing order of
//!   their degree in the constraint graph (Welsh–Powell), then a balancing pass that moves
//!   constraints from the largest colours into smaller ones where that causes no conflict.
//!
//! [`validate`] proves a colouring conflict-free; [`Model`](crate::Model) construction runs it
//! on every model, which is what makes the parallel sweeps sound.

/// Error returned by [`validate`]: two constraints of one colour share a particle.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("colour {colour}: constraints {first} and {second} both touch particle {particle}")]
pub struct ColouringConflict {
    /// The colour that holds both constraints.
    pub colour: u32,
    /// The particle they share.
    pub particle: u32,
    /// Index of the first constraint.
    pub first: usize,
    /// Index of the second constraint.
    pub second: usize,
}

/// Greedy colouring of `edges` (tuples of N particle indices, all `< num_particles`).
///
/// Returns one colour per tuple, colours numbered from 0 without gaps. Two tuples sharing a
/// particle always get different colours. Runs in O(E·(N·C/64 + log E)) for C colours.
pub fn greedy<const N: usize>(num_particles: usize, edges: &[[u32; N]]) -> Vec<u32> {
    let mut degree = vec![0u32; num_particles];
    for e in edges {
        for &p in e {
            degree[p as usize] += 1;
        }
    }
    let max_degree = degree.iter().copied().max().unwrap_or(0) as usize;
    // A first-fit colouring of the conflict graph needs at most N(Δ − 1) + 1 colours.
    let words = (N * max_degree).div_ceil(64).max(1);
    let mut used = vec![0u64; num_particles * words];
    let mut order: Vec<u32> = (0..edges.len() as u32).collect();
    // Welsh–Powell: most constrained first; ties keep the input order (stable sort).
    order.sort_by_key(|&e| std::cmp::Reverse(edges[e as usize].iter().map(|&p| degree[p as usize]).sum::<u32>()));
    let mut colour = vec![0u32; edges.len()];
    for &e in &order {
        let tuple = edges[e as usize];
        let mut c = 0u32;
        for w in 0..words {
            let free = !tuple.iter().fold(0u64, |acc, &p| acc | used[p as usize * words + w]);
            if free != 0 {
                c = (w as u32) * 64 + free.trailing_zeros();
                break;
            }
        }
        let (w, bit) = ((c / 64) as usize, 1u64 << (c % 64));
        for &p in &tuple {
            used[p as usize * words + w] |= bit;
        }
        colour[e as usize] = c;
    }
    balance(num_particles, edges, &mut colour);
    colour
}

/// Moves edges from over-full colours to under-full ones where no conflict arises, so that
/// colour sizes are closer to E/C (fewer idle threads in the last, small colours on a GPU).
pub fn balance<const N: usize>(num_particles: usize, edges: &[[u32; N]], colour: &mut [u32]) {
    let colours = colour.iter().copied().max().map_or(0, |c| c as usize + 1);
    if colours < 2 {
        return;
    }
    let mut size = vec![0usize; colours];
    for &c in colour.iter() {
        size[c as usize] += 1;
    }
    let target = edges.len().div_ceil(colours);
    // Which colours touch each particle, as a bitmask (colours beyond 64 are left as they are).
    let mut mask = vec![0u64; num_particles];
    for (e, &c) in edges.iter().zip(colour.iter()) {
        if c < 64 {
            for &p in e {
                mask[p as usize] |= 1 << c;
            }
        }
    }
    for (e, c) in edges.iter().zip(colour.iter_mut()) {
        let from = *c as usize;
        if from >= 64 || size[from] <= target {
            continue;
        }
        let busy = e.iter().fold(0u64, |acc, &p| acc | mask[p as usize]);
        let best = (0..colours.min(64)).filter(|&k| busy & (1 << k) == 0 && size[k] < target).min_by_key(|&k| size[k]);
        if let Some(to) = best {
            let bit_from = 1u64 << from;
            for &p in e {
                mask[p as usize] &= !bit_from;
                mask[p as usize] |= 1 << to;
            }
            size[from] -= 1;
            size[to] += 1;
            *c = to as u32;
        }
    }
}

/// Checks that no two tuples of one colour share a particle (and that no tuple names a
/// particle twice or one out of range, which a colouring could not make safe).
///
/// `edges[k]` has colour `colour[k]`; both slices have the same length.
///
/// # Errors
/// The first conflict found, naming the colour, the particle and both constraints (the same
/// constraint twice when it names a particle twice or out of range).
pub fn validate<const N: usize>(
    num_particles: usize,
    edges: &[[u32; N]],
    colour: &[u32],
) -> Result<(), ColouringConflict> {
    // For each particle, the last (colour, edge) that touched it.
    let mut seen: Vec<(u32, u32)> = vec![(u32::MAX, 0); num_particles];
    let mut order: Vec<u32> = (0..edges.len() as u32).collect();
    order.sort_by_key(|&e| colour[e as usize]);
    for &e in &order {
        let c = colour[e as usize];
        for p in edges[e as usize] {
            if p as usize >= num_particles {
                return Err(ColouringConflict { colour: c, particle: p, first: e as usize, second: e as usize });
            }
            let (pc, pe) = seen[p as usize];
            if pc == c {
                return Err(ColouringConflict { colour: c, particle: p, first: pe as usize, second: e as usize });
            }
            seen[p as usize] = (c, e);
        }
    }
    Ok(())
}

/// Number of distinct colours in `colour` (assuming colours numbered from 0 without gaps).
pub fn count(colour: &[u32]) -> usize {
    colour.iter().copied().max().map_or(0, |c| c as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rope_stretch_is_red_black() {
        let edges: Vec<[u32; 2]> = (0..99).map(|i| [i, i + 1]).collect();
        let c = greedy(100, &edges);
        validate(100, &edges, &c).unwrap();
        assert_eq!(count(&c), 2);
    }

    /// Tuples of four consecutive particles (as a rope's bending stencils might be) get
    /// colours no two of which share a particle.
    #[test]
    fn four_particle_tuples_are_coloured_without_conflict() {
        let tuples: Vec<[u32; 4]> = (0..60u32).map(|k| [k, k + 1, k + 2, k + 3]).collect();
        let c = greedy(63, &tuples);
        validate(63, &tuples, &c).unwrap();
        // Each tuple meets the three on each side, which meet one another: at least 4 colours.
        assert!((4..=5).contains(&count(&c)), "{} colours", count(&c));
        let bad = [[0u32, 1, 2, 3], [3, 4, 5, 6]];
        assert_eq!(validate(7, &bad, &[0, 0]).unwrap_err().particle, 3);
    }

    #[test]
    fn validator_finds_a_conflict() {
        let edges = [[0, 1], [1, 2]];
        let err = validate(3, &edges, &[0, 0]).unwrap_err();
        assert_eq!(err.particle, 1);
    }
}

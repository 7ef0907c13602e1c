//! Sparse 3×3-block matrices and the filtered preconditioned conjugate gradient of
//! Baraff & Witkin 1998 ("Large steps in cloth simulation", §5.3), in `f64`.
//!
//! **Storage.** [`BlockCsr`] is compressed sparse rows over particles: row p holds one 3×3 block
//! per particle q that p shares a spring with, plus the diagonal block (p, p), columns sorted.
//! The pattern comes from the model's constraint graph and is built once; the values are
//! refilled every substep. A matrix–vector product computes each output row from its own row
//! only, so rows are split across threads without data races.
//!
//! **Filtered PCG.** Some degrees of freedom are prescribed: a pinned particle p must end the
//! step with a given Δv_p = z_p. Baraff & Witkin solve A Δv = b on the free degrees of freedom
//! only by running conjugate gradient with a filter S that zeroes the constrained ones (S_p = 0
//! for a pinned particle, I for a free one; a partial constraint would use I − ppᵀ), starting
//! from Δv⁰ with the constrained part z:
//!
//! ```text
//! r = S(b − A Δv);  c = S(P⁻¹ r);  δ = r·c
//! repeat:  q = S(A c);  α = δ/(c·q);  Δv += α c;  r −= α q
//!          stop when ‖r‖ ≤ ε ‖S(b − A z)‖
//!          s = P⁻¹ r;  δ' = r·s;  c = S(s + (δ'/δ) c);  δ = δ'
//! ```
//!
//! so the constrained entries of Δv never change and the free ones solve the reduced system
//! A_ff Δv_f = b_f − A_fc z_c. The preconditioner P is block-Jacobi: the inverse of each 3×3
//! diagonal block.
//!
//! The relative residual reported and tested is ‖S(b − A Δv)‖ / ‖S(b − A z)‖, the residual of
//! the reduced system relative to its right-hand side, recomputed from scratch after the last
//! iteration (not the recurrence's r). Dot products are summed in fixed chunks in a fixed order,
//! so the parallel and the sequential solve give bit-identical results.

use glam::{DMat3, DVec3};
use rayon::prelude::*;

/// Rows per parallel task and per partial sum of a dot product.
const CHUNK: usize = 512;
/// Below this many rows the solve runs on the calling thread.
pub const PARALLEL_MIN_ROWS: usize = 4096;

/// A square sparse matrix of 3×3 `f64` blocks in compressed-sparse-row form. See the
/// [module documentation](self).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockCsr {
    row_offsets: Vec<u32>,
    columns: Vec<u32>,
    values: Vec<DMat3>,
}

impl BlockCsr {
    /// The pattern of a symmetric matrix with `n` block rows: the diagonal plus (i, j) and
    /// (j, i) for every pair in `pairs` (duplicates merged; pairs with i = j or an index ≥ n
    /// ignored). All values start at zero.
    pub fn from_pairs(n: usize, pairs: impl IntoIterator<Item = (u32, u32)>) -> BlockCsr {
        let mut neighbours: Vec<Vec<u32>> = (0..n as u32).map(|p| vec![p]).collect();
        for (i, j) in pairs {
            if i != j && (i as usize) < n && (j as usize) < n {
                neighbours[i as usize].push(j);
                neighbours[j as usize].push(i);
            }
        }
        let mut row_offsets = Vec::with_capacity(n + 1);
        let mut columns = Vec::new();
        row_offsets.push(0u32);
        for mut row in neighbours {
            row.sort_unstable();
            row.dedup();
            columns.extend_from_slice(&row);
            row_offsets.push(columns.len() as u32);
        }
        let values = vec![DMat3::ZERO; columns.len()];
        BlockCsr { row_offsets, columns, values }
    }

    /// Number of block rows (and columns).
    pub fn rows(&self) -> usize {
        self.row_offsets.len().saturating_sub(1)
    }

    /// Number of stored blocks.
    pub fn blocks(&self) -> usize {
        self.columns.len()
    }

    /// Start of each row in [`BlockCsr::columns`] and [`BlockCsr::values`]; `rows() + 1` entries.
    pub fn row_offsets(&self) -> &[u32] {
        &self.row_offsets
    }

    /// Block column of each stored block, sorted within each row.
    pub fn columns(&self) -> &[u32] {
        &self.columns
    }

    /// The stored blocks.
    pub fn values(&self) -> &[DMat3] {
        &self.values
    }

    /// The stored blocks, for refilling (the pattern stays).
    pub fn values_mut(&mut self) -> &mut [DMat3] {
        &mut self.values
    }

    /// Index within row `row` of the block in column `column`, if stored.
    pub fn position_in_row(&self, row: usize, column: u32) -> Option<usize> {
        let r = self.row_offsets[row] as usize..self.row_offsets[row + 1] as usize;
        self.columns[r].binary_search(&column).ok()
    }

    /// Mutable slices of the blocks of each row, in row order, for a parallel refill.
    pub fn row_values_mut(&mut self) -> Vec<&mut [DMat3]> {
        let mut out = Vec::with_capacity(self.rows());
        let mut rest = self.values.as_mut_slice();
        for w in self.row_offsets.windows(2) {
            let (row, tail) = rest.split_at_mut((w[1] - w[0]) as usize);
            out.push(row);
            rest = tail;
        }
        out
    }

    /// Row `p` of A·x.
    #[inline]
    fn row_times(&self, p: usize, x: &[DVec3]) -> DVec3 {
        let r = self.row_offsets[p] as usize..self.row_offsets[p + 1] as usize;
        let mut y = DVec3::ZERO;
        for (m, &c) in self.values[r.clone()].iter().zip(&self.columns[r]) {
            y += *m * x[c as usize];
        }
        y
    }

    /// y = A·x. `x` and `y` have [`BlockCsr::rows`] entries.
    pub fn multiply(&self, x: &[DVec3], y: &mut [DVec3], parallel: bool) {
        let rows = |(k, yc): (usize, &mut [DVec3])| {
            for (i, yi) in yc.iter_mut().enumerate() {
                *yi = self.row_times(k * CHUNK + i, x);
            }
        };
        if parallel && self.rows() >= PARALLEL_MIN_ROWS {
            y.par_chunks_mut(CHUNK).enumerate().for_each(rows);
        } else {
            y.chunks_mut(CHUNK).enumerate().for_each(rows);
        }
    }
}

/// Settings of [`solve_filtered`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PcgSettings {
    /// Relative residual ε at which to stop (dimensionless, > 0).
    pub tolerance: f64,
    /// Iteration limit; the solve stops there and reports the residual it reached.
    pub max_iterations: u32,
    /// Split rows across the rayon pool (only from [`PARALLEL_MIN_ROWS`] rows on).
    pub parallel: bool,
}

/// Outcome of [`solve_filtered`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PcgReport {
    /// Conjugate-gradient iterations done.
    pub iterations: u32,
    /// Relative residual ‖S(b − A Δv)‖ / ‖S(b − A z)‖ at the end (0 when the right-hand side
    /// is zero; NaN if the input was not finite).
    pub residual: f64,
}

/// Scratch vectors of [`solve_filtered`], kept between solves to avoid allocation.
#[derive(Clone, Debug, Default)]
pub struct PcgWorkspace {
    r: Vec<DVec3>,
    c: Vec<DVec3>,
    q: Vec<DVec3>,
    s: Vec<DVec3>,
    partial: Vec<f64>,
}

/// Solves S(A Δv − b) = 0 with the constrained part of `dv` held fixed, by the filtered,
/// block-Jacobi preconditioned conjugate gradient of the [module documentation](self).
///
/// * `a`: the symmetric positive definite system matrix (n block rows);
/// * `inv_diag`: the inverse of each diagonal block (the preconditioner), n entries;
/// * `constrained[p]`: whether particle p's Δv is prescribed;
/// * `b`: the right-hand side, n entries;
/// * `dv`: on entry the prescribed values on constrained rows and the initial guess on free
///   rows (a warm start; it is dropped if it is worse than zero); on exit the solution.
///
/// Never panics on non-finite input: the iteration stops and the residual is NaN.
///
/// # Panics
/// If the slices do not all have `a.rows()` entries (a programming error, not user input).
pub fn solve_filtered(
    a: &BlockCsr,
    inv_diag: &[DMat3],
    constrained: &[bool],
    b: &[DVec3],
    dv: &mut [DVec3],
    work: &mut PcgWorkspace,
    settings: &PcgSettings,
) -> PcgReport {
    let n = a.rows();
    assert!(inv_diag.len() == n && constrained.len() == n && b.len() == n && dv.len() == n);
    let par = settings.parallel && n >= PARALLEL_MIN_ROWS;
    let PcgWorkspace { r, c, q, s, partial } = work;
    for v in [&mut *r, &mut *c, &mut *q, &mut *s] {
        v.clear();
        v.resize(n, DVec3::ZERO);
    }
    // s = z: the prescribed part of dv alone; r = S(b − A z), the reduced right-hand side.
    for ((sp, &fixed), &d) in s.iter_mut().zip(constrained).zip(dv.iter()) {
        *sp = if fixed { d } else { DVec3::ZERO };
    }
    a.multiply(s, q, par);
    let reference = filtered_residual(r, b, q, constrained, partial, par).sqrt();
    if !reference.is_finite() || reference == 0.0 {
        for (d, &fixed) in dv.iter_mut().zip(constrained) {
            if !fixed {
                *d = DVec3::ZERO;
            }
        }
        let residual = if reference == 0.0 { 0.0 } else { f64::NAN };
        return PcgReport { iterations: 0, residual };
    }
    // Warm start: keep it if it beats Δv_f = 0.
    s.copy_from_slice(r);
    a.multiply(dv, q, par);
    let mut rr = filtered_residual(r, b, q, constrained, partial, par);
    if rr.is_nan() || rr >= reference * reference {
        r.copy_from_slice(s);
        rr = reference * reference;
        for (d, &fixed) in dv.iter_mut().zip(constrained) {
            if !fixed {
                *d = DVec3::ZERO;
            }
        }
    }
    let goal = settings.tolerance * reference;
    let mut delta = precondition(s, inv_diag, r, constrained, partial, par);
    c.copy_from_slice(s);
    let mut iterations = 0;
    while rr.sqrt() > goal && iterations < settings.max_iterations {
        let cq = multiply_filtered(a, c, q, constrained, partial, par);
        if cq.is_nan() || cq <= 0.0 {
            break; // not positive definite along c, or not finite
        }
        let alpha = delta / cq;
        rr = update_solution(dv, r, c, q, alpha, partial, par);
        iterations += 1;
        if rr.is_nan() || rr.sqrt() <= goal {
            break;
        }
        let delta_new = precondition(s, inv_diag, r, constrained, partial, par);
        let beta = delta_new / delta;
        delta = delta_new;
        update_direction(c, s, beta, par);
    }
    // The true residual, not the recurrence's.
    a.multiply(dv, q, par);
    let rr_true = filtered_residual(r, b, q, constrained, partial, par);
    PcgReport { iterations, residual: rr_true.sqrt() / reference }
}

/// Sums per-chunk partial results in chunk order (the same order in parallel and sequentially).
fn ordered_sum(partial: &[f64]) -> f64 {
    partial.iter().sum()
}

/// Maps `$body` over the zipped chunks of `$first` (mutable) and `$rest` (shared), in parallel
/// or not, collecting the per-chunk sums into `$partial` in chunk order. Both paths run the same
/// body on the same chunks, so their results are bit-identical; the sequential one never touches
/// the thread pool.
macro_rules! chunk_sums {
    ($par:expr, $partial:expr, $body:expr, $first:expr $(, $rest:expr)*) => {{
        let partial: &mut Vec<f64> = $partial;
        partial.clear();
        if $par {
            $first.par_chunks_mut(CHUNK)$(.zip($rest.par_chunks(CHUNK)))*.map($body).collect_into_vec(partial);
        } else {
            partial.extend($first.chunks_mut(CHUNK)$(.zip($rest.chunks(CHUNK)))*.map($body));
        }
        ordered_sum(partial)
    }};
}

/// Zipped chunks of r (out), b, q and the constraint flags.
type ResidualChunk<'a, 'b> = (((&'a mut [DVec3], &'b [DVec3]), &'b [DVec3]), &'b [bool]);
/// Zipped chunks of s (out), P⁻¹, r and the constraint flags.
type PreconditionChunk<'a, 'b> = (((&'a mut [DVec3], &'b [DMat3]), &'b [DVec3]), &'b [bool]);
/// Zipped chunks of x (in/out), r (in/out), c and q.
type UpdateChunk<'a, 'b> = (((&'a mut [DVec3], &'a mut [DVec3]), &'b [DVec3]), &'b [DVec3]);

/// r = S(b − q); returns ‖r‖².
fn filtered_residual(
    r: &mut [DVec3],
    b: &[DVec3],
    q: &[DVec3],
    constrained: &[bool],
    partial: &mut Vec<f64>,
    par: bool,
) -> f64 {
    let body = |(((r, b), q), fixed): ResidualChunk| {
        let mut sum = 0.0;
        for k in 0..r.len() {
            r[k] = if fixed[k] { DVec3::ZERO } else { b[k] - q[k] };
            sum += r[k].length_squared();
        }
        sum
    };
    chunk_sums!(par, partial, body, r, b, q, constrained)
}

/// s = S(P⁻¹ r); returns r·s.
fn precondition(
    s: &mut [DVec3],
    inv_diag: &[DMat3],
    r: &[DVec3],
    constrained: &[bool],
    partial: &mut Vec<f64>,
    par: bool,
) -> f64 {
    let body = |(((s, p), r), fixed): PreconditionChunk| {
        let mut sum = 0.0;
        for k in 0..s.len() {
            s[k] = if fixed[k] { DVec3::ZERO } else { p[k] * r[k] };
            sum += r[k].dot(s[k]);
        }
        sum
    };
    chunk_sums!(par, partial, body, s, inv_diag, r, constrained)
}

/// q = S(A c); returns c·q.
fn multiply_filtered(
    a: &BlockCsr,
    c: &[DVec3],
    q: &mut [DVec3],
    constrained: &[bool],
    partial: &mut Vec<f64>,
    par: bool,
) -> f64 {
    let body = |(k, (q, fixed)): (usize, (&mut [DVec3], &[bool]))| {
        let mut sum = 0.0;
        for i in 0..q.len() {
            let p = k * CHUNK + i;
            q[i] = if fixed[i] { DVec3::ZERO } else { a.row_times(p, c) };
            sum += c[p].dot(q[i]);
        }
        sum
    };
    partial.clear();
    if par {
        q.par_chunks_mut(CHUNK).zip(constrained.par_chunks(CHUNK)).enumerate().map(body).collect_into_vec(partial);
    } else {
        partial.extend(q.chunks_mut(CHUNK).zip(constrained.chunks(CHUNK)).enumerate().map(body));
    }
    ordered_sum(partial)
}

/// x += α c, r −= α q; returns ‖r‖².
fn update_solution(
    x: &mut [DVec3],
    r: &mut [DVec3],
    c: &[DVec3],
    q: &[DVec3],
    alpha: f64,
    partial: &mut Vec<f64>,
    par: bool,
) -> f64 {
    let body = |(((x, r), c), q): UpdateChunk| {
        let mut sum = 0.0;
        for k in 0..x.len() {
            x[k] += c[k] * alpha;
            r[k] -= q[k] * alpha;
            sum += r[k].length_squared();
        }
        sum
    };
    partial.clear();
    if par {
        x.par_chunks_mut(CHUNK)
            .zip(r.par_chunks_mut(CHUNK))
            .zip(c.par_chunks(CHUNK))
            .zip(q.par_chunks(CHUNK))
            .map(body)
            .collect_into_vec(partial);
    } else {
        partial
            .extend(x.chunks_mut(CHUNK).zip(r.chunks_mut(CHUNK)).zip(c.chunks(CHUNK)).zip(q.chunks(CHUNK)).map(body));
    }
    ordered_sum(partial)
}

/// c = s + β c.
fn update_direction(c: &mut [DVec3], s: &[DVec3], beta: f64, par: bool) {
    let body = |(c, s): (&mut [DVec3], &[DVec3])| {
        for (c, s) in c.iter_mut().zip(s) {
            *c = *s + *c * beta;
        }
    };
    if par {
        c.par_chunks_mut(CHUNK).zip(s.par_chunks(CHUNK)).for_each(body);
    } else {
        c.chunks_mut(CHUNK).zip(s.chunks(CHUNK)).for_each(body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of n particles with springs i–i+1: A = m I + K with K the stiffness Laplacian
    /// along x only, which is SPD.
    fn chain(n: usize) -> (BlockCsr, Vec<DMat3>) {
        let mut a = BlockCsr::from_pairs(n, (0..n as u32 - 1).map(|i| (i, i + 1)));
        let k = DMat3::from_diagonal(DVec3::new(50.0, 5.0, 0.5));
        for p in 0..n {
            let mut diag = DMat3::from_diagonal(DVec3::splat(1.0 + p as f64 * 0.01));
            for q in [p.wrapping_sub(1), p + 1] {
                if q < n {
                    diag += k;
                    let s = a.row_offsets()[p] as usize + a.position_in_row(p, q as u32).unwrap();
                    a.values_mut()[s] = -k;
                }
            }
            let s = a.row_offsets()[p] as usize + a.position_in_row(p, p as u32).unwrap();
            a.values_mut()[s] = diag;
        }
        let inv = (0..n)
            .map(|p| a.values()[a.row_offsets()[p] as usize + a.position_in_row(p, p as u32).unwrap()].inverse())
            .collect();
        (a, inv)
    }

    #[test]
    fn pattern_is_symmetric_sorted_and_merged() {
        let a = BlockCsr::from_pairs(4, [(0, 2), (2, 0), (1, 2), (3, 3), (0, 9)]);
        assert_eq!(a.row_offsets(), &[0, 2, 4, 7, 8]);
        assert_eq!(a.columns(), &[0, 2, 1, 2, 0, 1, 2, 3]);
        assert_eq!(a.position_in_row(2, 1), Some(1));
        assert_eq!(a.position_in_row(3, 0), None);
    }

    /// The filtered PCG solves the reduced system to the tolerance, leaves the prescribed
    /// values alone, and gives bit-identical results in parallel and sequentially.
    #[test]
    fn filtered_pcg_solves_the_reduced_system() {
        let n = 5000; // ≥ PARALLEL_MIN_ROWS, so the parallel path really runs
        let (a, inv) = chain(n);
        let b: Vec<DVec3> = (0..n).map(|p| DVec3::new((p as f64 * 0.37).sin(), (p as f64 * 0.11).cos(), 0.3)).collect();
        let mut constrained = vec![false; n];
        constrained[0] = true;
        constrained[1700] = true;
        let solve = |parallel| {
            let mut dv = vec![DVec3::ZERO; n];
            dv[0] = DVec3::new(0.5, -1.0, 2.0);
            dv[1700] = DVec3::new(0.0, 0.25, 0.0);
            let settings = PcgSettings { tolerance: 1e-10, max_iterations: 5000, parallel };
            let report = solve_filtered(&a, &inv, &constrained, &b, &mut dv, &mut PcgWorkspace::default(), &settings);
            (dv, report)
        };
        let (x, report) = solve(true);
        assert!(report.residual <= 1e-10, "{report:?}");
        assert!(report.iterations > 10);
        assert_eq!(x[0], DVec3::new(0.5, -1.0, 2.0));
        assert_eq!(x[1700], DVec3::new(0.0, 0.25, 0.0));
        let mut ax = vec![DVec3::ZERO; n];
        a.multiply(&x, &mut ax, false);
        let worst = (0..n).filter(|&p| !constrained[p]).map(|p| (ax[p] - b[p]).length()).fold(0.0, f64::max);
        assert!(worst < 1e-8, "worst row residual {worst}");
        let (y, report_seq) = solve(false);
        assert_eq!(report, report_seq);
        assert!(x.iter().zip(&y).all(|(p, q)| p.to_array().map(f64::to_bits) == q.to_array().map(f64::to_bits)));
    }

    #[test]
    fn zero_right_hand_side_and_non_finite_input() {
        let (a, inv) = chain(5);
        let constrained = vec![false; 5];
        let settings = PcgSettings { tolerance: 1e-6, max_iterations: 50, parallel: false };
        let mut dv = vec![DVec3::ONE; 5];
        let r =
            solve_filtered(&a, &inv, &constrained, &[DVec3::ZERO; 5], &mut dv, &mut PcgWorkspace::default(), &settings);
        assert_eq!(r, PcgReport { iterations: 0, residual: 0.0 });
        assert!(dv.iter().all(|d| *d == DVec3::ZERO));
        let mut b = vec![DVec3::ONE; 5];
        b[2].y = f64::NAN;
        let r = solve_filtered(&a, &inv, &constrained, &b, &mut dv, &mut PcgWorkspace::default(), &settings);
        assert!(r.residual.is_nan());
    }
}

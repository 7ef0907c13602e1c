//! A bounding-volume hierarchy over a mesh's triangles (article §4.1 "BVH"): nearest-triangle
//! queries in O(log T) and the generalized winding number in O(log T) for points far from
//! the mesh.
//!
//! **Build.** Top-down: each node's triangles are split at the median of their centroids
//! along the longest axis of the centroids' bounds, down to leaves of at most
//! [`LEAF_SIZE`] triangles. Each node keeps its axis-aligned bounds and, for the winding
//! number, its triangles' summed vector area A = Σ ½(b − a)×(c − a), their area-weighted
//! centre and the radius of a ball about it that holds them.
//!
//! **Nearest triangle.** Depth first, nearer child first, skipping every node whose bounds
//! are farther than the best distance found so far. A *hint* — the nearest triangle of a
//! neighbouring query point — starts the search with a tight bound, which is what makes the
//! grid of an SDF cheap to fill (most nodes are skipped at once).
//!
//! **Generalized winding number** (Jacobson, Kavan & Sorkine-Hornung 2013): w(p) = Σ Ωᵢ(p)/4π,
//! the triangles' signed solid angles seen from p (Van Oosterom & Strackee 1983); 1 inside a
//! closed outward-wound mesh, 0 outside, and a smooth in-between for open meshes, so w > ½
//! tells inside from outside where pseudo-normals cannot. A node whose ball is far from p
//! (distance > [`FAR_FIELD`] × radius) counts as one dipole, Ω ≈ A·(c − p)/‖c − p‖³ — the
//! first-order far field of Barill et al. 2018, "Fast winding numbers for soups and clouds".

use super::triangle::{Feature, closest_point};
use glam::DVec3;

/// Triangles per leaf at most.
pub const LEAF_SIZE: usize = 4;

/// A node counts as one dipole in the winding number when p is farther from its centre than
/// this many times its radius.
pub const FAR_FIELD: f64 = 2.5;

#[derive(Clone, Debug)]
struct Node {
    min: DVec3,
    max: DVec3,
    /// Leaf: first index into `order`; internal: index of the left child (right = left + 1).
    first: u32,
    /// Triangles in a leaf; 0 for an internal node.
    count: u32,
    /// Σ ½(b − a)×(c − a) of its triangles (m²).
    area: DVec3,
    /// Area-weighted centre of its triangles (m).
    centre: DVec3,
    /// Radius of the ball about `centre` that holds its triangles (m).
    radius: f64,
}

/// The nearest point of a mesh to a query point.
#[derive(Clone, Copy, Debug)]
pub struct Nearest {
    /// Index of the triangle.
    pub triangle: u32,
    /// The nearest point (m).
    pub point: DVec3,
    /// Which feature of the triangle it lies on.
    pub feature: Feature,
    /// Squared distance (m²).
    pub distance2: f64,
}

/// A BVH over the triangles of a mesh. It holds no copy of the mesh: every query takes the
/// same `positions` and `triangles` the hierarchy was built from.
#[derive(Clone, Debug)]
pub struct TriangleBvh {
    nodes: Vec<Node>,
    order: Vec<u32>,
}

fn corners(positions: &[DVec3], t: &[u32; 3]) -> [DVec3; 3] {
    [positions[t[0] as usize], positions[t[1] as usize], positions[t[2] as usize]]
}

impl TriangleBvh {
    /// Builds the hierarchy of `triangles` (indices into `positions`, all in range).
    pub fn new(positions: &[DVec3], triangles: &[[u32; 3]]) -> TriangleBvh {
        let centroids: Vec<DVec3> = triangles
            .iter()
            .map(|t| {
                let [a, b, c] = corners(positions, t);
                (a + b + c) / 3.0
            })
            .collect();
        let mut bvh = TriangleBvh {
            nodes: Vec::with_capacity(2 * triangles.len() / LEAF_SIZE + 1),
            order: (0..triangles.len() as u32).collect(),
        };
        if triangles.is_empty() {
            return bvh;
        }
        bvh.nodes.push(Self::leaf(positions, triangles, &bvh.order, 0, triangles.len()));
        // (node, first, count) still to split.
        let mut stack = vec![(0usize, 0usize, triangles.len())];
        while let Some((node, first, count)) = stack.pop() {
            if count <= LEAF_SIZE {
                continue;
            }
            let slice = &mut bvh.order[first..first + count];
            let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
            for &t in slice.iter() {
                lo = lo.min(centroids[t as usize]);
                hi = hi.max(centroids[t as usize]);
            }
            let extent = hi - lo;
            let axis = if extent.x >= extent.y && extent.x >= extent.z {
                0
            } else if extent.y >= extent.z {
                1
            } else {
                2
            };
            let half = count / 2;
            slice.select_nth_unstable_by(half, |&i, &j| {
                centroids[i as usize][axis].total_cmp(&centroids[j as usize][axis]).then(i.cmp(&j))
            });
            let left = bvh.nodes.len();
            let l = Self::leaf(positions, triangles, &bvh.order, first, half);
            let r = Self::leaf(positions, triangles, &bvh.order, first + half, count - half);
            bvh.nodes.push(l);
            bvh.nodes.push(r);
            bvh.nodes[node].first = left as u32;
            bvh.nodes[node].count = 0;
            stack.push((left, first, half));
            stack.push((left + 1, first + half, count - half));
        }
        bvh
    }

    /// A leaf over `order[first..first + count]`, with its bounds and far-field data.
    fn leaf(positions: &[DVec3], triangles: &[[u32; 3]], order: &[u32], first: usize, count: usize) -> Node {
        let (mut min, mut max) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        let (mut area, mut weighted, mut total) = (DVec3::ZERO, DVec3::ZERO, 0.0);
        for &t in &order[first..first + count] {
            let [a, b, c] = corners(positions, &triangles[t as usize]);
            min = min.min(a).min(b).min(c);
            max = max.max(a).max(b).max(c);
            let v = 0.5 * (b - a).cross(c - a);
            let w = v.length();
            area += v;
            weighted += w * (a + b + c) / 3.0;
            total += w;
        }
        let centre = if total > 0.0 { weighted / total } else { 0.5 * (min + max) };
        let mut radius = 0.0f64;
        for &t in &order[first..first + count] {
            for x in corners(positions, &triangles[t as usize]) {
                radius = radius.max((x - centre).length());
            }
        }
        Node { min, max, first: first as u32, count: count as u32, area, centre, radius }
    }

    /// The point of the mesh nearest `p`, or `None` for a mesh without triangles. `hint`, a
    /// triangle likely to be near (e.g. a neighbouring point's answer), speeds the search but
    /// never changes its distance.
    pub fn nearest(&self, positions: &[DVec3], triangles: &[[u32; 3]], p: DVec3, hint: Option<u32>) -> Option<Nearest> {
        self.nearest_within(positions, triangles, p, hint, 0.0)
    }

    /// As [`nearest`](Self::nearest), but content with a point at most (1 + `slack`) times
    /// farther than the nearest: a node is skipped once the best distance found is within that
    /// factor of its bounds' distance. Far from the mesh this skips most of the tree, whose
    /// boxes a large ball about `p` would otherwise touch. `slack` = 0 is exact.
    pub fn nearest_within(
        &self,
        positions: &[DVec3],
        triangles: &[[u32; 3]],
        p: DVec3,
        hint: Option<u32>,
        slack: f64,
    ) -> Option<Nearest> {
        if self.nodes.is_empty() {
            return None;
        }
        let test = |t: u32| {
            let [a, b, c] = corners(positions, &triangles[t as usize]);
            let (q, feature) = closest_point(p, a, b, c);
            Nearest { triangle: t, point: q, feature, distance2: (p - q).length_squared() }
        };
        let mut best = hint.map(test);
        let mut bound = best.map_or(f64::INFINITY, |b| b.distance2);
        let widen = (1.0 + slack) * (1.0 + slack);
        let box_distance2 = |k: u32| {
            let n = &self.nodes[k as usize];
            (n.min - p).max(p - n.max).max(DVec3::ZERO).length_squared() * widen
        };
        // (node, squared distance to its box when pushed)
        // (Depth ≤ log₂ T + 1 ≤ 33 for u32 indices, one pending sibling per level.)
        let mut stack: [(u32, f64); 64] = [(0, 0.0); 64];
        let mut top = 1usize;
        while top > 0 {
            top -= 1;
            let (k, d2) = stack[top];
            if d2 >= bound {
                continue;
            }
            let node = &self.nodes[k as usize];
            if node.count > 0 {
                for &t in &self.order[node.first as usize..(node.first + node.count) as usize] {
                    let candidate = test(t);
                    // Ties go to the lower triangle index, so the answer does not depend on
                    // the hint.
                    let better = match best {
                        None => true,
                        Some(b) => {
                            candidate.distance2 < b.distance2 || (candidate.distance2 == b.distance2 && t < b.triangle)
                        }
                    };
                    if better {
                        bound = candidate.distance2;
                        best = Some(candidate);
                    }
                }
            } else {
                let (l, r) = (node.first, node.first + 1);
                let (dl, dr) = (box_distance2(l), box_distance2(r));
                // Nearer child on top of the stack; a child beyond the bound is not pushed.
                let (near, far) = if dl <= dr { ((l, dl), (r, dr)) } else { ((r, dr), (l, dl)) };
                if far.1 < bound {
                    stack[top] = far;
                    top += 1;
                }
                if near.1 < bound {
                    stack[top] = near;
                    top += 1;
                }
            }
        }
        // `>=` above can skip a node at exactly the bound that holds an equal-distance
        // triangle of lower index; the distance is the same either way.
        best
    }

    /// The generalized winding number of the mesh at `p`: ≈ 1 inside a closed mesh wound
    /// outwards (counter-clockwise seen from outside), ≈ 0 outside.
    pub fn winding_number(&self, positions: &[DVec3], triangles: &[[u32; 3]], p: DVec3) -> f64 {
        if self.nodes.is_empty() {
            return 0.0;
        }
        let mut omega = 0.0f64;
        let mut stack: Vec<u32> = Vec::with_capacity(64);
        stack.push(0);
        while let Some(k) = stack.pop() {
            let node = &self.nodes[k as usize];
            let r = node.centre - p;
            let distance = r.length();
            if distance > FAR_FIELD * node.radius {
                omega += node.area.dot(r) / (distance * distance * distance);
            } else if node.count > 0 {
                for &t in &self.order[node.first as usize..(node.first + node.count) as usize] {
                    let [a, b, c] = corners(positions, &triangles[t as usize]);
                    omega += solid_angle(a - p, b - p, c - p);
                }
            } else {
                stack.push(node.first);
                stack.push(node.first + 1);
            }
        }
        omega / (4.0 * std::f64::consts::PI)
    }
}

/// Signed solid angle (sr) of the triangle with corners a, b, c seen from the origin
/// (Van Oosterom & Strackee 1983); positive when the origin lies behind the triangle, on the
/// side its normal (b − a)×(c − a) points away from.
pub fn solid_angle(a: DVec3, b: DVec3, c: DVec3) -> f64 {
    let (la, lb, lc) = (a.length(), b.length(), c.length());
    let numerator = a.dot(b.cross(c));
    let denominator = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
    2.0 * numerator.atan2(denominator)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soup(n: usize, seed: u64) -> (Vec<DVec3>, Vec<[u32; 3]>) {
        let mut state = seed;
        let mut rand = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let mut positions = Vec::new();
        let mut triangles = Vec::new();
        for k in 0..n {
            let c = DVec3::new(rand(), rand(), rand());
            for _ in 0..3 {
                positions.push(c + 0.1 * DVec3::new(rand(), rand(), rand()));
            }
            let b = 3 * k as u32;
            triangles.push([b, b + 1, b + 2]);
        }
        (positions, triangles)
    }

    /// Nearest-triangle queries equal brute force, with and without a hint.
    #[test]
    fn nearest_equals_brute_force() {
        let (positions, triangles) = soup(300, 7);
        let bvh = TriangleBvh::new(&positions, &triangles);
        let (probe, _) = soup(100, 99);
        for (k, &p) in probe.iter().enumerate() {
            let brute = triangles
                .iter()
                .map(|t| {
                    let [a, b, c] = corners(&positions, t);
                    (p - closest_point(p, a, b, c).0).length_squared()
                })
                .fold(f64::INFINITY, f64::min);
            for hint in [None, Some((k * 7 % 300) as u32)] {
                let n = bvh.nearest(&positions, &triangles, p, hint).unwrap();
                assert_eq!(n.distance2, brute, "point {k} hint {hint:?}");
            }
        }
    }

    /// The winding number of a closed box is 1 inside, 0 outside, and the far-field
    /// approximation agrees with the exact sum.
    #[test]
    fn winding_number_of_a_closed_box() {
        let positions: Vec<DVec3> =
            (0..8).map(|i| DVec3::new((i & 1) as f64, ((i >> 1) & 1) as f64, ((i >> 2) & 1) as f64)).collect();
        // Outward (counter-clockwise seen from outside) faces of the unit cube.
        let quads = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]];
        let triangles: Vec<[u32; 3]> = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
        let bvh = TriangleBvh::new(&positions, &triangles);
        let exact = |p: DVec3| {
            triangles
                .iter()
                .map(|t| {
                    solid_angle(
                        positions[t[0] as usize] - p,
                        positions[t[1] as usize] - p,
                        positions[t[2] as usize] - p,
                    )
                })
                .sum::<f64>()
                / (4.0 * std::f64::consts::PI)
        };
        for p in [DVec3::splat(0.5), DVec3::new(0.1, 0.9, 0.2)] {
            assert!((bvh.winding_number(&positions, &triangles, p) - 1.0).abs() < 1e-9);
        }
        for p in [DVec3::splat(1.5), DVec3::new(-0.1, 0.5, 0.5), DVec3::new(40.0, -3.0, 2.0)] {
            let w = bvh.winding_number(&positions, &triangles, p);
            assert!(w.abs() < 0.02, "{p}: {w}");
            assert!((w - exact(p)).abs() < 0.02);
        }
    }
}

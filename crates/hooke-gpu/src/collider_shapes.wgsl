// Collider shapes and placements, shared by collide.wgsl (particles) and
// triangle_contact.wgsl (the triangles' virtual particles): the records, their bindings (3, 4
// and 6 in both files) and the signed distances, with the arithmetic of hooke's
// `collision/shape.rs`, `collision/sdf.rs` and `collision/placement.rs`.

// kind: 0 plane (a = point, b = normal), 1 sphere (a = centre, radius), 2 capsule (a, b,
// radius), 3 box (a = centre, b = half extents, r0..r2 = columns of its rotation matrix),
// 4 distance grid (a = lower corner and cell size, b.x = 1 / cell, grid = nodes per axis and
// the first value in `sdf`).
// `origin` is the point the collider turns about (its centre; a plane's point, a capsule's
// midpoint).
struct Collider {
    kind: u32,
    static_friction: f32,
    kinetic_friction: f32,
    radius: f32,
    a: vec4<f32>,
    b: vec4<f32>,
    r0: vec4<f32>,
    r1: vec4<f32>,
    r2: vec4<f32>,
    origin: vec4<f32>,
    grid: vec4<u32>,
}

// Collider placement in one substep (hooke's `ColliderPlacement`): translation at its end
// (w = 1 when the collider is rotated, else 0), displacement of the translation over it, the
// columns of the rotation matrices at the end and at the start, and the box the collider
// sweeps in the substep (bound_min.w = 1 when it has one; 0 for a plane).
struct Placement {
    translation_end: vec4<f32>,
    displacement: vec4<f32>,
    rotation_end0: vec4<f32>,
    rotation_end1: vec4<f32>,
    rotation_end2: vec4<f32>,
    rotation_start0: vec4<f32>,
    rotation_start1: vec4<f32>,
    rotation_start2: vec4<f32>,
    bound_min: vec4<f32>,
    bound_max: vec4<f32>,
}

@group(0) @binding(3) var<storage, read> colliders: array<Collider>;
@group(0) @binding(4) var<storage, read> placements: array<Placement>;
@group(0) @binding(6) var<storage, read> sdf: array<f32>;

fn sign_bit(x: f32) -> f32 {
    // glam's signum: −1 for −0.0, +1 for +0.0.
    return select(1.0, -1.0, (bitcast<u32>(x) & 0x80000000u) != 0u);
}

// a + (b − a)·t with the product rounded before the sum, as the CPU's lerp.
fn lerp1(a: f32, b: f32, t: f32) -> f32 {
    return a + opaque3(vec3<f32>((b - a) * t, 0.0, 0.0)).x;
}

// Trilinear sample of a distance grid and its normalised gradient (hooke's `SdfGrid::sample`,
// operation for operation).
fn sample_grid(c: Collider, p: vec3<f32>) -> vec4<f32> {
    let dims = c.grid.xyz;
    let inv = c.b.x;
    let g = vec3<f32>((p.x - c.a.x) * inv, (p.y - c.a.y) * inv, (p.z - c.a.z) * inv);
    let top = vec3<f32>(dims - vec3<u32>(1u));
    let cl = min(max(g, vec3<f32>(0.0)), top);
    let i = min(vec3<u32>(floor(cl)), dims - vec3<u32>(2u));
    let f = cl - vec3<f32>(i);
    let base = c.grid.w + i.x + dims.x * (i.y + dims.y * i.z);
    let sy = dims.x;
    let sz = dims.x * dims.y;
    let c000 = sdf[base];
    let c100 = sdf[base + 1u];
    let c010 = sdf[base + sy];
    let c110 = sdf[base + 1u + sy];
    let c001 = sdf[base + sz];
    let c101 = sdf[base + 1u + sz];
    let c011 = sdf[base + sy + sz];
    let c111 = sdf[base + 1u + sy + sz];
    let c00 = lerp1(c000, c100, f.x);
    let c10 = lerp1(c010, c110, f.x);
    let c01 = lerp1(c001, c101, f.x);
    let c11 = lerp1(c011, c111, f.x);
    let c0 = lerp1(c00, c10, f.y);
    let c1 = lerp1(c01, c11, f.y);
    var phi = lerp1(c0, c1, f.z);
    let dx = lerp1(lerp1(c100 - c000, c110 - c010, f.y), lerp1(c101 - c001, c111 - c011, f.y), f.z);
    let dy = lerp1(c10 - c00, c11 - c01, f.z);
    let dz = c1 - c0;
    let d = vec3<f32>(dx, dy, dz);
    let len2 = dot3(d, d);
    var n = vec3<f32>(0.0, 1.0, 0.0);
    if len2 > 0.0 {
        n = d / sqrt(len2);
    }
    let out = g - cl;
    let out2 = dot3(out, out);
    if out2 > 0.0 {
        phi = phi + opaque3(vec3<f32>(sqrt(out2) * c.a.w, 0.0, 0.0)).x;
    }
    return vec4<f32>(n, phi);
}

// Signed distance φ (m) in .w and outward unit normal in .xyz at p (already moved into the
// collider's rest frame).
fn signed_distance(c: Collider, p: vec3<f32>) -> vec4<f32> {
    switch c.kind {
        case 4u: {
            return sample_grid(c, p);
        }
        case 0u: {
            return vec4<f32>(c.b.xyz, dot3(p - c.a.xyz, c.b.xyz));
        }
        case 1u: {
            let d = p - c.a.xyz;
            let len = sqrt(dot3(d, d));
            var n = vec3<f32>(0.0, 1.0, 0.0);
            if len > 1e-12 {
                n = d / len;
            }
            return vec4<f32>(n, len - c.radius);
        }
        case 2u: {
            let ab = c.b.xyz - c.a.xyz;
            let denom = dot3(ab, ab);
            var t = 0.0;
            if denom > 0.0 {
                t = clamp(dot3(p - c.a.xyz, ab) / denom, 0.0, 1.0);
            }
            let d = p - (c.a.xyz + ab * t);
            let len = sqrt(dot3(d, d));
            var n = vec3<f32>(0.0, 1.0, 0.0);
            if len > 1e-12 {
                n = d / len;
            }
            return vec4<f32>(n, len - c.radius);
        }
        default: {
            let q0 = p - c.a.xyz;
            // Rᵀ q, one dot product per column, as the CPU does (shape.rs).
            let local = vec3<f32>(dot3(c.r0.xyz, q0), dot3(c.r1.xyz, q0), dot3(c.r2.xyz, q0));
            let q = abs(local) - c.b.xyz;
            let outside = max(q, vec3<f32>(0.0));
            let out_len = sqrt(dot3(outside, outside));
            var n_local: vec3<f32>;
            var phi: f32;
            if out_len > 0.0 {
                n_local = outside * vec3<f32>(sign_bit(local.x), sign_bit(local.y), sign_bit(local.z)) / out_len;
                phi = out_len;
            } else if q.x >= q.y && q.x >= q.z {
                n_local = vec3<f32>(sign_bit(local.x), 0.0, 0.0);
                phi = q.x;
            } else if q.y >= q.z {
                n_local = vec3<f32>(0.0, sign_bit(local.y), 0.0);
                phi = q.y;
            } else {
                n_local = vec3<f32>(0.0, 0.0, sign_bit(local.z));
                phi = q.z;
            }
            let n = rotate(c.r0.xyz, c.r1.xyz, c.r2.xyz, n_local);
            return vec4<f32>(n, phi);
        }
    }
}

// The rest-shape point at x at the end of the substep: origin + Rᵀ((x − t) − origin)
// (`ColliderPlacement::pull_back`, one dot product per column).
fn pull_back(c: Collider, m: Placement, x: vec3<f32>) -> vec3<f32> {
    let q = (x - m.translation_end.xyz) - c.origin.xyz;
    return c.origin.xyz + vec3<f32>(dot3(m.rotation_end0.xyz, q), dot3(m.rotation_end1.xyz, q), dot3(m.rotation_end2.xyz, q));
}

// R v as c0·v.x + c1·v.y + c2·v.z, each product rounded on its own as glam does.
fn rotate(c0: vec3<f32>, c1: vec3<f32>, c2: vec3<f32>, v: vec3<f32>) -> vec3<f32> {
    return (opaque3(c0 * v.x) + opaque3(c1 * v.y)) + opaque3(c2 * v.z);
}

// Signed distance (.w) and outward normal (.xyz) of collider c placed by m, at x (hooke's
// `ColliderPlacement::signed_distance`).
fn distance_at(c: Collider, m: Placement, rotated: bool, x: vec3<f32>) -> vec4<f32> {
    if rotated {
        let sd = signed_distance(c, pull_back(c, m, x));
        return vec4<f32>(rotate(m.rotation_end0.xyz, m.rotation_end1.xyz, m.rotation_end2.xyz, sd.xyz), sd.w);
    }
    return signed_distance(c, x - m.translation_end.xyz);
}

// How far the collider's surface under x (at the end of the substep) moved in the substep
// (hooke's `ColliderPlacement::surface_displacement`).
fn surface_at(c: Collider, m: Placement, rotated: bool, x: vec3<f32>) -> vec3<f32> {
    if !rotated {
        return m.displacement.xyz;
    }
    let local = pull_back(c, m, x) - c.origin.xyz;
    let turned = rotate(m.rotation_start0.xyz, m.rotation_start1.xyz, m.rotation_start2.xyz, local);
    let start = ((m.translation_end.xyz - m.displacement.xyz) + c.origin.xyz) + turned;
    return x - start;
}

// Whether the box collider placement m sweeps in the substep misses the box of a path from x0
// to x1 grown by the radius r (hooke's `broad_phase::path_box` and `first_overlapping`): then
// the collider cannot touch it, and skipping it changes nothing. Planes have no box.
fn out_of_reach(m: Placement, x0: vec3<f32>, x1: vec3<f32>, r: f32) -> bool {
    if m.bound_min.w == 0.0 {
        return false;
    }
    let lo = min(x0, x1);
    let hi = max(x0, x1);
    let big = max(abs(x0), abs(x1));
    let grow = vec3<f32>(r + 1e-4 + 1e-5 * max(big.x, max(big.y, big.z)));
    return any(lo - grow > m.bound_max.xyz) || any(m.bound_min.xyz > hi + grow);
}

// How fast φ can change per metre moved, at most (hooke's `Shape::growth_bound`): 2 for a
// distance grid, 1 for the analytic shapes.
fn growth_bound(c: Collider) -> f32 {
    return select(1.0, 2.0, c.kind == 4u);
}

// The contact response (hooke's `collision::push_out`): the displacement d of a point that
// started the substep at x0 moved out along the unit normal n by depth, then Coulomb friction
// on its motion relative to the collider's surface.
fn push_out(c: Collider, m: Placement, rotated: bool, x0: vec3<f32>, d: vec3<f32>, n: vec3<f32>, depth: f32) -> vec3<f32> {
    let e = d + n * depth;
    // The collider's surface under the point moved by this much in the substep.
    let rel = e - surface_at(c, m, rotated, x0 + e);
    let tangential = rel - n * dot3(rel, n);
    return e + coulomb(c.static_friction, c.kinetic_friction, tangential, depth);
}

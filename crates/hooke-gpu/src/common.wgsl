// Shared declarations, prepended to every kernel of hooke-gpu (see shaders.rs).
//
// `Params` is one 256-byte slot of the per-substep uniform buffer, bound with a dynamic offset
// at @group(1) @binding(0); its Rust twin is `buffers::Params` (same field order, std140-safe
// because every vec3 is followed by a scalar).

const WORKGROUP: u32 = 64u;

struct Params {
    gravity: vec3<f32>,
    h: f32,
    wind: vec3<f32>,
    inv_h: f32,
    inv_h2: f32,
    decay: f32,
    frac: f32,
    pbd_stiffness: f32,
    particle_count: u32,
    pin_count: u32,
    collider_count: u32,
    substep: u32,
    triangle_count: u32,
    method: u32,
    last_substep: u32,
    max_speed2: f32,
    air_density: f32,
    drag_coefficient: f32,
    lift_coefficient: f32,
    aero: u32,
    normal_scale: f32,
    normal_clamp: f32,
    one_minus_frac: f32,
    // Always 0; see `opaque3`.
    zero: u32,
    max_strain: f32,
    structural_count: u32,
    tangent_scale: f32,
    tangent_clamp: f32,
    // Worlds packed in the model (issue #13; worlds.wgsl): 1 for a model of one.
    world_count: u32,
    // The strain at which `check_tear` flags a distance constraint: the lowest breaking
    // strain of a cloth that tears, less a margin of 10⁻⁴ (∞ when nothing tears).
    tear_flag_strain: f32,
}

@group(1) @binding(0) var<uniform> P: Params;

// Linear thread index of a (possibly two-dimensional) dispatch of WORKGROUP-wide groups:
// grids larger than 65 535 groups spill into y, with x then exactly 65 535 groups (the host's
// `kernel::dispatch_groups` and the indirect arguments of `contact_lists.wgsl` both split so).
// The row width is that constant rather than `num_workgroups.x`, which D3D12 reads as 0 in an
// indirect dispatch without wgpu's validation; `nwg` is kept for the kernels' signatures.
fn thread_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * 65535u * WORKGROUP;
}

// x·x with the left-to-right order of glam's Vec3::dot (no fused multiply-add), so that
// results round as on the CPU.
fn dot3(a: vec3<f32>, b: vec3<f32>) -> f32 {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

// IEEE finiteness by the exponent bits (WGSL has no isnan/isinf, and a compiler may assume
// that float comparisons never see NaN).
fn finite1(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn finite3(v: vec3<f32>) -> bool {
    return finite1(v.x) && finite1(v.y) && finite1(v.z);
}

// The identity, in a way no compiler can see through (x XOR a uniform that happens to be 0):
// a product passed through it is rounded to f32 before it is used, so that the compiler can
// neither fuse it into a multiply-add nor factor a sum of products.
fn opaque3(v: vec3<f32>) -> vec3<f32> {
    return bitcast<vec3<f32>>(bitcast<vec3<u32>>(v) ^ vec3<u32>(P.zero));
}

// Cross product in glam's operand order, so that it rounds as the CPU does.
fn cross3(a: vec3<f32>, b: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(a.y * b.z - b.y * a.z, a.z * b.x - b.z * a.x, a.x * b.y - b.x * a.y);
}

// A distance constraint, 24 bytes (`GpuConstraint` in buffers.rs, `DistanceConstraint` on the CPU).
struct Constraint {
    i: u32,
    j: u32,
    rest_length: f32,
    compliance_stretch: f32,
    compliance_compression: f32,
    damping: f32,
}

// The per-frame health record (`health.rs`), shared by the collision and health kernels.
struct Health {
    nonfinite: atomic<u32>,
    too_fast: atomic<u32>,
    contacts: atomic<u32>,
    overstrained: atomic<u32>,
    particle_contacts: atomic<u32>,
    // Whether some distance constraint came within 10⁻⁴ of the lowest breaking strain of a
    // cloth that tears (`check_tear`; 0 = none), this frame only.
    tear: atomic<u32>,
}

// The spatial hash of the particle contacts (spatial_hash.wgsl builds it, self_collision.wgsl
// queries it; hooke's `collision/spatial_hash.rs`): its constants; with neighbour lists
// (contact_lists.wgsl) their skin (m), the squared distance a member may move before they are
// rebuilt (m²), their capacity per member (0: no lists), whether this substep's contacts come
// from the cells instead (a spell after an overflow or lists stale too soon), and the
// indirect arguments of the
// build's six dispatches, which `arm` writes every substep (x, y, z workgroups each: count,
// scan_blocks, scan_top, scan_add, scatter, lists); then per body the friction of its
// self-contacts (static, kinetic), its world (z, a whole number; w unused). Rust twin:
// `spatial_hash::HashInfo`.
struct HashInfo {
    table_size: u32,
    member_count: u32,
    inv_cell: f32,
    max_radius: f32,
    block_count: u32,
    depenetration_speed: f32,
    skin: f32,
    rebuild_limit2: f32,
    list_capacity: u32,
    cells_mode: u32,
    _pad1: u32,
    _pad2: u32,
    args: array<u32, 20>,
    friction: array<vec4<f32>>,
}

// Coulomb friction on a contact's tangential displacement (hooke's `Friction::correction`):
// removed whole if shorter than μₛ·depth (static), else shortened by at most μₖ·depth.
fn coulomb(static_friction: f32, kinetic_friction: f32, tangential: vec3<f32>, depth: f32) -> vec3<f32> {
    let len2 = dot3(tangential, tangential);
    if len2 == 0.0 {
        return vec3<f32>(0.0);
    }
    let len = sqrt(len2);
    if len < static_friction * depth {
        return -tangential;
    }
    return -tangential * min(kinetic_friction * depth / len, 1.0);
}

// The cell of x: ⌊x·inv_cell⌋ per axis (hooke's `cell_of`).
fn cell_of(x: vec3<f32>, inv_cell: f32) -> vec3<i32> {
    return vec3<i32>(floor(x * inv_cell));
}

// The bucket of a cell: Teschner et al.'s hash with the article's primes, on the cell's
// two's-complement bits with wrapping u32 products, modulo the table size, a power of two
// (hooke's `bucket_of`).
fn bucket_of(c: vec3<i32>, table_size: u32) -> u32 {
    let u = bitcast<vec3<u32>>(c);
    return ((u.x * 73856093u) ^ (u.y * 19349663u) ^ (u.z * 83492791u)) & (table_size - 1u);
}

// One distance-constraint projection from the current iterate (article §3.3; hooke's CPU
// kernel `project_one` in solver/xpbd/distance_kernel.rs, operation for operation, so that both
// round alike): C from the pair now, x = (xᵢ⁰ − xⱼ⁰) + (dᵢ − dⱼ); the direction u from the pair
// at the start of the substep, x⁰ = xᵢ⁰ − xⱼ⁰ (which conserves angular momentum), or from x if
// the pair turned by more than 25°; t = Δλ/‖u‖, the step along u (returned as `x`, with
// `len` = ‖u‖). `moves` is false when both ends are
// fixed or the pair started at one point (then t = 0). The compliance is the stretch one while
// λ < 0, the compression one while λ > 0, and at λ = 0 that of the side C is on.
struct DistanceStep {
    x: vec3<f32>,
    len: f32,
    t: f32,
    moves: bool,
}

// cos² of the largest turn within a substep for which the start direction is used
// (`COS2_TURN` in distance_kernel.rs).
const COS2_TURN: f32 = 0.82;

fn distance_step(c: Constraint, pi: vec4<f32>, pj: vec4<f32>, di: vec3<f32>, dj: vec3<f32>, lam: f32) -> DistanceStep {
    let wsum = pi.w + pj.w;
    let x0 = pi.xyz - pj.xyz;
    let delta = di - dj;
    let x = x0 + delta;
    let l02 = x0.x * x0.x + x0.y * x0.y + x0.z * x0.z;
    let len2 = x.x * x.x + x.y * x.y + x.z * x.z;
    // The direction: the pair at the start of the substep, unless it has turned by more than
    // 25° since (or started at one point); then the pair now.
    let dot = x0.x * x.x + x0.y * x.y + x0.z * x.z;
    var u = x;
    var u2 = len2;
    let start = l02 >= 1e-18 && dot > 0.0 && dot * dot >= COS2_TURN * (l02 * len2);
    if start {
        u = x0;
        u2 = l02;
    }
    if wsum == 0.0 || u2 < 1e-18 {
        return DistanceStep(u, 0.0, 0.0, false);
    }
    let len = sqrt(len2);
    let l0 = sqrt(l02);
    var ul = len;
    if start {
        ul = l0;
    }
    return distance_update(c, u, ul, u2, len, l0, lam, wsum);
}

// The XPBD (or PBD) step of `distance_step` along u (‖u‖ = `ul`, ‖u‖² = `u2`), for the pair of
// length `len` now and `l0` at the start of the substep, with inverse masses summing to `wsum`
// and the multiplier `lam`.
fn distance_update(c: Constraint, u: vec3<f32>, ul: f32, u2: f32, len: f32, l0: f32, lam: f32, wsum: f32) -> DistanceStep {
    let cval = len - c.rest_length;
    if P.method == 1u {
        // PBD: Δλ = −s C/(wᵢ + wⱼ), written as t = Δλ/‖u‖.
        return DistanceStep(u, ul, -(P.pbd_stiffness * cval) / (wsum * ul), true);
    }
    // XPBD with damping γ = τ/h: t = −(C + α̃λ + γΔC)‖u‖ / (((1+γ)(wᵢ+wⱼ) + α̃)‖u‖²), ΔC the
    // change of length over the substep, C − (‖x⁰‖ − L₀).
    var tension = lam < 0.0;
    if lam == 0.0 {
        tension = cval >= 0.0;
    }
    var alpha = c.compliance_compression;
    if tension {
        alpha = c.compliance_stretch;
    }
    alpha = alpha * P.inv_h2;
    var gamma = 0.0;
    if alpha > 0.0 {
        gamma = c.damping * P.inv_h;
    }
    let rate = cval - (l0 - c.rest_length);
    let numer = -(cval + alpha * lam + gamma * rate) * ul;
    let denom = ((1.0 + gamma) * wsum + alpha) * u2;
    return DistanceStep(u, ul, numer / denom, true);
}

// The colour being swept by a constraint kernel (`ColourSlot` in buffers.rs): constraints
// start..start+count of its set; `first` is set on the first iteration of a substep, where λ
// starts from 0.
struct Colour {
    start: u32,
    count: u32,
    first: u32,
    _pad: u32,
}

// atan(a) for a in [0, 1]: hooke's `angle::atan2` (Cephes), operation for operation.
fn atan_unit(a: f32) -> f32 {
    var x = a;
    var offset = 0.0f;
    if a > 0.41421357f {
        x = (a - 1.0f) / (a + 1.0f);
        offset = 0.7853982f;
    }
    let z = x * x;
    let p = (((0.080537446f * z - 0.13877685f) * z + 0.1997771f) * z - 0.3333295f) * z;
    return offset + (p * x + x);
}

// The angle of (x, y) from +x in (−π, π]; 0 at the origin (`angle::atan2`).
fn atan2_hooke(y: f32, x: f32) -> f32 {
    let ax = abs(x);
    let ay = abs(y);
    if ax == 0.0 && ay == 0.0 {
        return 0.0;
    }
    var a = 0.0f;
    if ay <= ax {
        a = atan_unit(ay / ax);
    } else {
        a = 1.5707964f - atan_unit(ax / ay);
    }
    if x < 0.0 {
        a = 3.1415927f - a;
    }
    if y < 0.0 {
        a = -a;
    }
    return a;
}

// The shared XPBD/PBD update of an N-particle constraint (solver/xpbd/projection.rs, `project`):
// Δλ from C (`value`), Σ wᵢ‖∇ᵢC‖² (`weight`), Σ ∇ᵢC·dᵢ (`rate`), λ, the compliance α and the
// damping time τ, in the CPU's order.
fn xpbd_delta(value: f32, weight: f32, rate: f32, lam: f32, compliance: f32, damping: f32) -> f32 {
    if P.method == 1u {
        return -(P.pbd_stiffness * value) / weight;
    }
    let alpha = compliance * P.inv_h2;
    var gamma = 0.0f;
    if alpha > 0.0 {
        gamma = damping * P.inv_h;
    }
    return (-value - alpha * lam - gamma * rate) / ((1.0 + gamma) * weight + alpha);
}

// The joint angle of a rope, C = θ between the segments, and its gradients at positions
// relative to x₀ (hooke's `bending_angle`; rope_bending.wgsl and rope_solver.wgsl); zero
// gradients when straight; `ok` is false for a zero-length segment.
struct Angle3 {
    ok: bool,
    value: f32,
    g0: vec3<f32>,
    g1: vec3<f32>,
    g2: vec3<f32>,
}

fn joint_angle(x1: vec3<f32>, x2: vec3<f32>) -> Angle3 {
    var out = Angle3(false, 0.0, vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    let a = x1;
    let b = x2 - x1;
    let la2 = dot3(a, a);
    let lb2 = dot3(b, b);
    if !(la2 > 1e-18f && lb2 > 1e-18f) {
        return out;
    }
    let la = sqrt(la2);
    let lb = sqrt(lb2);
    let ua = a * (1.0 / la);
    let ub = b * (1.0 / lb);
    let c = dot3(ua, ub);
    let s = cross3(ua, ub);
    let sin = sqrt(dot3(s, s));
    out.ok = true;
    out.value = atan2_hooke(sin, c);
    if !(sin > 1e-7f) {
        return out;
    }
    var p = ub - opaque3(ua * c);
    var q = ua - opaque3(ub * c);
    p = p * (1.0 / sqrt(dot3(p, p)));
    q = q * (1.0 / sqrt(dot3(q, q)));
    let g0 = p * (1.0 / la);
    let g2 = -(q * (1.0 / lb));
    out.g0 = g0;
    out.g1 = -g0 - g2;
    out.g2 = g2;
    return out;
}

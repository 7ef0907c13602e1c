// Tile-local Gauss–Seidel in workgroup memory (issue #13, item 2). Dispatched by local_sweep.rs
// once per substep, in place of every iteration's distance, hinge and tether dispatches.
//
// One workgroup per tile — one body's particles and constraints — loads the tile's displacements
// into workgroup memory, then runs every iteration of the substep there: the distance
// constraints colour by colour, the hinges colour by colour, then the tethers of the tile's
// particles, with a barrier after each, exactly the order of the colour-by-colour sweep of the
// whole model (distance.wgsl, dihedral.wgsl, tethers.wgsl). It writes the displacements back at
// the end. Tiles share no particle, so the order between them does not matter; within a tile each
// colour sees the corrections of the colours before it, and each constraint is projected by the
// arithmetic of the device-memory kernels (`distance_step`, `hinge_step`, `tether_pull`): the
// results are the same bit for bit (tests/gpu/local_sweep.rs). What it saves is the dispatches
// (one per colour per iteration before, one per substep now) and the device-memory traffic of
// the displacements, read and written by every constraint.
//
// `table[0]` = (distance colours D, hinge colours H), `table[1]` = (tiles T, iterations);
// tile t's records start at b = 2 + t (1 + D + H): `table[b]` = (first particle, particle
// count), then D (first constraint, count), then H (first hinge, count). A tile's tethers are
// found in the tether records (sorted by particle) by bisection.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> constraints: array<Constraint>;
@group(0) @binding(3) var<storage, read_write> lambda: array<f32>;
@group(0) @binding(4) var<storage, read> hinges: array<Hinge>;
@group(0) @binding(5) var<storage, read_write> hinge_lambda: array<f32>;
@group(0) @binding(6) var<storage, read> tethers: array<Tether>;
@group(0) @binding(7) var<storage, read> table: array<vec2<u32>>;
// `count`: the number of tether records.
@group(2) @binding(0) var<uniform> tether_slot: Colour;

// Threads per tile and the largest tile (particles), set by kernel.rs from the device's limits
// (three f32 per particle in workgroup memory).
override LOCAL_THREADS: u32 = 256u;
override LOCAL_CAPACITY: u32 = 1024u;

var<workgroup> local_x: array<f32, LOCAL_CAPACITY>;
var<workgroup> local_y: array<f32, LOCAL_CAPACITY>;
var<workgroup> local_z: array<f32, LOCAL_CAPACITY>;

// The displacement of the tile's particle k (its index less the tile's first).
fn local_get(k: u32) -> vec3<f32> {
    return vec3<f32>(local_x[k], local_y[k], local_z[k]);
}

fn local_set(k: u32, d: vec3<f32>) {
    local_x[k] = d.x;
    local_y[k] = d.y;
    local_z[k] = d.z;
}

// A distance constraint as read from device memory: its record, its particles at the start of
// the substep and its λ (0 on the first iteration).
struct DistanceRead {
    ci: u32,
    c: Constraint,
    pi: vec4<f32>,
    pj: vec4<f32>,
    lam: f32,
}

fn read_distance(ci: u32, first: bool) -> DistanceRead {
    let c = constraints[ci];
    var lam = 0.0;
    if !first {
        lam = lambda[ci];
    }
    return DistanceRead(ci, c, position[c.i], position[c.j], lam);
}

// `distance.wgsl`'s `solve_one` on the tile's displacements (`first` particle `p0`).
fn project_distance(r: DistanceRead, p0: u32) {
    let c = r.c;
    var lam = r.lam;
    let di = local_get(c.i - p0);
    let dj = local_get(c.j - p0);
    let step = distance_step(c, r.pi, r.pj, di, dj, lam);
    if !step.moves {
        lambda[r.ci] = lam;
        return;
    }
    if P.method != 1u {
        lam = lam + step.t * step.len;
    }
    lambda[r.ci] = lam;
    let corr = step.x * step.t;
    local_set(c.i - p0, di + corr * r.pi.w);
    local_set(c.j - p0, dj - corr * r.pj.w);
}

fn local_distance(ci: u32, p0: u32, first: bool) {
    project_distance(read_distance(ci, first), p0);
}

// `dihedral.wgsl`'s `solve_one` on the tile's displacements.
fn local_hinge(ci: u32, p0: u32, first: bool) {
    let c = hinges[ci];
    var lam = 0.0f;
    if !first {
        lam = hinge_lambda[ci];
    }
    let q0 = position[c.p0];
    let q1 = position[c.p1];
    let q2 = position[c.p2];
    let q3 = position[c.p3];
    let d0 = local_get(c.p0 - p0);
    let d1 = local_get(c.p1 - p0);
    let d2 = local_get(c.p2 - p0);
    let d3 = local_get(c.p3 - p0);
    let step = hinge_step(c, q0, q1, q2, q3, d0, d1, d2, d3, lam);
    if !step.moves {
        hinge_lambda[ci] = lam;
        return;
    }
    let delta = step.delta;
    if P.method != 1u {
        lam = lam + delta;
    }
    hinge_lambda[ci] = lam;
    local_set(c.p0 - p0, d0 + step.g0 * (q0.w * delta));
    local_set(c.p1 - p0, d1 + step.g1 * (q1.w * delta));
    local_set(c.p2 - p0, d2 + step.g2 * (q2.w * delta));
    local_set(c.p3 - p0, d3 + step.g3 * (q3.w * delta));
}

// The displacement of pin q as the tether kernel reads it: the tile's own, or (a pin outside
// the tile, which no constraint of the tile moves) device memory's.
fn local_pin(q: u32, p0: u32, n: u32) -> vec3<f32> {
    if q >= p0 && q - p0 < n {
        return local_get(q - p0);
    }
    return displacement[q].xyz;
}

// A tether record as read from device memory, with its particle and pins at the start of the
// substep.
struct TetherRead {
    t: Tether,
    xp: vec3<f32>,
    x0: vec3<f32>,
    x1: vec3<f32>,
}

fn read_tether(k: u32) -> TetherRead {
    let t = tethers[k];
    return TetherRead(t, position[t.particle].xyz, position[t.pin0].xyz, position[t.pin1].xyz);
}

// `tethers.wgsl`'s `solve` for a tether record on the tile's displacements.
fn project_tether(r: TetherRead, p0: u32, n: u32) {
    let t = r.t;
    var dp = local_get(t.particle - p0);
    if t.count > 0u {
        dp = tether_pull(r.xp - r.x0, dp, local_pin(t.pin0, p0, n), t.length0);
    }
    if t.count > 1u {
        dp = tether_pull(r.xp - r.x1, dp, local_pin(t.pin1, p0, n), t.length1);
    }
    local_set(t.particle - p0, dp);
}

fn local_tether(k: u32, p0: u32, n: u32) {
    project_tether(read_tether(k), p0, n);
}

// The first tether record whose particle is at least p (records are sorted by particle).
fn tether_bound(p: u32) -> u32 {
    var lo = 0u;
    var hi = tether_slot.count;
    while lo < hi {
        let mid = lo + (hi - lo) / 2u;
        if tethers[mid].particle < p {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// One colour of distance constraints, a thread's first two read from device memory before
// either is projected (a colour's constraints share no particle, so a thread's order among them
// is free): the two reads' latencies overlap where a colour has more constraints than the tile
// has threads. Measured on an H100 (GPU time per frame): Newton's `cloth_hanging` at 64×32
// (colours of about 1 030 constraints on 1 024 threads) 2.55 → 2.37 ms, 256 worlds of a 64²
// cloth 5.67 → 5.51 ms. The hinges are swept one at a time: two hinges read at once (four
// particles each) made the same 256 worlds slower, 6.56 ms.
fn distance_colour(r: vec2<u32>, lid: u32, p0: u32, first: bool) {
    let k1 = lid + LOCAL_THREADS;
    var a: DistanceRead;
    var b: DistanceRead;
    if lid < r.y {
        a = read_distance(r.x + lid, first);
    }
    if k1 < r.y {
        b = read_distance(r.x + k1, first);
    }
    if lid < r.y {
        project_distance(a, p0);
    }
    if k1 < r.y {
        project_distance(b, p0);
    }
    for (var k = k1 + LOCAL_THREADS; k < r.y; k += LOCAL_THREADS) {
        local_distance(r.x + k, p0, first);
    }
}

// The tether records t0..t1 of the tile, a thread's first two read before either is projected
// (each tether moves only its own particle).
fn tether_sweep(t0: u32, t1: u32, lid: u32, p0: u32, n: u32) {
    let k0 = t0 + lid;
    let k1 = k0 + LOCAL_THREADS;
    var a: TetherRead;
    var b: TetherRead;
    if k0 < t1 {
        a = read_tether(k0);
    }
    if k1 < t1 {
        b = read_tether(k1);
    }
    if k0 < t1 {
        project_tether(a, p0, n);
    }
    if k1 < t1 {
        project_tether(b, p0, n);
    }
    for (var k = k1 + LOCAL_THREADS; k < t1; k += LOCAL_THREADS) {
        local_tether(k, p0, n);
    }
}

@compute @workgroup_size(LOCAL_THREADS)
fn solve_local(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let sets = table[0];
    let head = table[1];
    let t = wid.x + wid.y * nwg.x;
    if t >= head.x {
        return;
    }
    let base = 2u + t * (1u + sets.x + sets.y);
    let particles = table[base];
    let p0 = particles.x;
    let n = particles.y;
    for (var k = lid; k < n; k += LOCAL_THREADS) {
        local_set(k, displacement[p0 + k].xyz);
    }
    let tether_first = tether_bound(p0);
    let tether_end = tether_bound(p0 + n);
    workgroupBarrier();
    for (var it = 0u; it < head.y; it++) {
        let first = it == 0u;
        for (var c = 0u; c < sets.x; c++) {
            let r = table[base + 1u + c];
            distance_colour(r, lid, p0, first);
            workgroupBarrier();
        }
        for (var c = 0u; c < sets.y; c++) {
            let r = table[base + 1u + sets.x + c];
            for (var k = lid; k < r.y; k += LOCAL_THREADS) {
                local_hinge(r.x + k, p0, first);
            }
            workgroupBarrier();
        }
        if tether_end > tether_first {
            tether_sweep(tether_first, tether_end, lid, p0, n);
            workgroupBarrier();
        }
    }
    for (var k = lid; k < n; k += LOCAL_THREADS) {
        displacement[p0 + k] = vec4<f32>(local_get(k), 0.0);
    }
}

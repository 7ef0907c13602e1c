// Particle contacts (self-collision), one Jacobi pass per substep after the constraint sets
// (self_collision.rs; hooke's `collision/self_collision.rs`, operation for operation and in the
// same order, so that both round alike): each member gathers its own averaged correction from
// its neighbour list (contact_lists.wgsl) or, without lists or when its list overflowed, from
// the candidates of the spatial hash's cells, then adds it to its displacement.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
// Rest position (xyz) and collision radius (w) of every particle.
@group(0) @binding(2) var<storage, read> rest: array<vec4<f32>>;
// Body index (low 20 bits) and number of contacts in the last substep (high 12 bits, at most
// 4095) of every particle.
@group(0) @binding(3) var<storage, read_write> tag: array<u32>;
@group(0) @binding(4) var<storage, read> info: HashInfo;
@group(0) @binding(5) var<storage, read> table: array<u32>;
// Correction (xyz) and number of contacts (w, as bits) of each member, then each hash entry's
// point (position, radius) in the table's order; with neighbour lists, then each member's
// position at the last build and each particle's position now (contact_layout.wgsl).
@group(0) @binding(6) var<storage, read_write> correction: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> health: Health;

// Fixed-point units per metre (hooke's `FIXED_POINT`, 2²⁸).
const FIXED: f32 = 268435456.0;

// The fixed-point sum of a member's corrections (hooke's `FixedSum`: 64-bit words as (low,
// high) u32 pairs) and its number of contacts.
struct Sum {
    low: vec3<u32>,
    high: vec3<u32>,
    count: u32,
}

// Adds v, in fixed point (truncated towards zero, saturating), to the 64-bit words (low, high)
// of `sum`.
fn fixed_add(sum: ptr<function, Sum>, v: vec3<f32>) {
    let t = vec3<i32>(v * FIXED);
    let u = bitcast<vec3<u32>>(t);
    let low = (*sum).low;
    let added = low + u;
    let carry = select(vec3<u32>(0u), vec3<u32>(1u), added < low);
    (*sum).high = (*sum).high + select(vec3<u32>(0u), vec3<u32>(0xffffffffu), t < vec3<i32>(0)) + carry;
    (*sum).low = added;
}

// One word in metres: as an i32 when it fits (rounding once), else f32(high)·2³² + f32(low).
fn fixed_word(low: u32, high: u32) -> f32 {
    let small = (high == 0u && low < 0x80000000u) || (high == 0xffffffffu && low >= 0x80000000u);
    if small {
        return f32(bitcast<i32>(low)) / FIXED;
    }
    return (f32(bitcast<i32>(high)) * 4294967296.0 + f32(low)) / FIXED;
}

fn fixed_value(low: vec3<u32>, high: vec3<u32>) -> vec3<f32> {
    return vec3<f32>(fixed_word(low.x, high.x), fixed_word(low.y, high.y), fixed_word(low.z, high.z));
}

// What a member brings to each of its contacts.
struct Member {
    i: u32,
    // Position now (x⁰ + d), its displacement d and its position at the substep's start x⁰.
    x: vec3<f32>,
    d: vec3<f32>,
    x0: vec3<f32>,
    w: f32,
    r: f32,
    rest: vec3<f32>,
    body: u32,
    // Its contacts in the last substep.
    contacts: u32,
    relax: f32,
}

// Member i as its contacts see it.
fn member(i: u32) -> Member {
    let pi = position[i];
    let di4 = displacement[i];
    let rest_i = rest[i];
    let tag_i = tag[i];
    var a: Member;
    a.i = i;
    a.x = (pi + di4).xyz;
    a.d = di4.xyz;
    a.x0 = pi.xyz;
    a.w = pi.w;
    a.r = rest_i.w;
    a.rest = rest_i.xyz;
    a.body = tag_i & 0xfffffu;
    a.contacts = tag_i >> 20u;
    a.relax = info.depenetration_speed * P.h;
    return a;
}

// The contact of member `a` with particle j, at xj, closer than t = rᵢ + rⱼ, of its world and
// not its neighbour at rest (rd: their rest positions' difference; tag_j: j's tag): its
// correction and friction added to `sum`.
fn touch(a: Member, j: u32, xj: vec3<f32>, t: f32, rd: vec3<f32>, tag_j: u32, sum: ptr<function, Sum>) {
    var delta = a.x - xj;
    let dist2 = dot3(delta, delta);
    let pj = position[j];
    let dj4 = displacement[j];
    let bj = tag_j & 0xfffffu;
    // The contact normal: along the pair now; for coincident particles along the pair at rest,
    // else at the substep's start, else ±y by index (antisymmetric).
    let dist = sqrt(dist2);
    let start = a.x0 - pj.xyz;
    if dot3(delta, delta) <= 0.0 {
        if dot3(rd, rd) > 0.0 {
            delta = rd;
        } else if dot3(start, start) > 0.0 {
            delta = start;
        } else if a.i < j {
            delta = vec3<f32>(0.0, 1.0, 0.0);
        } else {
            delta = vec3<f32>(0.0, -1.0, 0.0);
        }
    }
    let n = delta / sqrt(dot3(delta, delta));
    let wj = pj.w;
    let dist0 = sqrt(dot3(start, start));
    var goal = t;
    if dist0 < t {
        goal = min(t, dist0 + a.relax);
    }
    (*sum).count = (*sum).count + 1u;
    if goal <= dist {
        return;
    }
    let depth = goal - dist;
    // The same share on both sides of the pair: momentum is kept.
    let split = f32(max(max(a.contacts, tag_j >> 20u), 1u));
    let share = a.w / (a.w + wj) / split;
    fixed_add(sum, n * (depth * share));
    let rel = a.d - dj4.xyz;
    let tangential = rel - n * dot3(rel, n);
    let fi = info.friction[a.body];
    let fj = info.friction[bj];
    let f = vec2<f32>(0.5 * (fi.x + fj.x), 0.5 * (fi.y + fj.y));
    fixed_add(sum, coulomb(f.x, f.y, tangential, depth) * share);
}

// A candidate j (not a itself) at xj, closer than t: its contact with `a`, unless it belongs
// to another world or is a's neighbour at rest (of a's body, closer than t at rest).
fn meet(a: Member, j: u32, xj: vec3<f32>, t: f32, sum: ptr<function, Sum>) {
    let tag_j = tag[j];
    let bj = tag_j & 0xfffffu;
    // Particles of two worlds never touch (the world of each body is in its record).
    if info.friction[a.body].z != info.friction[bj].z {
        return;
    }
    let rd = a.rest - rest[j].xyz;
    if a.body == bj && dot3(rd, rd) < t * t {
        return;
    }
    touch(a, j, xj, t, rd, tag_j, sum);
}

@compute @workgroup_size(64)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    let m = info.member_count;
    if k >= m {
        return;
    }
    let i = table[members_at() + k] & 0x7fffffffu;
    let pi = position[i];
    let wi = pi.w;
    if wi <= 0.0 {
        correction[k] = vec4<f32>(0.0);
        return;
    }
    let a = member(i);
    var sum: Sum;
    sum.low = vec3<u32>(0u);
    sum.high = vec3<u32>(0u);
    sum.count = 0u;
    let cap = info.list_capacity;
    var listed = 0xffffffffu;
    if cap != 0u && info.cells_mode == 0u {
        listed = table[list_lengths_at() + k];
    }
    if listed <= cap {
        // The member's neighbour list (contact_lists.wgsl): its candidates' positions now,
        // written by `check` this substep; the list already holds only the member's world,
        // without itself and its neighbours at rest.
        for (var e = 0u; e < listed; e++) {
            let j = table[lists_at() + e * m + k];
            let point = correction[current_at() + j];
            let delta = a.x - point.xyz;
            let t = a.r + point.w;
            if dot3(delta, delta) >= t * t {
                continue;
            }
            touch(a, j, point.xyz, t, a.rest - rest[j].xyz, tag[j], &sum);
        }
    } else {
        // Every cell the box touches (without lists cells one contact distance wide: 3 per
        // axis, 4 where rounding puts the box's ends across borders), each bucket's entries of
        // that cell only. The order differs from the CPU's; the fixed-point sum does not care.
        let base = info.table_size + 1u;
        let reach = a.r + info.max_radius;
        let lo = cell_of(a.x - vec3<f32>(reach), info.inv_cell);
        let hi = cell_of(a.x + vec3<f32>(reach), info.inv_cell);
        // At most 8 cells per axis (a finite position's box spans 3–4): a runaway position,
        // whose cells saturate at i32's ends, visits a few instead of looping past them.
        let span = min(hi - lo, vec3<i32>(7));
        for (var dz = 0; dz <= span.z; dz++) {
        for (var dy = 0; dy <= span.y; dy++) {
        for (var dx = 0; dx <= span.x; dx++) {
            let cell = lo + vec3<i32>(dx, dy, dz);
            let b = bucket_of(cell, info.table_size);
            let stop = table[b + 1u];
            for (var s = table[b]; s < stop; s++) {
                let point = correction[m + s];
                if any(cell_of(point.xyz, info.inv_cell) != cell) {
                    continue;
                }
                let delta = a.x - point.xyz;
                let t = a.r + point.w;
                if dot3(delta, delta) >= t * t {
                    continue;
                }
                let j = table[base + s];
                if j == i {
                    continue;
                }
                meet(a, j, point.xyz, t, &sum);
            }
        }
        }
        }
    }
    correction[k] = vec4<f32>(fixed_value(sum.low, sum.high), bitcast<f32>(sum.count));
}

// `gather_all`'s threads per member, each testing every SLICES-th candidate of a tile (a
// power of two dividing ALL_PAIRS_GROUP); `SLICES` in self_collision.rs.
const SLICES: u32 = 16u;
// `gather_all`'s workgroup: ALL_PAIRS_GROUP / SLICES members, and the candidates it tests in
// tiles of ALL_PAIRS_GROUP; `ALL_PAIRS_GROUP` in self_collision.rs.
const ALL_PAIRS_GROUP: u32 = 256u;

// The tile of candidates: their points (position x⁰ + d, radius) and particle indices.
var<workgroup> tile_point: array<vec4<f32>, ALL_PAIRS_GROUP>;
var<workgroup> tile_index: array<u32, ALL_PAIRS_GROUP>;
// Each thread's partial sum, reduced across a member's slices.
var<workgroup> slice_low: array<vec3<u32>, ALL_PAIRS_GROUP>;
var<workgroup> slice_high: array<vec3<u32>, ALL_PAIRS_GROUP>;
var<workgroup> slice_count: array<u32, ALL_PAIRS_GROUP>;

// The contacts of a small model without the hash (self_collision.rs, `ALL_PAIRS_MEMBERS`):
// SLICES threads per member. The workgroup loads the members in tiles into workgroup memory,
// one each, and each thread tests every SLICES-th candidate of the tile against its member
// with `gather`'s tests; then the slices' fixed-point sums are added in workgroup memory.
// Integer sums do not depend on the order, so the result is `gather`'s, bit for bit, in one
// dispatch instead of the hash's four or five. The speed clamp is not applied here (a model
// with it uses the hash).
@compute @workgroup_size(ALL_PAIRS_GROUP)
fn gather_all(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let m = info.member_count;
    let k = (wid.x + wid.y * 65535u) * (ALL_PAIRS_GROUP / SLICES) + lid / SLICES;
    let slice = lid % SLICES;
    var sum: Sum;
    sum.low = vec3<u32>(0u);
    sum.high = vec3<u32>(0u);
    sum.count = 0u;
    var live = k < m;
    var a: Member;
    if live {
        a = member(table[members_at() + k] & 0x7fffffffu);
        live = a.w > 0.0;
    }
    for (var base = 0u; base < m; base += ALL_PAIRS_GROUP) {
        if base + lid < m {
            let j = table[members_at() + base + lid] & 0x7fffffffu;
            tile_point[lid] = vec4<f32>((position[j] + displacement[j]).xyz, rest[j].w);
            tile_index[lid] = j;
        }
        workgroupBarrier();
        if live {
            let size = min(ALL_PAIRS_GROUP, m - base);
            for (var e = slice; e < size; e += SLICES) {
                let point = tile_point[e];
                let j = tile_index[e];
                let delta = a.x - point.xyz;
                let t = a.r + point.w;
                if dot3(delta, delta) >= t * t || j == a.i {
                    continue;
                }
                meet(a, j, point.xyz, t, &sum);
            }
        }
        workgroupBarrier();
    }
    slice_low[lid] = sum.low;
    slice_high[lid] = sum.high;
    slice_count[lid] = sum.count;
    workgroupBarrier();
    for (var half = SLICES / 2u; half > 0u; half = half / 2u) {
        if slice < half {
            let low = slice_low[lid];
            let added = low + slice_low[lid + half];
            let carry = select(vec3<u32>(0u), vec3<u32>(1u), added < low);
            slice_high[lid] = slice_high[lid] + slice_high[lid + half] + carry;
            slice_low[lid] = added;
            slice_count[lid] = slice_count[lid] + slice_count[lid + half];
        }
        workgroupBarrier();
    }
    if slice == 0u && k < m {
        correction[k] = vec4<f32>(fixed_value(slice_low[lid], slice_high[lid]), bitcast<f32>(slice_count[lid]));
    }
}

@compute @workgroup_size(64)
fn apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= info.member_count {
        return;
    }
    let c = correction[k];
    let count = bitcast<u32>(c.w);
    let i = table[members_at() + k] & 0x7fffffffu;
    tag[i] = (tag[i] & 0xfffffu) | (min(count, 4095u) << 20u);
    if count == 0u {
        return;
    }
    displacement[i] = displacement[i] + vec4<f32>(c.xyz, 0.0);
    if P.last_substep != 0u {
        atomicAdd(&health.particle_contacts, 1u);
    }
}

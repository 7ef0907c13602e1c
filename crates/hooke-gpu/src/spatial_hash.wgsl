// The spatial hash of the particle contacts, rebuilt every substep without neighbour lists (spatial_hash.rs; hooke's
// `collision/spatial_hash.rs`, with cells one contact distance wide instead of two): count the
// members per bucket, exclusive prefix sum (blocks of 512, then the block sums, then the
// add-back), and scatter each member with its point (in any order: the contact sums are in
// fixed point, so the order in which a bucket lists its particles does not matter).
//
// `table` holds start[0..=T] (bucket b is entries[start[b]..start[b + 1]]), then entries[M],
// then members[M] (the colliding particles, increasing; the top bit set where the particle's
// body has the speed clamp); with neighbour lists, then each member's list length[M] and the
// lists (capacity·M: entry e of member k at e·M + k). `counters` holds count[0..=T] (zero
// between builds: the add-back clears it), cursor[T] and the lists' seven words of flags and
// tallies (contact_layout.wgsl). `scratch` holds block_sum[B], block_prefix[B], each member's
// bucket[M] and, with neighbour lists, the body of every particle[N].
//
// With neighbour lists (contact_lists.wgsl) every dispatch here is indirect, through the
// arguments `arm` writes into `info`: all of them in a substep whose lists are stale, the
// hash's alone in a spell of cells, none in the others.

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> info: HashInfo;
@group(0) @binding(3) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> table: array<u32>;
@group(0) @binding(5) var<storage, read_write> scratch: array<u32>;
// Rest position and collision radius (w) of every particle.
@group(0) @binding(6) var<storage, read> rest: array<vec4<f32>>;
// Each member's correction (written by the contact kernel), then each entry's point: its
// position x⁰ + d and radius (w), in the table's order, so the contact kernel's candidate loop
// reads memory in sequence.
@group(0) @binding(7) var<storage, read_write> work: array<vec4<f32>>;

const BLOCK: u32 = 512u;
const PER_THREAD: u32 = 8u;
// Tables of at most this many blocks (8 192 buckets) skip `scan_top` (spatial_hash.rs).
const SMALL_BLOCKS: u32 = 16u;

var<workgroup> partial: array<u32, 64>;

// Exclusive scan of `partial` across the workgroup (Hillis–Steele, then shifted); returns
// the exclusive prefix of thread `lid` and leaves the total in partial[63].
fn workgroup_exclusive(lid: u32, value: u32) -> u32 {
    partial[lid] = value;
    workgroupBarrier();
    for (var offset = 1u; offset < 64u; offset = offset * 2u) {
        var add = 0u;
        if lid >= offset {
            add = partial[lid - offset];
        }
        workgroupBarrier();
        partial[lid] = partial[lid] + add;
        workgroupBarrier();
    }
    return partial[lid] - value;
}

// 1. One thread per member: the optional speed clamp of its body (|d| ≤ 0.2 × 2r), then its
// bucket, counted.
@compute @workgroup_size(64)
fn count(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= info.member_count {
        return;
    }
    let member = table[members_at() + k];
    let i = member & 0x7fffffffu;
    // With neighbour lists, `check` (contact_lists.wgsl) has applied the clamp.
    if (member >> 31u) != 0u && info.list_capacity == 0u {
        speed_clamp(i);
    }
    let x = (position[i] + displacement[i]).xyz;
    let b = bucket_of(cell_of(x, info.inv_cell), info.table_size);
    scratch[2u * info.block_count + k] = b;
    atomicAdd(&counters[b], 1u);
}

// 2. One workgroup per block of 512 counts: the exclusive prefix inside the block into start,
// and the block's total.
@compute @workgroup_size(64)
fn scan_blocks(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let block = thread_index(gid, nwg) / 64u;
    let n = info.table_size + 1u;
    let first = block * BLOCK + lid * PER_THREAD;
    var values: array<u32, 8>;
    var sum = 0u;
    for (var e = 0u; e < PER_THREAD; e++) {
        var v = 0u;
        if first + e < n {
            v = atomicLoad(&counters[first + e]);
        }
        values[e] = v;
        sum = sum + v;
    }
    var prefix = workgroup_exclusive(lid, sum);
    for (var e = 0u; e < PER_THREAD; e++) {
        if first + e < n {
            table[first + e] = prefix;
        }
        prefix = prefix + values[e];
    }
    if lid == 63u && block < info.block_count {
        scratch[block] = partial[63];
    }
}

// 3. One workgroup: the exclusive prefix of the block totals.
@compute @workgroup_size(64)
fn scan_top(@builtin(local_invocation_index) lid: u32) {
    let b = info.block_count;
    let chunk = (b + 63u) / 64u;
    let first = lid * chunk;
    var sum = 0u;
    for (var e = 0u; e < chunk; e++) {
        if first + e < b {
            sum = sum + scratch[first + e];
        }
    }
    var prefix = workgroup_exclusive(lid, sum);
    for (var e = 0u; e < chunk; e++) {
        if first + e < b {
            let v = scratch[first + e];
            scratch[b + first + e] = prefix;
            prefix = prefix + v;
        }
    }
}

// 4. One thread per entry of start: add its block's prefix, set the scatter cursor, and clear
// the count for the next build.
@compute @workgroup_size(64)
fn scan_add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = thread_index(gid, nwg);
    if e > info.table_size {
        return;
    }
    // The block's prefix: from `scan_top`, or, for a table of at most SMALL_BLOCKS blocks (whose
    // build skips that dispatch), summed here.
    let block = e / BLOCK;
    var prefix = 0u;
    if info.block_count <= SMALL_BLOCKS {
        for (var q = 0u; q < block; q++) {
            prefix = prefix + scratch[q];
        }
    } else {
        prefix = scratch[info.block_count + block];
    }
    let start = table[e] + prefix;
    table[e] = start;
    atomicStore(&counters[e], 0u);
    if e < info.table_size {
        atomicStore(&counters[info.table_size + 1u + e], start);
    }
}

// 5. One thread per member: into its bucket, in any order, with its point (position x⁰ + d
// and radius) beside it in the table's order.
@compute @workgroup_size(64)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= info.member_count {
        return;
    }
    let b = scratch[2u * info.block_count + k];
    let slot = atomicAdd(&counters[info.table_size + 1u + b], 1u);
    let i = table[members_at() + k] & 0x7fffffffu;
    table[info.table_size + 1u + slot] = i;
    work[info.member_count + slot] = vec4<f32>((position[i] + displacement[i]).xyz, rest[i].w);
}

// 6. With neighbour lists, one thread per member: its list, the members within its contact
// distance plus the skin now (t + s), of its world, not itself, not its neighbours at rest
// (hooke's `SelfCollision::build_lists`), from the cells its box of reach touches; its length
// (beyond the capacity: counted, and the member's contacts come from the cells until a build
// fits); its position now, from which `check` measures how far it moves.
@compute @workgroup_size(64)
fn lists(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    let m = info.member_count;
    if k >= m {
        return;
    }
    let i = table[members_at() + k] & 0x7fffffffu;
    let c = work[current_at() + i];
    let xi = c.xyz;
    let ri = c.w;
    let body_at = 2u * info.block_count + m;
    let bi = scratch[body_at + i];
    let rest_i = rest[i].xyz;
    let base = info.table_size + 1u;
    let cap = info.list_capacity;
    let reach = ri + info.max_radius + info.skin;
    let lo = cell_of(xi - vec3<f32>(reach), info.inv_cell);
    let hi = cell_of(xi + vec3<f32>(reach), info.inv_cell);
    var n = 0u;
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
            let point = work[m + s];
            if any(cell_of(point.xyz, info.inv_cell) != cell) {
                continue;
            }
            let delta = xi - point.xyz;
            let reach_ij = ri + point.w + info.skin;
            if dot3(delta, delta) >= reach_ij * reach_ij {
                continue;
            }
            let j = table[base + s];
            if j == i {
                continue;
            }
            let bj = scratch[body_at + j];
            if info.friction[bi].z != info.friction[bj].z {
                continue;
            }
            let t = ri + point.w;
            let rd = rest_i - rest[j].xyz;
            if bi == bj && dot3(rd, rd) < t * t {
                continue;
            }
            if n < cap {
                table[lists_at() + n * m + k] = j;
            }
            n = n + 1u;
        }
    }
    }
    }
    table[list_lengths_at() + k] = n;
    // A pinned member gathers nothing: its list may be as long as it likes.
    if n > cap && position[i].w > 0.0 {
        atomicOr(&counters[flags_at() + OVERFLOW], 1u);
        atomicAdd(&counters[flags_at() + OVERFLOWED], 1u);
    }
    work[built_at() + k] = vec4<f32>(xi, 0.0);
}

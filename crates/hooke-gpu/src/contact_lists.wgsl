// Neighbour lists for the particle contacts (contact_lists.rs; hooke's
// `collision/self_collision.rs`, same skin and rebuild threshold): every substep `check` applies
// the optional speed clamp, writes each member's current position and radius, and flags the
// lists stale when a member has moved more than `rebuild_limit2` (squared) since they were
// built; `arm` then writes the indirect arguments of the hash's build and of the list build
// (spatial_hash.wgsl): all of them when the lists are stale, none when they are fresh, the
// hash's alone in a spell of cells (below).

@group(0) @binding(0) var<storage, read> position: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> displacement: array<vec4<f32>>;
// Rest position (xyz) and collision radius (w) of every particle.
@group(0) @binding(2) var<storage, read> rest: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> info: HashInfo;
@group(0) @binding(4) var<storage, read> table: array<u32>;
@group(0) @binding(5) var<storage, read_write> work: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> counters: array<atomic<u32>>;

// Tables of at most this many blocks skip `scan_top` (spatial_hash.rs).
const SMALL_BLOCKS: u32 = 16u;

// 1. One thread per member: the optional speed clamp of its body (|d| ≤ 0.2 × 2r, as the hash's
// `count` applies it without lists), its position x⁰ + d and radius for the list build and the
// gather, and whether it has moved too far since the last build, absolutely and relative to the
// reference member (NaN counts as too far).
@compute @workgroup_size(64)
fn check(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = thread_index(gid, nwg);
    if k >= info.member_count {
        return;
    }
    let member = table[members_at() + k];
    let i = member & 0x7fffffffu;
    let r = rest[i].w;
    if (member >> 31u) != 0u {
        speed_clamp(i);
    }
    let x = (position[i] + displacement[i]).xyz;
    work[current_at() + i] = vec4<f32>(x, r);
    // The reference member's displacement since the build (hooke's `reference_member`): from
    // its position now, or at the substep's start where its body has the clamp (which its own
    // thread may be applying at this moment).
    let reference = info.member_count / 2u;
    let rm = table[members_at() + reference];
    let ri = rm & 0x7fffffffu;
    var xr = position[ri].xyz;
    if (rm >> 31u) == 0u {
        xr = (position[ri] + displacement[ri]).xyz;
    }
    let shift = xr - work[built_at() + reference].xyz;
    let moved = x - work[built_at() + k].xyz;
    let relative = moved - shift;
    // Bit 0: moved too far; bit 1: moved too far relative to the reference. Either bound alone
    // keeps the lists valid: they are stale when both fail.
    var bits = 0u;
    if !(dot3(moved, moved) <= info.rebuild_limit2) {
        bits = 1u;
    }
    if !(dot3(relative, relative) <= info.rebuild_limit2) {
        bits = bits | 2u;
    }
    if bits != 0u {
        atomicOr(&counters[flags_at() + STALE], bits);
    }
}

// The indirect arguments of a dispatch over `threads` threads, written at slot `s` (as
// `kernel::dispatch` splits it: beyond 65 535 workgroups into y), or of none.
fn set_args(s: u32, threads: u32, on: bool) {
    let groups = (threads + WORKGROUP - 1u) / WORKGROUP;
    var x = 0u;
    var y = 1u;
    if on && groups > 0u {
        x = min(groups, 65535u);
        y = (groups + x - 1u) / x;
    }
    info.args[3u * s] = x;
    info.args[3u * s + 1u] = y;
    info.args[3u * s + 2u] = 1u;
}

// 2. One thread: what this substep builds. After a build that overflowed, or lists stale
// within MIN_LIFE substeps of their build (a crowded or churning heap, where lists would be
// rebuilt, and overflow, in most substeps and cost more than the cells), a spell of substeps
// takes every member's contacts from the cells of a hash built in each, as without lists;
// then lists are built again. The spell lasts CELLS_SUBSTEPS, doubled after each try that
// fails again (up to MAX_SPELL), and back to CELLS_SUBSTEPS once lists last. Otherwise the
// hash and the lists are built when the lists are stale, and nothing is built when they are
// fresh. Clears both flags and counts the list builds.
const CELLS_SUBSTEPS: u32 = 20u;
const MAX_SPELL: u32 = 640u;
const MIN_LIFE: u32 = 4u;

@compute @workgroup_size(64)
fn arm(@builtin(local_invocation_index) lid: u32) {
    if lid != 0u {
        return;
    }
    let f = flags_at();
    // STALE: bits 0 and 1 from `check` (stale when both are set), 4 when a spell of cells has
    // ended (a retry, not lists that lasted), 8 before the first build.
    let flags = atomicExchange(&counters[f + STALE], 0u);
    let retry = (flags & 4u) != 0u;
    let stale = (flags & 3u) == 3u || flags >= 4u;
    var cells = atomicLoad(&counters[f + CELLS]);
    let age = min(atomicLoad(&counters[f + AGE]), 0xfffffffeu) + 1u;
    let short_lived = stale && cells == 0u && age < MIN_LIFE;
    let period = max(atomicLoad(&counters[f + PERIOD]), CELLS_SUBSTEPS);
    if atomicExchange(&counters[f + OVERFLOW], 0u) != 0u || short_lived {
        cells = period;
        atomicStore(&counters[f + PERIOD], min(2u * period, MAX_SPELL));
    } else if stale && cells == 0u && !retry {
        // Lists that lasted: the next failure starts from the shortest spell.
        atomicStore(&counters[f + PERIOD], CELLS_SUBSTEPS);
    }
    var hash = false;
    var lists = false;
    if cells > 0u {
        cells = cells - 1u;
        hash = true;
        // The next substep's contacts come from lists, built anew.
        if cells == 0u {
            atomicStore(&counters[f + STALE], 4u);
        }
        info.cells_mode = 1u;
    } else {
        hash = stale;
        lists = stale;
        info.cells_mode = 0u;
    }
    atomicStore(&counters[f + CELLS], cells);
    atomicStore(&counters[f + AGE], select(age, 0u, lists));
    if lists {
        atomicAdd(&counters[f + BUILDS], 1u);
    }
    let m = info.member_count;
    let b = info.block_count;
    set_args(0u, m, hash);
    set_args(1u, b * WORKGROUP, hash);
    set_args(2u, WORKGROUP, hash && b > SMALL_BLOCKS);
    set_args(3u, info.table_size + 1u, hash);
    set_args(4u, m, hash);
    set_args(5u, m, lists);
}

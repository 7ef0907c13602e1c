// Tile-local Gauss–Seidel (issue #13, item 2), appended to each constraint-set kernel
// (distance, dihedral, rope_bending): one workgroup per tile — a body's constraints — sweeps
// every colour of the tile in order, with a barrier between colours, in one dispatch, where the
// colour-by-colour sweep takes one dispatch per colour for the whole model. Tiles share no
// particle, so the order of their sweeps does not matter, and within a tile each colour sees
// the corrections of the colours before it, as in the colour-by-colour sweep: the results are
// the same bit for bit (tests/gpu/tiles.rs). It pays where dispatches, not work, set the pace:
// many small bodies — worlds of small cloths — and small models.
//
// `tiles[0]` = (colours C, tiles T); `tiles[1 + tC + c]` = (first constraint, count) of tile t
// in colour c. `colour.first` says whether λ starts from 0 (first iteration of a substep).

@group(0) @binding(4) var<storage, read> tiles: array<vec2<u32>>;

// Threads per tile: WebGPU's default limit of a workgroup's invocations, raised by kernel.rs to
// the device's own (up to 1024) where it allows more.
override TILE_THREADS: u32 = 256u;

@compute @workgroup_size(TILE_THREADS)
fn solve_tiles(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let head = tiles[0];
    let t = wid.x + wid.y * nwg.x;
    if t >= head.y {
        return;
    }
    for (var c = 0u; c < head.x; c++) {
        let r = tiles[1u + t * head.x + c];
        for (var k = lid; k < r.y; k += TILE_THREADS) {
            solve_one(r.x + k);
        }
        // The colour's corrections, written to storage, seen by every thread of the tile.
        storageBarrier();
    }
}

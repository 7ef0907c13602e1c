//! Peer benchmark: hanging cloth in `rapier-cloth-core` 0.3.0 (crates.io, "Engine-independent
//! CPU XPBD cloth solver").
//!
//! Scene (the crate's own README / `examples/hanging_cloth.rs` / `benches/realtime.rs`
//! "hanging" fixture, scaled to N x N):
//!   * `GridBuilder::new(N, N).origin(Vec3::Y).build()` -> 1 m x 1 m grid, spacing 1/(N-1) m,
//!     in the X/Z plane at y = 1 m (the builder's default plane), two triangles per quad.
//!     `--plane xy` instead builds it vertically (`axes(X, -Y)`, top row at y = 1 m).
//!   * `ClothMaterial::default()`: surface density 0.2 kg/m^2 (area-lumped masses),
//!     stretch compliance 0 (inextensible edges), bend compliance 1e-4, damping 0.1 /s.
//!   * `ClothMesh::new` creates one XPBD distance constraint per mesh edge and one dihedral
//!     bending constraint (hinge) per interior edge; these are the "constraints" counted.
//!   * Pins: `cloth.pin(i, rest)` for i in 0..N = the whole first grid row (z = 0, or the top
//!     row with --plane xy).
//!   * One `Solver::step(&mut cloth, h, gravity, &settings)` call = ONE substep of h seconds
//!     (the crate leaves the substep loop to the caller). A 1/60 s frame = `--substeps` (4)
//!     calls with h = 1/240 s; `SolverSettings::iterations` (8, also the crate default) =
//!     Gauss-Seidel sweeps over all constraints per substep, XPBD lambdas reset per substep.
//!   * Default features only (f32, no `implicit`, so no rayon): single-threaded by construction.
//!
//! Timing: `std::time::Instant` around each frame's substep calls, after `--warmup` frames;
//! the median of `--frames` timed frames is reported. Strain is computed outside the timed
//! region from the cloth's positions and the mesh's edge rest lengths.
//!
//! Run: cargo run --release -- --n 64 [--frames 60 --warmup 10 --substeps 4 --iterations 8]
//! Prints one JSON line on stdout; `--trace` adds per-frame strain/min_y/max_speed on stderr.

use rapier_cloth_core::{Cloth, ClothMaterial, GridBuilder, Real, Solver, SolverSettings, Vec3};
use std::time::Instant;

struct Args {
    n: usize,
    frames: usize,
    warmup: usize,
    substeps: usize,
    iterations: usize,
    vertical: bool,
    trace: bool,
}

fn parse_args() -> Args {
    let mut a = Args { n: 0, frames: 60, warmup: 10, substeps: 4, iterations: 8, vertical: false, trace: false };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("missing value for {k}"));
        match k.as_str() {
            "--n" => a.n = v().parse().expect("--n"),
            "--frames" => a.frames = v().parse().expect("--frames"),
            "--warmup" => a.warmup = v().parse().expect("--warmup"),
            "--substeps" => a.substeps = v().parse().expect("--substeps"),
            "--iterations" => a.iterations = v().parse().expect("--iterations"),
            "--plane" => {
                a.vertical = match v().as_str() {
                    "xz" => false,
                    "xy" => true,
                    p => panic!("--plane xz|xy, got {p}"),
                }
            }
            "--trace" => a.trace = true,
            "-h" | "--help" => {
                eprintln!("usage: --n N [--frames F] [--warmup W] [--substeps S] [--iterations I] [--plane xz|xy] [--trace]");
                std::process::exit(0);
            }
            _ => panic!("unknown argument {k}"),
        }
    }
    assert!(a.n >= 2, "--n N (N >= 2) is required");
    assert!(a.frames >= 1 && a.substeps >= 1 && a.iterations >= 1);
    a
}

/// max |len - rest| / rest over all mesh edges (two-sided); also the one-sided max stretch.
fn strain(cloth: &Cloth) -> (f64, f64) {
    let p = cloth.positions();
    let (mut abs_max, mut stretch_max) = (0.0f64, 0.0f64);
    for e in cloth.mesh().edges() {
        let len = p[e.vertices[0] as usize].distance(p[e.vertices[1] as usize]) as f64;
        let rest = e.rest_length as f64;
        let s = (len - rest) / rest;
        abs_max = abs_max.max(s.abs());
        stretch_max = stretch_max.max(s);
        if !s.is_finite() {
            abs_max = f64::NAN;
        }
    }
    (abs_max, stretch_max)
}

fn os_threads() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| l.strip_prefix("Threads:").and_then(|v| v.trim().parse().ok()))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse_args();
    let n = a.n;
    let mut grid = GridBuilder::new(n, n).size(1.0, 1.0).origin(Vec3::Y);
    if a.vertical {
        grid = grid.axes(Vec3::X, -Vec3::Y);
    }
    let mesh = grid.build()?;
    let material = ClothMaterial::default();
    let mut cloth = Cloth::new(mesh, material)?;
    for i in 0..n as u32 {
        cloth.pin(i, cloth.positions()[i as usize])?;
    }
    let edges = cloth.mesh().edges().len();
    let hinges = cloth.mesh().hinges().len();
    let stitches = cloth.mesh().stitches().len();
    let particles = cloth.positions().len();
    let pinned = cloth.pins().len();
    let constraints = edges + hinges + stitches;

    let mut solver = Solver::new();
    let settings = SolverSettings { iterations: a.iterations, ..SolverSettings::default() };
    let h: Real = 1.0 / (60.0 * a.substeps as Real);
    let gravity = Vec3::new(0.0, -9.81, 0.0);

    let mut times = Vec::with_capacity(a.frames);
    let mut error: Option<String> = None;
    let mut frames_done = 0usize;
    let mut peak_strain = 0.0f64;
    let mut peak_strain_frame = 0usize;
    let mut first_strain_over_1 = None; // first frame with max |strain| > 1 (edge doubled)
    let mut report_max_stretch_end = f64::NAN;
    let mut report_iterations = 0usize;
    'frames: for f in 0..a.warmup + a.frames {
        let t0 = Instant::now();
        for _ in 0..a.substeps {
            match solver.step(&mut cloth, h, gravity, &settings) {
                Ok(r) => {
                    report_max_stretch_end = r.max_stretch as f64;
                    report_iterations = r.iterations;
                }
                Err(e) => {
                    error = Some(format!("frame {f}: {e} ({e:?})"));
                    break 'frames;
                }
            }
        }
        let dt = t0.elapsed();
        if f >= a.warmup {
            times.push(dt.as_secs_f64());
        }
        frames_done += 1;
        let (s, _) = strain(&cloth);
        if a.trace {
            // Per-frame diagnostics on stderr (outside the timed region).
            let y = cloth.positions().iter().map(|v| v.y).fold(Real::INFINITY, Real::min);
            let v = cloth.velocities().iter().map(|v| v.length()).fold(0.0, Real::max);
            eprintln!("frame {f} ms {:.1} max_strain {s:.5} min_y {y:.4} max_speed {v:.3}", dt.as_secs_f64() * 1e3);
        }
        if !(s <= peak_strain) {
            peak_strain = s;
            peak_strain_frame = f;
        }
        if first_strain_over_1.is_none() && !(s <= 1.0) {
            first_strain_over_1 = Some(f);
        }
    }

    let nan = cloth.positions().iter().chain(cloth.velocities()).any(|v| !v.is_finite());
    let (strain_end, stretch_end) = strain(&cloth);
    let p = cloth.positions();
    let min_y = p.iter().map(|v| v.y).fold(Real::INFINITY, Real::min) as f64;
    let max_abs = p.iter().map(|v| v.abs().max_element()).fold(0.0, Real::max) as f64;
    let max_speed = cloth.velocities().iter().map(|v| v.length()).fold(0.0, Real::max) as f64;
    let pin_err = cloth
        .pins()
        .iter()
        .map(|(&i, t)| p[i as usize].distance(*t))
        .fold(0.0, Real::max) as f64;

    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let median_ms = if sorted.is_empty() {
        f64::NAN
    } else if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2] * 1e3
    } else {
        0.5 * (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) * 1e3
    };
    let min_ms = sorted.first().map_or(f64::NAN, |t| t * 1e3);
    let ns_ci = median_ms * 1e6 / (constraints * a.substeps * a.iterations) as f64;
    let num = |x: f64| if x.is_finite() { format!("{x}") } else { "null".into() };
    let r4 = |x: f64| num((x * 1e4).round() / 1e4);
    let sim_time = frames_done as f64 / 60.0;

    println!(
        concat!(
            "{{\"peer\":\"rapier-cloth-core\",\"version\":\"0.3.0\",\"n\":{},\"particles\":{},",
            "\"constraints\":{},\"stretch_constraints\":{},\"bending_constraints\":{},",
            "\"pinned\":{},\"tether_bounds\":{},\"plane\":\"{}\",",
            "\"substeps_per_frame\":{},\"substep_s\":{},\"iterations\":{},\"threads\":1,\"os_threads\":{},",
            "\"frames\":{},\"warmup\":{},\"frames_simulated\":{},\"sim_time_s\":{},",
            "\"ms_per_frame_median\":{},\"ms_per_frame_min\":{},\"ns_per_constraint_iteration\":{},",
            "\"max_edge_strain_end\":{},\"max_edge_stretch_end\":{},\"crate_report_max_stretch_end\":{},",
            "\"max_edge_strain_peak\":{},\"peak_frame\":{},\"first_frame_strain_over_1\":{},",
            "\"min_y\":{},\"max_abs_coord\":{},\"max_speed\":{},\"pin_error\":{},",
            "\"error\":{},\"nan\":{}}}"
        ),
        n,
        particles,
        constraints,
        edges + stitches,
        hinges,
        pinned,
        // Long-range attachment bounds the crate adds internally (stretch_compliance == 0 and
        // hard pins): one per free particle per iteration; not in `constraints`.
        if material.stretch_compliance == 0.0 && pinned > 0 { particles - pinned } else { 0 },
        if a.vertical { "xy" } else { "xz" },
        a.substeps,
        h,
        report_iterations.max(if error.is_none() { a.iterations } else { 0 }),
        os_threads().map_or("null".into(), |t| t.to_string()),
        times.len(),
        a.warmup,
        frames_done,
        r4(sim_time),
        r4(median_ms),
        r4(min_ms),
        num((ns_ci * 1e3).round() / 1e3),
        num(strain_end),
        num(stretch_end),
        num(report_max_stretch_end),
        num(peak_strain),
        peak_strain_frame,
        first_strain_over_1.map_or("null".into(), |f: usize| f.to_string()),
        num(min_y),
        num(max_abs),
        num(max_speed),
        num(pin_err),
        error.map_or("null".into(), |e| format!("{e:?}")),
        nan || !strain_end.is_finite(),
    );
    Ok(())
}

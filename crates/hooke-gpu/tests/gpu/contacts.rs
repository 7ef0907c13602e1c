//! Issue #10's contact tests on the GPU: the scenes of `hooke/tests/common/contact_cases.rs`
//! (shared with the CPU's `self_collision.rs` and `collision_matrix.rs`) run by the GPU's XPBD,
//! asserting the same physics as on the CPU, and on lavapipe, which rounds like the CPU, ending
//! with the CPU's positions to the last bit.

use crate::*;
use scenes::contact_cases as cases;

/// The GPU's XPBD for a scene.
fn gpu(ctx: &Arc<GpuContext>) -> impl Fn(&Arc<Model>, XpbdSettings) -> Box<dyn Solver> + '_ {
    move |model, s| Box::new(GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap())
}

/// The CPU's XPBD for a scene.
fn cpu(model: &Arc<Model>, s: XpbdSettings) -> Box<dyn Solver> {
    Box::new(XpbdSolver::new(model.clone(), s).unwrap())
}

/// Frames of the fold on the GPU (1.6 s; the CPU's test runs 2.5 s): lavapipe is slow.
const FOLD: usize = 96;
/// Frames of the overlapping layers, coincident cloths and ropes on a cloth on the GPU (1 s;
/// the CPU's tests run 1.5–2 s).
const SECOND: usize = 60;

/// On a device that rounds like the CPU, the GPU's final positions must be the CPU's bits.
fn same_bits(ctx: &Arc<GpuContext>, what: &str, gpu: &[Vec3], cpu: &[Vec3]) {
    let dx = max_diff(gpu, cpu);
    eprintln!("{what}: max |Δx| against the CPU {dx:.3e} m");
    if rounding(ctx).exact() {
        assert_eq!(dx, 0.0, "{what}: lavapipe rounds like the CPU, the positions must be the same");
    }
}

/// Every collider of the matrix (plane, sphere, capsule, turned box, mesh sphere and mesh box)
/// × self-collision off and on, under the GPU's XPBD: no particle ends deeper than 10 % of the
/// thickness (2 mm) in a collider after 40 frames, nor goes deeper during the last 20; on
/// lavapipe the CPU's bits.
#[test]
fn no_collider_is_penetrated_on_the_gpu() {
    let ctx = gpu_or_skip!();
    // 40 frames, 0.67 s (the CPU's collision matrix runs 2 s): the cloth lands within 0.25 s
    // (15 frames), and 12 drops of 2 s cost lavapipe nine minutes.
    const FRAMES: usize = 40;
    for (name, shape, top) in cases::matrix_shapes() {
        for self_collision in [false, true] {
            let (end, worst, x) = cases::drop_onto(shape.clone(), top, self_collision, FRAMES, &gpu(&ctx));
            eprintln!(
                "GPU {name:11} self-collision {self_collision:5}: penetration {end:.2e} m at the end, {worst:.2e} m at worst"
            );
            assert!(end < 0.002 && worst < 0.002, "{name}, self-collision {self_collision}: {end} / {worst} m");
            let (_, _, c) = cases::drop_onto(shape.clone(), top, self_collision, FRAMES, &cpu);
            same_bits(&ctx, &format!("{name}, self-collision {self_collision}"), &x, &c);
        }
    }
}

/// A cloth folded onto itself on the GPU: with self-collision on no two particles that are not
/// neighbours at rest end closer than 90 % of the thickness; with it off the folded half falls
/// through the other (closer than half the thickness).
#[test]
fn a_folded_cloth_keeps_its_layers_apart_on_the_gpu() {
    let ctx = gpu_or_skip!();
    let (on, speed, x) = cases::fold(true, FOLD, &gpu(&ctx));
    let (off, _, _) = cases::fold(false, FOLD, &gpu(&ctx));
    eprintln!(
        "GPU fold: closest {:.1} % of the thickness with self-collision, {:.1} % without; speed {speed:.2e} m/s",
        100.0 * on,
        100.0 * off
    );
    assert!(on >= 0.9, "layers {on} of the thickness apart");
    assert!(off < 0.5, "without self-collision the fold should interpenetrate ({off})");
    same_bits(&ctx, "fold", &x, &cases::fold(true, FOLD, &cpu).2);
}

/// The contact correction on the GPU is continuous across the contact distance: 0 outside,
/// the overlap inside, no jump larger than the change of distance plus 10⁻⁶ m.
#[test]
fn the_contact_correction_is_continuous_on_the_gpu() {
    let ctx = gpu_or_skip!();
    let g = cases::check_pair_correction_is_continuous(&gpu(&ctx));
    if rounding(&ctx).exact() {
        let c = cases::check_pair_correction_is_continuous(&cpu);
        assert_eq!(g, c, "lavapipe: the CPU's corrections");
    }
}

/// Two layers resting on each other on the ground come to rest on the GPU (every particle
/// slower than 10⁻³ m/s after 0.5 s) and stay 90 % of the thickness apart.
#[test]
fn two_resting_layers_stay_at_rest_on_the_gpu() {
    let ctx = gpu_or_skip!();
    let (fastest, closest, x) = cases::resting_layers(&gpu(&ctx));
    eprintln!("GPU resting layers: fastest after 0.5 s {fastest:.2e} m/s, closest {closest:.4} t");
    assert!(fastest < 1e-3, "a resting layer moves at {fastest} m/s");
    assert!(closest >= 0.9, "layers at {closest} of the thickness");
    same_bits(&ctx, "resting layers", &x, &cases::resting_layers(&cpu).2);
}

/// Layers built overlapping separate on the GPU, with self-collision on from the start or
/// switched on mid-run, to 90 % of the thickness and never faster than 1.5× the
/// depenetration speed; two cloths built on each other separate too.
#[test]
fn overlapping_layers_relax_on_the_gpu() {
    let ctx = gpu_or_skip!();
    for switch_at in [None, Some(30)] {
        let (closest, fastest, x) = cases::overlapping_layers(switch_at, SECOND, &gpu(&ctx));
        eprintln!(
            "GPU overlap relaxed (switched on at {switch_at:?}): closest {closest:.3} t, fastest {fastest:.3} m/s"
        );
        assert!(closest >= 0.9, "layers still at {closest} of the thickness");
        assert!(fastest <= 1.5 * hooke::collision::DEPENETRATION_SPEED, "a particle reached {fastest} m/s");
        same_bits(&ctx, "overlapping layers", &x, &cases::overlapping_layers(switch_at, SECOND, &cpu).2);
    }
    let (closest, x) = cases::coincident_cloths(SECOND, &gpu(&ctx));
    eprintln!("GPU coincident cloths: closest {closest:.3} t");
    assert!(closest >= 0.9, "coincident cloths still at {closest} of the thickness");
    same_bits(&ctx, "coincident cloths", &x, &cases::coincident_cloths(SECOND, &cpu).1);
}

/// Ropes dropped crosswise onto a cloth rest on it and on each other on the GPU (cloth–rope and
/// rope–rope contact through the same contacts); with self-collision off they fall through.
#[test]
fn ropes_rest_on_a_cloth_on_the_gpu() {
    let ctx = gpu_or_skip!();
    let (on, closest, x) = cases::ropes_on_cloth(true, SECOND, &gpu(&ctx));
    let (off, _, _) = cases::ropes_on_cloth(false, SECOND, &gpu(&ctx));
    eprintln!("GPU ropes on a cloth: {on:.4} m above the cloth's lowest point, closest {closest:.3}; off {off:.3} m");
    assert!(on > 0.0 && closest >= 0.9, "the ropes sank into the cloth or each other: {on} m, {closest}");
    assert!(off < -0.5, "without self-collision the ropes should fall through ({off} m)");
    same_bits(&ctx, "ropes on a cloth", &x, &cases::ropes_on_cloth(true, SECOND, &cpu).2);
}

/// A box accelerating sideways carries a patch below μₛ·g and lets it slip above, the patch
/// then accelerating at μₖ·g (within 2 %), on the GPU.
#[test]
fn a_moving_box_carries_a_cloth_below_static_friction_on_the_gpu() {
    let ctx = gpu_or_skip!();
    let g = 9.81f32;
    let (mu_s, mu_k) = (0.4f32, 0.3f32);
    let (below, x) = cases::slip(0.75 * mu_s * g, &gpu(&ctx));
    let a = 1.5 * mu_s * g;
    let (above, _) = cases::slip(a, &gpu(&ctx));
    let expected = 0.5 * (a - mu_k * g);
    eprintln!("GPU slip in 1 s: {below:.2e} m at 0.75 μₛg; {above:.4} m at 1.5 μₛg (Coulomb: {expected:.4} m)");
    assert!(below.abs() < 1e-3, "the patch slipped {below} m below the static threshold");
    assert!((above - expected).abs() < 0.02 * expected, "slipped {above} m, Coulomb says {expected} m");
    same_bits(&ctx, "slip", &x, &cases::slip(0.75 * mu_s * g, &cpu).1);
}

/// A cloth gliding 2 cm above a plane at 1 000 m/s keeps its speed on the GPU too (the swept
/// contact samples a grazing path once its sphere tracing runs out of steps), with the CPU's
/// bits on lavapipe.
#[test]
fn a_cloth_gliding_past_a_plane_keeps_its_speed_on_the_gpu() {
    let ctx = gpu_or_skip!();
    let (slowest, contacts, x) = cases::glide_past_plane(&gpu(&ctx));
    eprintln!("GPU gliding 2 cm above a plane: slowest particle {slowest} m/s, {contacts} contacts");
    assert_eq!(contacts, 0);
    assert!(slowest > 999.0, "the plane held a particle back to {slowest} m/s");
    same_bits(&ctx, "glide", &x, &cases::glide_past_plane(&cpu).2);
}

/// A cloth thrown at 20 m/s at a 1 mm board does not pass through on the GPU, face on and
/// tilted 30°, at 5, 10 and 20 substeps.
#[test]
fn a_thrown_cloth_does_not_pass_through_a_board_on_the_gpu() {
    let ctx = gpu_or_skip!();
    for tilt in [0.0f32, 30.0] {
        for substeps in [5u32, 10, 20] {
            let (lowest, x) = cases::thrown_at_board(tilt, substeps, &gpu(&ctx));
            eprintln!(
                "GPU tilt {tilt}°, {substeps} substeps: lowest particle {lowest:.4} m from the board's mid-plane"
            );
            assert!(lowest > 0.0, "tilt {tilt}°, {substeps} substeps: a particle passed through ({lowest} m)");
            same_bits(
                &ctx,
                &format!("thrown, tilt {tilt}, {substeps} substeps"),
                &x,
                &cases::thrown_at_board(tilt, substeps, &cpu).1,
            );
        }
    }
}

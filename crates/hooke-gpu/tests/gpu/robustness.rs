//! Blow-ups, bad input and state round trips.

use crate::*;

/// A blow-up is caught and reported, and with per-frame checks the state stays at the start
/// of the failed frame.
#[test]
fn blow_up_is_reported_not_returned_as_garbage() {
    let ctx = gpu_or_skip!();
    let (model, _) = contact_free_scene();
    let mut control = Control::new();
    control.pin_to(3, Vec3::splat(3e38)); // drives particle 3 to an infinite velocity
    // Per-frame check (the default): step fails, state restored.
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
    let before = state_of(&mut gpu);
    let err = gpu.step(&control, 1.0 / 60.0).unwrap_err();
    assert!(matches!(err, SolverError::BlowUp { .. }), "{err}");
    eprintln!("reported: {err}");
    let after = state_of(&mut gpu);
    assert_eq!(before, after);
    gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
    // Without health checks: the step is only queued; the next read reports it.
    let s = GpuSettings { xpbd: settings(), health_interval: 0, ..GpuSettings::default() };
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    gpu.step(&control, 1.0 / 60.0).unwrap();
    let mut st = State::from_model(&model);
    let err = gpu.try_read_state(&mut st).unwrap_err();
    assert!(matches!(err, SolverError::BlowUp { .. }), "{err}");
    assert!(gpu.step(&Control::new(), 1.0 / 60.0).is_err(), "a broken state must not be stepped on");
    // Loading a good state clears it.
    gpu.write_state(&State::from_model(&model)).unwrap();
    gpu.step(&Control::new(), 1.0 / 60.0).unwrap();
    assert!(gpu.try_read_state(&mut st).is_ok());
}

/// A structural spring stretched beyond `max_strain` is a blow-up on both backends, reported
/// with the same constraint and message.
#[test]
fn runaway_strain_is_reported_like_the_cpu() {
    let ctx = gpu_or_skip!();
    let mut b = ModelBuilder::new();
    b.add_rope(&Rope::straight("rope", Vec3::ZERO, Vec3::new(1.0, 0.0, 0.0), 10)).unwrap();
    let model = Arc::new(b.finalize().unwrap());
    let mut control = Control::new();
    control.pin(0);
    control.pin_to(9, Vec3::new(3.0, 0.0, 0.0)); // 1 m to 3 m in one frame
    // Without tethers: with them, the far pin's tethers drag the rope along and the speed
    // limit trips first (on both backends alike).
    let s = XpbdSettings { max_strain: 0.2, tethers: false, ..settings() };
    let mut cpu = XpbdSolver::new(model.clone(), s).unwrap();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), s).unwrap();
    let (ec, eg) = (cpu.step(&control, 1.0 / 60.0).unwrap_err(), gpu.step(&control, 1.0 / 60.0).unwrap_err());
    eprintln!("cpu: {ec}\ngpu: {eg}");
    assert!(matches!(eg, SolverError::BlowUp { constraint: Some(_), .. }), "{eg}");
    assert_eq!(ec, eg);
}

/// Errors of the solver contract, as on the CPU.
#[test]
fn invalid_inputs_are_rejected() {
    let ctx = gpu_or_skip!();
    let (model, _) = contact_free_scene();
    let bad = XpbdSettings { substeps: 0, ..settings() };
    assert!(GpuXpbdSolver::new(ctx.clone(), model.clone(), bad).is_err());
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    assert!(matches!(gpu.step(&Control::new(), 0.0), Err(SolverError::InvalidTimeStep(_))));
    let mut c = Control::new();
    c.pin(1_000_000);
    assert!(matches!(gpu.step(&c, 1.0 / 60.0), Err(SolverError::InvalidPin { .. })));
    let mut st = State::from_model(&model);
    st.particle_position.pop();
    assert!(matches!(gpu.write_state(&st), Err(SolverError::StateMismatch(_))));
}

/// write_state then read_state round-trips exactly.
#[test]
fn state_round_trips() {
    let ctx = gpu_or_skip!();
    let (model, _) = contact_free_scene();
    let mut gpu = GpuXpbdSolver::new(ctx.clone(), model.clone(), settings()).unwrap();
    let mut st = State::from_model(&model);
    st.particle_velocity[5] = Vec3::new(1.0, 2.0, 3.0);
    st.particle_position[7] += Vec3::new(0.25, 0.0, 0.0);
    st.time = 2.5;
    gpu.write_state(&st).unwrap();
    assert_eq!(state_of(&mut gpu), st);
    assert_eq!(gpu.time(), 2.5);
}

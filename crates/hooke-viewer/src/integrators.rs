//! The `integrators` demo (article §2.3): one harmonic oscillator — a mass m on a spring of
//! stiffness k from a pinned point, released 10 cm from rest, no gravity, no damping — run
//! side by side by hooke's four force-based integrators (the engine's own `ForceSolver`, one
//! step of Δt per frame), with live plots of the displacement and of the energy
//! ½mv² + ½k(L − L₀)². Forward Euler's energy grows by (1 + ω²Δt²) per step, implicit Euler's
//! shrinks by its inverse, symplectic Euler's and Verlet's stay bounded; past Δt = 2/ω the
//! explicit ones blow up (the stability check is off here, so that it shows).

use anyhow::Result;
use eframe::egui;
use glam::Vec3;
use hooke::{
    Bending, Control, ForceSettings, ForceSolver, Integrator, ModelBuilder, Rope, RopeMaterial, Solver, State,
};
use std::sync::Arc;

/// Rest length of the spring (m).
const REST: f32 = 1.0;
/// Initial stretch (m).
const AMPLITUDE: f32 = 0.1;
/// Mass of the moving particle (kg).
const MASS: f32 = 1.0;
/// Samples kept per plot line.
const SAMPLES: usize = 3000;

/// One integrator's run and its history.
pub struct Run {
    /// The integrator.
    pub integrator: Integrator,
    solver: ForceSolver,
    control: Control,
    /// (t, displacement from rest) samples (s, m).
    pub displacement: Vec<[f64; 2]>,
    /// (t, energy) samples (s, J).
    pub energy: Vec<[f64; 2]>,
    /// Why the run stopped (a blow-up), if it did.
    pub stopped: Option<String>,
}

/// The demo's state: the four runs with the same k and Δt.
pub struct IntegratorsDemo {
    /// Spring stiffness k (N/m).
    pub stiffness: f32,
    /// Time step Δt (s).
    pub dt: f32,
    /// The runs, in the order forward Euler, symplectic Euler, Verlet, implicit Euler.
    pub runs: Vec<Run>,
    /// Steps taken since the start.
    pub steps: u64,
}

impl IntegratorsDemo {
    /// The four runs of an oscillator of stiffness `stiffness` (N/m) stepped by `dt` (s).
    ///
    /// # Errors
    /// For a non-positive or non-finite stiffness or step.
    pub fn new(stiffness: f32, dt: f32) -> Result<IntegratorsDemo> {
        anyhow::ensure!(stiffness.is_finite() && stiffness > 0.0, "k must be finite and > 0, got {stiffness}");
        anyhow::ensure!(dt.is_finite() && dt > 0.0, "Δt must be finite and > 0, got {dt}");
        let mut rope = Rope::straight("spring", Vec3::ZERO, Vec3::X * REST, 2);
        rope.bending = Bending::None;
        rope.material = RopeMaterial {
            stretch_stiffness: stiffness * REST, // k = EA/L
            compression_stiffness: stiffness * REST,
            damping: 0.0,
            ..RopeMaterial::default()
        };
        let mut b = ModelBuilder::new();
        b.add_rope(&rope)?;
        b.set_gravity(Vec3::ZERO)?;
        b.set_particle_mass(1, MASS)?;
        let model = Arc::new(b.finalize()?);
        let mut runs = Vec::new();
        for integrator in Integrator::ALL {
            let settings = ForceSettings {
                integrator,
                substeps: 1,
                air_damping: 0.0,
                check_stability: false,
                max_speed: 1e4,
                ..ForceSettings::default()
            };
            let mut solver = ForceSolver::new(model.clone(), settings)?;
            let mut state = State::from_model(&model);
            state.particle_position[1].x += AMPLITUDE;
            solver.write_state(&state)?;
            let mut control = Control::new();
            control.pin(0);
            let mut run =
                Run { integrator, solver, control, displacement: Vec::new(), energy: Vec::new(), stopped: None };
            run.sample(stiffness);
            runs.push(run);
        }
        Ok(IntegratorsDemo { stiffness, dt, runs, steps: 0 })
    }

    /// One step of Δt for every run still going.
    pub fn step(&mut self) {
        for run in &mut self.runs {
            if run.stopped.is_some() {
                continue;
            }
            match run.solver.step(&run.control, self.dt) {
                Ok(_) => run.sample(self.stiffness),
                Err(e) => run.stopped = Some(format!("blew up at t = {:.2} s: {e}", run.solver.time())),
            }
        }
        self.steps += 1;
    }

    /// The energy of `integrator`'s run now over its energy at the start (½k·(10 cm)²).
    pub fn energy_ratio(&self, integrator: Integrator) -> Option<f64> {
        let run = self.runs.iter().find(|r| r.integrator == integrator)?;
        Some(run.energy.last()?[1] / run.energy.first()?[1])
    }

    /// The sliders (k, Δt, with ωΔt shown) and the two plots.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let (mut k, mut dt) = (self.stiffness, self.dt);
        let omega = (k / MASS).sqrt();
        ui.horizontal(|ui| {
            ui.add(egui::Slider::new(&mut k, 1.0..=1e4).logarithmic(true).text("k (N/m)"));
            ui.add(egui::Slider::new(&mut dt, 1e-4..=0.5).logarithmic(true).text("Δt (s)"));
            ui.label(format!("ωΔt = {:.3} (explicit limit 2)", omega * dt));
        });
        if (k, dt) != (self.stiffness, self.dt)
            && let Ok(fresh) = IntegratorsDemo::new(k, dt)
        {
            *self = fresh;
        }
        for run in &self.runs {
            if let Some(why) = &run.stopped {
                ui.colored_label(egui::Color32::RED, format!("{}: {why}", run.integrator.name()));
            }
        }
        let height = (ui.available_height() * 0.5 - 8.0).max(60.0);
        for (title, pick) in [("displacement (m)", 0usize), ("energy (J)", 1)] {
            ui.label(title);
            egui_plot::Plot::new(title).height(height).legend(egui_plot::Legend::default()).show(ui, |plot| {
                for run in &self.runs {
                    let points = if pick == 0 { &run.displacement } else { &run.energy };
                    plot.line(egui_plot::Line::new(run.integrator.name(), points.clone()));
                }
            });
        }
    }
}

impl Run {
    fn sample(&mut self, stiffness: f32) {
        let mut s = State::from_model(self.solver.model());
        self.solver.read_state(&mut s);
        let stretch = ((s.particle_position[1] - s.particle_position[0]).length() - REST) as f64;
        let v2 = s.particle_velocity[1].length_squared() as f64;
        let e = 0.5 * MASS as f64 * v2 + 0.5 * stiffness as f64 * stretch * stretch;
        let t = self.solver.time();
        for (series, value) in [(&mut self.displacement, stretch), (&mut self.energy, e)] {
            if series.len() == SAMPLES {
                series.remove(0);
            }
            series.push([t, value]);
        }
    }
}

//! `hooke compare integrators`: the article's Euler-vs-Verlet demo (§2.3) made real — every
//! integrator on a harmonic oscillator and on a small hanging cloth, written as CSV and PNG.

use anyhow::{Context, Result, bail};
use glam::Vec3;
use hooke::solver::force_based::{ForceSettings, ForceSolver, Integrator};
use hooke::{ClothGrid, Control, Model, ModelBuilder, Rope, RopeMaterial, Solver, State, XpbdSettings, XpbdSolver};
use plotters::prelude::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most oscillator steps (`--steps`): each method keeps a row per step.
const MAX_STEPS: usize = 1_000_000;

/// Largest ωΔt (`--dt` × √`--k`) the comparison takes: 16 periods of the oscillator per step,
/// fifty times the stability limit of symplectic Euler and Verlet (ωΔt = 2; forward Euler's
/// swing grows at any step).
const MAX_OMEGA_DT: f32 = 100.0;

/// Arguments of `hooke compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// What to compare: `integrators`.
    what: String,
    /// Output folder.
    #[arg(long, default_value = "out/compare")]
    out: PathBuf,
    /// Oscillator time step Δt (s).
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    dt: f32,
    /// Oscillator spring stiffness k (N/m); the mass is 1 kg, so ω = √k.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    k: f32,
    /// Oscillator steps.
    #[arg(long, default_value_t = 200, allow_negative_numbers = true)]
    steps: usize,
}

/// Makes a solver for a model with a number of substeps per step.
type Factory = Box<dyn Fn(Arc<Model>, u32) -> Result<Box<dyn Solver>>>;

/// A named series of (time s, first value, second value) rows.
type Series<'a> = (&'a str, Vec<(f64, f64, f64)>);

/// One integrator under comparison: a name and a solver factory.
struct Entry {
    name: &'static str,
    make: Factory,
}

fn entries() -> Vec<Entry> {
    let force = |integrator: Integrator| -> Factory {
        Box::new(move |m, substeps| {
            // The stability check stays off: showing what happens beyond the limit is the point.
            let s = ForceSettings {
                integrator,
                substeps,
                air_damping: 0.0,
                parallel: false,
                check_stability: false,
                ..ForceSettings::default()
            };
            Ok(Box::new(ForceSolver::new(m, s)?) as Box<dyn Solver>)
        })
    };
    vec![
        Entry { name: "forward-euler", make: force(Integrator::ForwardEuler) },
        Entry { name: "symplectic-euler", make: force(Integrator::SymplecticEuler) },
        Entry { name: "verlet", make: force(Integrator::Verlet) },
        Entry { name: "implicit-euler", make: force(Integrator::ImplicitEuler) },
        Entry {
            name: "xpbd",
            make: Box::new(|m, substeps| {
                let s = XpbdSettings {
                    substeps,
                    // The step under comparison, fixed (no tension limit).
                    max_substeps: substeps,
                    iterations: 1,
                    air_damping: 0.0,
                    parallel: false,
                    // The integrator alone: a tether would hold the oscillator's stretched spring
                    // at its rest length from the first step.
                    tethers: false,
                    ..XpbdSettings::default()
                };
                Ok(Box::new(XpbdSolver::new(m, s)?) as Box<dyn Solver>)
            }),
        },
    ]
}

pub fn compare(args: CompareArgs) -> Result<()> {
    if args.what != "integrators" {
        bail!("unknown comparison {:?} (available: integrators)", args.what);
    }
    // The solvers' own floor: a shorter step is refused by every one of them.
    if !(args.dt.is_finite() && args.dt >= hooke::solver::MIN_FRAME_DT) {
        bail!("--dt must be finite and at least {:e} s, got {}", hooke::solver::MIN_FRAME_DT, args.dt);
    }
    if !(args.k.is_finite() && args.k > 0.0 && args.k <= 1e30) {
        bail!("--k must be finite, > 0 and at most 1e30 N/m, got {}", args.k);
    }
    // Past ωΔt = 100 a step spans 16 periods: no method's curve says anything about the
    // oscillator (the explicit ones blow up within a few steps, the implicit one is nearly at
    // rest after its first), and a huge Δt put the time axis at 1e32 s.
    let omega_dt = args.k.sqrt() * args.dt;
    if omega_dt > MAX_OMEGA_DT {
        bail!(
            "--dt {} s with --k {} N/m gives ωΔt = √k·Δt = {omega_dt:.4e}, more than {MAX_OMEGA_DT}: a step would \
             span {:.3e} periods of the oscillator; use --dt at most {:.4e} s for this --k",
            args.dt,
            args.k,
            omega_dt / std::f32::consts::TAU,
            MAX_OMEGA_DT / args.k.sqrt()
        );
    }
    if args.steps == 0 || args.steps > MAX_STEPS {
        bail!("--steps must be between 1 and {MAX_STEPS}, got {}", args.steps);
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    register_font();
    let list = entries();

    // 1. Harmonic oscillator: a 1 kg particle on a spring of rest length 100 m to a pinned
    //    particle (long enough that even forward Euler's growing swing stays far from the pin),
    //    released 1 m from rest (x₀ = 1, v₀ = 0), no gravity. The rope's EA/L is k for EA = 100k.
    let omega = args.k.sqrt();
    let mut b = ModelBuilder::new();
    const REST: f32 = 100.0;
    let mut rope = Rope::straight("oscillator", Vec3::ZERO, Vec3::X * REST, 2);
    rope.bending = hooke::Bending::None;
    let ea = args.k * REST;
    rope.material =
        RopeMaterial { stretch_stiffness: ea, compression_stiffness: ea, damping: 0.0, ..RopeMaterial::default() };
    let spring = || format!("--k {} N/m (the spring of a rope 100 m long, EA = {ea} N)", args.k);
    b.add_rope(&rope).with_context(spring)?;
    b.set_gravity(Vec3::ZERO)?;
    b.set_particle_mass(1, 1.0)?;
    let model = Arc::new(b.finalize().with_context(spring)?);
    let mut control = Control::new();
    control.pin(0);
    let mut series: Vec<Series> = Vec::new();
    // Why each method stopped early, if it did (a blow-up, or a step it refused).
    let mut stopped: Vec<Option<String>> = Vec::new();
    for e in &list {
        let mut s = (e.make)(model.clone(), 1).with_context(|| format!("{} at --dt {} s", e.name, args.dt))?;
        let mut st = State::from_model(&model);
        st.particle_position[1] = Vec3::new(REST + 1.0, 0.0, 0.0);
        s.write_state(&st)?;
        let mut rows = vec![(0.0, 1.0, 0.5 * args.k as f64)];
        let mut why = None;
        for _ in 0..args.steps {
            if let Err(e) = s.step(&control, args.dt) {
                why = Some(e.to_string().lines().next().unwrap_or_default().to_string());
                break;
            }
            s.read_state(&mut st);
            let x = (st.particle_position[1].x - REST) as f64;
            let v = st.particle_velocity[1].x as f64;
            rows.push((s.time(), x, 0.5 * v * v + 0.5 * args.k as f64 * x * x));
        }
        series.push((e.name, rows));
        stopped.push(why);
    }
    let csv = args.out.join("oscillator.csv");
    write_csv(&csv, &series, &["x_m", "energy_j"])?;
    let png = args.out.join("oscillator.png");
    let title =
        format!("harmonic oscillator: k = {} N/m, m = 1 kg, Δt = {} s, ωΔt = {:.3}", args.k, args.dt, omega * args.dt);
    plot(&png, &title, &series, "position x (m)", "energy (J, log)")?;
    println!("oscillator (ωΔt = {:.3}), energy after {} steps / initial energy:", omega * args.dt, args.steps);
    for ((name, rows), why) in series.iter().zip(&stopped) {
        let last = rows.last().unwrap();
        let why = why.as_deref().unwrap_or("stopped");
        if rows.len() > args.steps {
            println!("  {name:>17}: {:.4e}", last.2 / rows[0].2);
        } else if rows.len() == 1 {
            println!("  {name:>17}: stopped in its first step: {why}");
        } else {
            println!(
                "  {name:>17}: stopped after t = {:.3} s (energy {:.4e} × the initial at its last step): {why}",
                last.0,
                last.2 / rows[0].2
            );
        }
    }

    // 2. A soft 10 × 10 cloth, 0.45 m, pinned along its top edge, 2 s at 60 fps. K = 50 N/m
    //    keeps ω·h ≈ 0.3 at 16 substeps: symplectic Euler and Verlet are stable there, forward
    //    Euler is not.
    let mut b = ModelBuilder::new();
    let mut g = ClothGrid::new("cloth", 10, 10, 0.05);
    g.rotation = glam::Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    g.center = Vec3::new(0.0, 1.0, 0.0);
    g.material.stretch_stiffness = 50.0;
    g.material.compression_stiffness = 50.0;
    g.material.shear_stiffness = 50.0;
    g.material.bend_stiffness = 0.05;
    let id = b.add_cloth_grid(&g)?;
    let cloth = Arc::new(b.finalize()?);
    let mut control = Control::new();
    for c in 0..10 {
        control.pin(cloth.bodies()[id.0].grid_index(0, c).unwrap());
    }
    let mut series = Vec::new();
    for e in &list {
        let substeps = if e.name == "implicit-euler" { 1 } else { 16 };
        let mut s = (e.make)(cloth.clone(), substeps)?;
        let mut st = State::from_model(&cloth);
        let mut rows = Vec::new();
        for _ in 0..120 {
            if s.step(&control, 1.0 / 60.0).is_err() {
                break;
            }
            s.read_state(&mut st);
            let d = hooke::Diagnostics::measure(&cloth, &st.particle_position, &st.particle_velocity, s.time(), &[]);
            let bottom = cloth.bodies()[id.0].grid_index(9, 5).unwrap() as usize;
            let sag = (cloth.particle_position()[bottom].y - st.particle_position[bottom].y) as f64;
            rows.push((s.time(), sag, d.kinetic_energy));
        }
        series.push((e.name, rows));
    }
    let csv2 = args.out.join("cloth.csv");
    write_csv(&csv2, &series, &["sag_m", "kinetic_energy_j"])?;
    let png2 = args.out.join("cloth.png");
    plot(
        &png2,
        "soft hanging cloth 10×10, K = 50 N/m, 16 substeps/frame (implicit Euler: 1)",
        &series,
        "sag of the bottom edge (m)",
        "kinetic energy (J, log)",
    )?;
    println!("hanging cloth, sag of the bottom edge after 2 s:");
    for (name, rows) in &series {
        match rows.last() {
            Some(r) if rows.len() == 120 => println!("  {name:>17}: {:.4} m", r.1),
            Some(r) => println!("  {name:>17}: blew up at t = {:.3} s", r.0),
            None => println!("  {name:>17}: blew up in the first frame"),
        }
    }
    for p in [&csv, &png, &csv2, &png2] {
        println!("wrote {}", p.display());
    }
    Ok(())
}

/// Columns: time, then for each series its two values; rows padded with empty cells where a
/// series stopped early (it blew up).
fn write_csv(path: &Path, series: &[Series], cols: &[&str; 2]) -> Result<()> {
    let tmp = path.with_extension("csv.tmp");
    let mut f =
        std::io::BufWriter::new(std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?);
    write!(f, "time_s")?;
    for (name, _) in series {
        write!(f, ",{name}_{},{name}_{}", cols[0], cols[1])?;
    }
    writeln!(f)?;
    let n = series.iter().map(|s| s.1.len()).max().unwrap_or(0);
    for k in 0..n {
        let t = series.iter().find_map(|s| s.1.get(k)).map_or(0.0, |r| r.0);
        write!(f, "{t}")?;
        for (_, rows) in series {
            match rows.get(k) {
                Some(r) => write!(f, ",{},{}", r.1, r.2)?,
                None => write!(f, ",,")?,
            }
        }
        writeln!(f)?;
    }
    f.into_inner().map_err(|e| e.into_error())?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// Makes a TrueType font available to the plots (ab_glyph, no system font libraries): the
/// first of a few common paths that exists. Without one, plots are drawn without text.
fn register_font() -> bool {
    const PATHS: [&str; 3] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        "/System/Library/Fonts/Supplemental/Arial.ttf",
    ];
    for p in PATHS {
        if let Ok(bytes) = std::fs::read(p) {
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return true;
            }
        }
    }
    eprintln!("note: no TrueType font found (install fonts-dejavu-core); plots have no labels");
    false
}

/// Two stacked panels: the first value over time (linear) and the second (log scale, shifted
/// to be positive).
fn plot(path: &Path, title: &str, series: &[Series], top: &str, bottom: &str) -> Result<()> {
    let tmp = path.with_file_name(format!(".{}.tmp.png", path.file_stem().unwrap().to_string_lossy()));
    {
        let root = BitMapBackend::new(&tmp, (1100, 900)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 22))?;
        let (a, b) = root.split_vertically(440);
        let t_max = series.iter().flat_map(|s| s.1.iter().map(|r| r.0)).fold(0.0f64, f64::max).max(1e-9);
        let finite = |v: f64| v.is_finite();
        let (lo, hi) = series
            .iter()
            .flat_map(|s| s.1.iter().map(|r| r.1))
            .filter(|v| finite(*v))
            .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(v), h.max(v)));
        let (lo, hi) = if lo < hi { (lo, hi) } else { (-1.0, 1.0) };
        let clip = |v: f64| v.clamp(lo, hi);
        let colours = [RED, BLUE, GREEN, MAGENTA, BLACK];
        let mut c = ChartBuilder::on(&a)
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, lo..hi)?;
        c.configure_mesh().x_desc("time (s)").y_desc(top).draw()?;
        for (k, (name, rows)) in series.iter().enumerate() {
            let col = colours[k % colours.len()];
            c.draw_series(LineSeries::new(rows.iter().map(|r| (r.0, clip(r.1))), col.stroke_width(2)))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        }
        c.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
        // Second values (energies): shifted to be positive if needed, then log scale.
        let e_min = series.iter().flat_map(|s| s.1.iter().map(|r| r.2)).filter(|v| finite(*v)).fold(f64::MAX, f64::min);
        let shift = if e_min <= 0.0 { -e_min + 1e-6 } else { 0.0 };
        let e_hi =
            series.iter().flat_map(|s| s.1.iter().map(|r| r.2 + shift)).filter(|v| finite(*v)).fold(1e-6, f64::max);
        let e_lo = series
            .iter()
            .flat_map(|s| s.1.iter().map(|r| r.2 + shift))
            .filter(|v| finite(*v) && *v > 0.0)
            .fold(f64::MAX, f64::min)
            .min(e_hi / 10.0);
        let mut c = ChartBuilder::on(&b)
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, (e_lo..e_hi * 1.5).log_scale())?;
        c.configure_mesh().x_desc("time (s)").y_desc(bottom).y_label_formatter(&|v| format!("{v:.0e}")).draw()?;
        for (k, (_, rows)) in series.iter().enumerate() {
            let col = colours[k % colours.len()];
            c.draw_series(LineSeries::new(
                rows.iter().filter(|r| finite(r.2)).map(|r| (r.0, (r.2 + shift).clamp(e_lo, e_hi * 1.5))),
                col.stroke_width(2),
            ))?;
        }
        root.present()?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

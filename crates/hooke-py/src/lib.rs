//! # hooke for Python
//!
//! The `hooke` Python module (PyO3, abi3 from Python 3.9; built by maturin:
//! `pip install ./crates/hooke-py`): cloth and rope simulations built from scene files or from
//! NumPy arrays, stepped from Python, their positions read into NumPy; scenes baked to caches;
//! batches of samples run shard by shard (issue #13, item 4). The type hints and the
//! documentation of every function, with shapes and units, are in `hooke.pyi`.
//!
//! Everything goes through the code the `hooke` command runs — the scene loader
//! ([`hooke_io::scene`]), the solver factory, the bake loop and the batch runner of
//! [`hooke_sim`] — so a scene gives the same positions here as on the command line, bit for
//! bit. Like the command line, the simulation runs on a thread pool whose threads flush
//! subnormal floats to zero ([`hooke::fp`]); the interpreter's own thread is left as it is.
//!
//! Errors: bad input (an array of the wrong shape, a NaN, a scene key out of range) raises
//! `ValueError` naming the argument or key; a file that cannot be read or written `OSError`;
//! a simulation that blows up `hooke.SimulationError` (a `RuntimeError`) naming the particle.

use glam::{Quat, Vec2, Vec3};
use hooke::collision::Pose;
use hooke::{Control, Solver, State};
use hooke_io::scene::{Meshes, Scene};
use hooke_sim::{Backend, SolverOptions, Tearing};
use numpy::{IntoPyArray, PyArray2, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;

pyo3::create_exception!(hooke, SimulationError, PyRuntimeError, "A simulation that blew up or could not go on.");

/// The pool every simulation runs on: its threads flush subnormals, as the command line's do.
fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("hooke-{i}"))
            .start_handler(|_| {
                hooke::fp::flush_subnormals();
            })
            .build()
            .expect("a thread pool can be built")
    })
}

/// The pool a batch of several jobs (and no packs of worlds) runs its shard from. Its samples run on threads of their
/// own (one sample each, not in parallel inside), and the thread that waits for them is kept
/// off [`pool`]: a thread of that pool waiting there for the whole batch would hold up every
/// simulation's colour sweeps, which use all of its threads at once
/// (`hooke::solver::xpbd`'s team of threads). One thread, flushing subnormals as [`pool`]'s do.
fn batch_pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|i| format!("hooke-batch-{i}"))
            .start_handler(|_| {
                hooke::fp::flush_subnormals();
            })
            .build()
            .expect("a thread pool can be built")
    })
}

/// Memory a model may use (bytes).
const MEMORY_LIMIT: u64 = hooke::model::DEFAULT_MEMORY_LIMIT;

fn backend(name: &str) -> PyResult<Backend> {
    match name {
        "cpu" => Ok(Backend::Cpu),
        "gpu" => Ok(Backend::Gpu),
        other => Err(PyValueError::new_err(format!("backend: expected \"cpu\" or \"gpu\", got {other:?}"))),
    }
}

/// How deep a scene value may nest (lists in lists, dicts in dicts): far beyond any scene key,
/// and far below what would overflow a stack.
const MAX_DEPTH: usize = 32;

/// A Python value as a TOML value; `key` names it in errors.
fn to_toml(obj: &Bound<'_, PyAny>, key: &str) -> PyResult<toml::Value> {
    to_toml_at(obj, key, 0)
}

fn to_toml_at(obj: &Bound<'_, PyAny>, key: &str, depth: usize) -> PyResult<toml::Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{key}: nested more than {MAX_DEPTH} levels deep (a list or dict that holds itself?)"
        )));
    }
    let to_toml = |obj: &Bound<'_, PyAny>, key: &str| to_toml_at(obj, key, depth + 1);
    if obj.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(obj.extract()?));
    }
    let name = || if key.is_empty() { "the value".to_string() } else { key.to_string() };
    if obj.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(
            obj.extract().map_err(|_| PyValueError::new_err(format!("{key}: integer out of range")))?,
        ));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(obj.extract()?));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(obj.extract()?));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, v) in d.iter() {
            let k: String =
                k.extract().map_err(|_| PyTypeError::new_err(format!("{}: keys must be strings", name())))?;
            let inner = if key.is_empty() { k.clone() } else { format!("{key}.{k}") };
            t.insert(k, to_toml(&v, &inner)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut a = Vec::new();
        for (i, v) in obj.try_iter()?.enumerate() {
            a.push(to_toml(&v?, &format!("{key}[{i}]"))?);
        }
        return Ok(toml::Value::Array(a));
    }
    // NumPy arrays and scalars.
    if obj.hasattr("tolist")? {
        return to_toml(&obj.call_method0("tolist")?, key);
    }
    Err(PyTypeError::new_err(format!(
        "{key}: cannot be a scene value: {} (numbers, strings, booleans, lists and dicts are)",
        obj.get_type().name()?
    )))
}

/// A dict of scene keys as a TOML table.
fn table(obj: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<toml::Table> {
    match obj {
        None => Ok(toml::Table::new()),
        Some(o) if o.is_none() => Ok(toml::Table::new()),
        Some(o) => match to_toml(o, "")? {
            toml::Value::Table(t) => Ok(t),
            _ => Err(PyTypeError::new_err(format!("{name}: expected a dict"))),
        },
    }
}

/// An array-like of real numbers as an (n, `columns`) array of f64, each value finite in f32
/// (within ±3.4e38): `name` names it in errors.
fn matrix(obj: &Bound<'_, PyAny>, columns: usize, name: &str) -> PyResult<(usize, Vec<f64>)> {
    real_numbers(obj, name)?;
    let np = obj.py().import("numpy")?;
    let arr = np
        .call_method1("asarray", (obj, "float64"))
        .map_err(|e| PyValueError::new_err(format!("{name}: not an array of numbers: {e}")))?;
    let arr = np.call_method1("ascontiguousarray", (arr,))?;
    let arr = arr.cast_into::<PyArrayDyn<f64>>().map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?;
    let shape = arr.shape().to_vec();
    if shape.len() != 2 || shape[1] != columns {
        return Err(PyValueError::new_err(format!("{name}: expected shape (n, {columns}), got {shape:?}")));
    }
    let values = arr.readonly().as_slice().map_err(|e| PyValueError::new_err(format!("{name}: {e}")))?.to_vec();
    if let Some(i) = values.iter().position(|&v| !(v as f32).is_finite()) {
        let row = &values[i / columns * columns..(i / columns + 1) * columns];
        let what = if values[i].is_finite() { "is too large for f32 (beyond ±3.4e38)" } else { "is not finite" };
        return Err(PyValueError::new_err(format!("{name}: row {} {what}: {row:?}", i / columns)));
    }
    Ok((shape[0], values))
}

/// Refuses an array (or sequence) whose NumPy kind is not a real number — complex (whose
/// imaginary part a cast to float would drop with only a warning), boolean (True would count as
/// 1), strings, dates: `name` names it.
fn real_numbers(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    let np = obj.py().import("numpy")?;
    let Ok(kind) = np.call_method1("asarray", (obj,)).and_then(|a| a.getattr("dtype")?.getattr("kind")) else {
        // Not something NumPy can make an array of: the cast that follows says why.
        return Ok(());
    };
    let kind: String = kind.extract()?;
    match kind.as_str() {
        "i" | "u" | "f" => Ok(()),
        "O" => Ok(()), // Python objects: the cast to float64 decides, and refuses what is not a number.
        "c" => Err(PyValueError::new_err(format!("{name}: complex numbers, expected real ones"))),
        "b" => Err(PyValueError::new_err(format!("{name}: booleans, expected numbers"))),
        other => Err(PyValueError::new_err(format!("{name}: expected numbers, got an array of NumPy kind {other:?}"))),
    }
}

/// Three numbers as a `Vec3`, each finite in f32 (a float64 beyond ±3.4·10³⁸ would become
/// infinite there): `name` names them in errors.
fn vec3(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec3> {
    real_numbers(obj, name)?;
    let v: Vec<f64> = obj.extract().map_err(|_| PyValueError::new_err(format!("{name}: expected 3 numbers")))?;
    match v[..] {
        [x, y, z] if v.iter().all(|&c| (c as f32).is_finite()) => Ok(Vec3::new(x as f32, y as f32, z as f32)),
        _ => {
            Err(PyValueError::new_err(format!("{name}: expected 3 numbers finite in f32 (within ±3.4e38), got {v:?}")))
        }
    }
}

/// Whether `obj` is a boolean: Python's, or NumPy's (`numpy.bool_`, which is not an `int` but
/// converts to one, so `True` would be taken as 1).
fn boolean(obj: &Bound<'_, PyAny>) -> bool {
    if obj.is_instance_of::<PyBool>() {
        return true;
    }
    let t = obj.get_type();
    let module = t.module().is_ok_and(|m| m.to_cow().is_ok_and(|m| m == "numpy"));
    module && t.name().is_ok_and(|n| n.to_cow().is_ok_and(|n| n == "bool_" || n == "bool"))
}

/// An int argument, `name` naming it in errors: Python's bools are ints, and `True` would
/// count as 1, so a boolean (NumPy's too) is refused; an int beyond i64 is out of range.
fn integer(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<i64> {
    if boolean(obj) {
        return Err(PyValueError::new_err(format!("{name}: {obj} is a boolean, not an integer")));
    }
    obj.extract::<i64>().map_err(|_| {
        let shown = obj.repr().map(|r| r.to_string()).unwrap_or_else(|_| obj.to_string());
        if obj.is_instance_of::<PyInt>() {
            PyValueError::new_err(format!("{name}: {shown} is out of range"))
        } else {
            PyValueError::new_err(format!("{name}: expected an integer, got {shown}"))
        }
    })
}

fn particles(obj: &Bound<'_, PyAny>, n: usize, name: &str) -> PyResult<Vec<u32>> {
    let expected =
        || PyValueError::new_err(format!("{name}: expected particle indices (an int or a sequence of ints)"));
    // Python's bools are ints: True would pin particle 1. Refused by name.
    let index = |x: &Bound<'_, PyAny>| -> PyResult<i64> {
        if boolean(x) {
            return Err(PyValueError::new_err(format!("{name}: {x} is a boolean, not a particle index")));
        }
        x.extract::<i64>().map_err(|_| expected())
    };
    let v: Vec<i64> = if boolean(obj) || obj.extract::<i64>().is_ok() {
        vec![index(obj)?]
    } else {
        // A NumPy array (or anything with `tolist`) as a list; a boolean mask is refused too.
        let list = if obj.hasattr("tolist")? { obj.call_method0("tolist")? } else { obj.clone() };
        let items: Vec<Bound<'_, PyAny>> = list.extract().map_err(|_| expected())?;
        items.iter().map(index).collect::<PyResult<_>>()?
    };
    v.into_iter()
        .map(|i| {
            u32::try_from(i)
                .ok()
                .filter(|&i| (i as usize) < n)
                .ok_or_else(|| PyValueError::new_err(format!("{name}: particle {i} does not exist (there are {n})")))
        })
        .collect()
}

fn scene_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A simulation: a scene's model, its solver and state, and what Python changed of its control
/// (pins, wind, collider placements).
#[pyclass(module = "hooke")]
struct Simulation {
    scene: Scene,
    /// Behind a lock so that a simulation may be used from any Python thread (one at a time:
    /// Python's own borrow of the object already refuses two at once).
    solver: std::sync::Mutex<Box<dyn Solver>>,
    state: State,
    tearing: Tearing,
    /// Pinned from Python: particle → target (None: where it was pinned).
    pins: BTreeMap<u32, Vec3>,
    released: BTreeSet<u32>,
    wind: Option<Vec3>,
    poses: BTreeMap<usize, Pose>,
}

impl Simulation {
    fn new(mut scene: Scene, backend_name: &str) -> PyResult<Simulation> {
        scene.solver.set_parallel(pool().current_num_threads() > 1);
        let options = SolverOptions::new(backend(backend_name)?);
        let made = pool().install(|| hooke_sim::make_solver(&scene, &options)).map_err(|e| match e {
            hooke_sim::FactoryError::Gpu(g) => PyRuntimeError::new_err(format!("backend \"gpu\": {g}")),
            other => PyValueError::new_err(other.to_string()),
        })?;
        let mut solver = made.solver;
        let mut state = State::from_model(&scene.model);
        solver.read_state(&mut state);
        let tearing = Tearing::for_scene(&scene);
        Ok(Simulation {
            scene,
            solver: std::sync::Mutex::new(solver),
            state,
            tearing,
            pins: BTreeMap::new(),
            released: BTreeSet::new(),
            wind: None,
            poses: BTreeMap::new(),
        })
    }

    /// The solver (a poisoned lock is only a panic elsewhere; the solver is still whole).
    fn solver(&self) -> std::sync::MutexGuard<'_, Box<dyn Solver>> {
        self.solver.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn control(&self) -> Control {
        let mut c = self.tearing.control(self.scene.control_at(self.solver().time()));
        for &p in &self.released {
            c.release(p);
        }
        for (&p, &target) in &self.pins {
            c.release(p);
            c.pin_to(p, target);
        }
        if let Some(w) = self.wind {
            c.wind = w;
            c.gust = None;
        }
        for (&k, &pose) in &self.poses {
            c.move_collider(k, pose);
        }
        c
    }

    fn n(&self) -> usize {
        self.state.particle_position.len()
    }
}

fn rows<'py>(py: Python<'py>, v: &[Vec3]) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let flat: Vec<f32> = v.iter().flat_map(|p| p.to_array()).collect();
    numpy::ndarray::Array2::from_shape_vec((v.len(), 3), flat)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

#[pymethods]
impl Simulation {
    /// See hooke.pyi.
    #[staticmethod]
    #[pyo3(signature = (path, set = None, backend = "cpu"))]
    fn from_scene(path: PathBuf, set: Option<&Bound<'_, PyAny>>, backend: &str) -> PyResult<Simulation> {
        let set = table(set, "set")?;
        let scene = pool()
            .install(|| hooke_sim::batch::load_scene(&path, &set, MEMORY_LIMIT))
            .map_err(|e| if path.is_file() { PyValueError::new_err(e) } else { PyOSError::new_err(e) })?;
        Simulation::new(scene, backend)
    }

    /// See hooke.pyi.
    #[staticmethod]
    #[pyo3(signature = (vertices, triangles, material, pins = None, uvs = None, scene = None, backend = "cpu", name = "cloth"))]
    #[allow(clippy::too_many_arguments)]
    fn from_arrays(
        vertices: &Bound<'_, PyAny>,
        triangles: &Bound<'_, PyAny>,
        material: &Bound<'_, PyAny>,
        pins: Option<&Bound<'_, PyAny>>,
        uvs: Option<&Bound<'_, PyAny>>,
        scene: Option<&Bound<'_, PyAny>>,
        backend: &str,
        name: &str,
    ) -> PyResult<Simulation> {
        let (n, v) = matrix(vertices, 3, "vertices")?;
        let (t, tri) = matrix(triangles, 3, "triangles")?;
        let mut tris = Vec::with_capacity(t);
        for (k, c) in tri.chunks(3).enumerate() {
            if c.iter().any(|&i| i < 0.0 || i.fract() != 0.0 || i >= n as f64) {
                return Err(PyValueError::new_err(format!(
                    "triangles: row {k} ({}, {}, {}) is not three indices of vertices (there are {n})",
                    c[0], c[1], c[2]
                )));
            }
            tris.push([c[0] as u32, c[1] as u32, c[2] as u32]);
        }
        let positions: Vec<Vec3> = v.chunks(3).map(|c| Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32)).collect();
        let uvs = match uvs {
            Some(u) if !u.is_none() => {
                let (m, u) = matrix(u, 2, "uvs")?;
                if m != n {
                    return Err(PyValueError::new_err(format!("uvs: {m} rows for {n} vertices")));
                }
                Some(u.chunks(2).map(|c| Vec2::new(c[0] as f32, c[1] as f32)).collect())
            }
            _ => None,
        };
        let mesh = hooke_io::mesh::ObjMesh::from_arrays(positions, tris, uvs)
            .map_err(|e| PyValueError::new_err(format!("vertices, triangles: {e}")))?;
        let mut file = table(scene, "scene")?;
        if file.contains_key("cloth") {
            return Err(PyValueError::new_err("scene: give the cloth as arrays, not as scene[\"cloth\"]"));
        }
        let mat = match to_toml(material, "material")? {
            toml::Value::Table(t) => t,
            _ => return Err(PyTypeError::new_err("material: expected a dict of material keys")),
        };
        let materials = file.entry("materials").or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(materials) = materials else {
            return Err(PyValueError::new_err("scene: \"materials\" must be a dict"));
        };
        materials.insert(name.to_string(), toml::Value::Table(mat));
        let mut cloth = toml::Table::new();
        cloth.insert("name".into(), name.into());
        cloth.insert("material".into(), name.into());
        cloth.insert("mesh".into(), "<arrays>".into());
        // The arrays are the particles: vertices are not welded.
        cloth.insert("weld".into(), false.into());
        if let Some(p) = pins
            && !p.is_none()
        {
            let p = particles(p, n, "pins")?;
            // As `pin`: a particle given twice is a slip (the scene file's pin keys may
            // overlap, a list of indices should not).
            let mut seen = BTreeSet::new();
            if let Some(&twice) = p.iter().find(|&&i| !seen.insert(i)) {
                return Err(PyValueError::new_err(format!("pins: particle {twice} is given twice")));
            }
            cloth.insert("pin_indices".into(), toml::Value::Array(p.into_iter().map(|i| (i as i64).into()).collect()));
        }
        file.insert("cloth".into(), toml::Value::Array(vec![toml::Value::Table(cloth)]));
        // The scene's name is the argument `name` (unless `scene` gives one), so that a bad
        // one is named as such (it was blamed on a file's stem).
        file.entry("name").or_insert_with(|| name.into());
        let meshes = Meshes::from([("<arrays>".to_string(), mesh)]);
        let scene = pool()
            .install(|| hooke_io::scene::from_table(file, "arrays", name, None, MEMORY_LIMIT, &meshes))
            .map_err(|e| PyValueError::new_err(e.message))?;
        Simulation::new(scene, backend)
    }

    /// See hooke.pyi.
    #[pyo3(signature = (frames = None))]
    fn step(&mut self, py: Python<'_>, frames: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let frames = match frames {
            Some(f) if !f.is_none() => integer(f, "frames")?,
            _ => 1,
        };
        if frames < 0 {
            return Err(PyValueError::new_err(format!("frames: must be ≥ 0, got {frames}")));
        }
        let dt = 1.0 / self.scene.fps;
        for _ in 0..frames {
            let control = self.control();
            let Simulation { solver, state, tearing, .. } = self;
            let solver = solver.get_mut().unwrap_or_else(|e| e.into_inner());
            let result: Result<(), String> = py.detach(|| {
                pool().install(|| {
                    solver.step(&control, dt).map_err(|e| format!("{e}{}", hooke_sim::bake::speed_limit_hint(&e)))?;
                    solver.read_state(state);
                    if tearing.due(solver.as_ref()) {
                        tearing.after_frame(solver.as_mut(), state).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
            });
            result.map_err(SimulationError::new_err)?;
            py.check_signals()?;
        }
        Ok(())
    }

    /// Particle positions (m): a new float32 array of shape (n, 3).
    #[getter]
    fn positions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        rows(py, &self.state.particle_position)
    }

    /// Particle velocities (m/s): a new float32 array of shape (n, 3).
    #[getter]
    fn velocities<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        rows(py, &self.state.particle_velocity)
    }

    /// See hooke.pyi.
    fn read_positions(&self, out: &Bound<'_, PyAny>) -> PyResult<()> {
        let n = self.n();
        let out = out.cast::<PyArray2<f32>>().map_err(|_| {
            let what = out.getattr("dtype").map(|d| d.to_string()).unwrap_or_else(|_| "not an array".into());
            PyValueError::new_err(format!("out: expected a float32 array of shape ({n}, 3), got {what}"))
        })?;
        if out.shape() != [n, 3] {
            return Err(PyValueError::new_err(format!("out: expected shape ({n}, 3), got {:?}", out.shape())));
        }
        if !out.is_c_contiguous() {
            return Err(PyValueError::new_err("out: must be C-contiguous (np.empty((n, 3), np.float32))"));
        }
        let mut w = out.try_readwrite().map_err(|e| PyValueError::new_err(format!("out: {e}")))?;
        let s = w.as_slice_mut().map_err(|_| PyValueError::new_err("out: must be C-contiguous"))?;
        for (o, p) in s.chunks_exact_mut(3).zip(&self.state.particle_position) {
            o.copy_from_slice(&p.to_array());
        }
        Ok(())
    }

    /// Particle masses (kg): a new float32 array of shape (n,).
    #[getter]
    fn masses<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f32>> {
        self.solver().model().particle_mass().to_vec().into_pyarray(py)
    }

    /// Triangles of every cloth as particle indices: a new uint32 array of shape (t, 3).
    #[getter]
    fn triangles<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<u32>>> {
        let model = self.solver().model().clone();
        let t = model.triangles();
        let flat: Vec<u32> = t.iter().flatten().copied().collect();
        numpy::ndarray::Array2::from_shape_vec((t.len(), 3), flat)
            .map(|a| a.into_pyarray(py))
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Simulated time (s).
    #[getter]
    fn time(&self) -> f64 {
        self.solver().time()
    }

    /// Frames per second of the scene: `step` advances 1/fps s a frame.
    #[getter]
    fn fps(&self) -> f32 {
        self.scene.fps
    }

    /// The scene's frame count (`[solver] frames`).
    #[getter]
    fn frames(&self) -> usize {
        self.scene.frames
    }

    /// Particles (they change when the cloth tears).
    #[getter]
    fn particle_count(&self) -> usize {
        self.n()
    }

    /// The scene's name.
    #[getter]
    fn name(&self) -> String {
        self.scene.name.clone()
    }

    /// See hooke.pyi.
    #[pyo3(signature = (particles, targets = None))]
    fn pin(&mut self, particles: &Bound<'_, PyAny>, targets: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let p = self::particles(particles, self.n(), "particles")?;
        // A particle given twice would be pinned to its last target, silently.
        let mut seen = BTreeSet::new();
        if let Some(&twice) = p.iter().find(|&&i| !seen.insert(i)) {
            return Err(PyValueError::new_err(format!("particles: particle {twice} is given twice")));
        }
        let targets: Vec<Vec3> = match targets {
            Some(t) if !t.is_none() => {
                let (m, v) = matrix(t, 3, "targets")?;
                if m != p.len() {
                    return Err(PyValueError::new_err(format!("targets: {m} rows for {} particles", p.len())));
                }
                // Finite in f32: `matrix` refuses a row beyond ±3.4e38.
                v.chunks(3).map(|c| Vec3::new(c[0] as f32, c[1] as f32, c[2] as f32)).collect()
            }
            _ => p.iter().map(|&i| self.state.particle_position[i as usize]).collect(),
        };
        for (i, t) in p.into_iter().zip(targets) {
            self.released.remove(&i);
            self.pins.insert(i, t);
        }
        Ok(())
    }

    /// See hooke.pyi.
    fn release(&mut self, particles: &Bound<'_, PyAny>) -> PyResult<()> {
        for i in self::particles(particles, self.n(), "particles")? {
            self.pins.remove(&i);
            self.released.insert(i);
        }
        Ok(())
    }

    /// See hooke.pyi.
    #[pyo3(signature = (velocity = None))]
    fn set_wind(&mut self, velocity: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        self.wind = match velocity {
            Some(v) if !v.is_none() => {
                // As a scene's wind: its squared length finite in f32 (the drag squares it).
                let w = vec3(v, "velocity")?;
                if !w.length_squared().is_finite() {
                    return Err(PyValueError::new_err(format!("velocity: {w} m/s is too fast to square within f32")));
                }
                Some(w)
            }
            _ => None,
        };
        Ok(())
    }

    /// See hooke.pyi.
    #[pyo3(signature = (collider, translation, rotation = None))]
    fn place_collider(
        &mut self,
        collider: &Bound<'_, PyAny>,
        translation: &Bound<'_, PyAny>,
        rotation: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let colliders = self.scene.model.colliders();
        if boolean(collider) {
            return Err(PyValueError::new_err(format!("collider: {collider} is a boolean, not an index or a name")));
        }
        let k = match collider.extract::<usize>() {
            Ok(k) if k < colliders.len() => k,
            Ok(k) => {
                return Err(PyValueError::new_err(format!(
                    "collider: {k} does not exist (there are {})",
                    colliders.len()
                )));
            }
            Err(_) => {
                let name: String =
                    collider.extract().map_err(|_| PyTypeError::new_err("collider: expected an index or a name"))?;
                colliders.iter().position(|c| c.name == name).ok_or_else(|| {
                    let names: Vec<&str> = colliders.iter().map(|c| c.name.as_str()).collect();
                    PyValueError::new_err(format!("collider: no collider named {name:?} (there are {names:?})"))
                })?
            }
        };
        let rotation = match rotation {
            Some(r) if !r.is_none() => {
                let d = vec3(r, "rotation")?;
                Quat::from_euler(glam::EulerRot::XYZ, d.x.to_radians(), d.y.to_radians(), d.z.to_radians())
            }
            _ => Quat::IDENTITY,
        };
        self.poses.insert(k, Pose { translation: vec3(translation, "translation")?, rotation });
        Ok(())
    }

    /// See hooke.pyi.
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self.solver().time();
        let model = self.solver().model().clone();
        let d = hooke::Diagnostics::measure(
            &model,
            &self.state.particle_position,
            &self.state.particle_velocity,
            t,
            &self.scene.collider_poses_at(t),
        );
        let out = PyDict::new(py);
        out.set_item("time_s", t)?;
        out.set_item("max_stretch_strain", d.max_stretch_strain)?;
        out.set_item("max_penetration_m", d.max_penetration)?;
        out.set_item("nan_count", d.nan_count)?;
        out.set_item("max_speed_m_per_s", d.max_speed)?;
        out.set_item("kinetic_energy_j", d.kinetic_energy)?;
        out.set_item("gravity_energy_j", d.gravity_energy)?;
        out.set_item("elastic_energy_j", d.elastic_energy)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        // One guard: two taken in one expression would live together, and the second would
        // wait on the first for ever.
        let (time, name) = {
            let solver = self.solver();
            (solver.time(), solver.info().name)
        };
        format!("hooke.Simulation({:?}: {} particles, t = {time:.4} s, {name})", self.scene.name, self.n())
    }
}

fn json(py: Python<'_>, value: &impl serde::Serialize) -> PyResult<Py<PyAny>> {
    let text = serde_json::to_string(value).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
}

/// See hooke.pyi.
#[pyfunction]
#[pyo3(signature = (scene, out, set = None, format = "usda", backend = "cpu", strict = false))]
fn bake(
    py: Python<'_>,
    scene: PathBuf,
    out: PathBuf,
    set: Option<&Bound<'_, PyAny>>,
    format: &str,
    backend: &str,
    strict: bool,
) -> PyResult<Py<PyAny>> {
    let set = table(set, "set")?;
    // The scene's [output] is not where bake writes: `out` and `format` are.
    if let Some(key) = set.keys().find(|k| hooke_sim::batch::is_output_key(k)) {
        return Err(PyValueError::new_err(format!(
            "set: {key:?} cannot be set: bake writes into `out`, in `format` (its arguments)"
        )));
    }
    let format: hooke_io::cache::Format = format.parse().map_err(|e| PyValueError::new_err(format!("format: {e}")))?;
    let options = SolverOptions::new(self::backend(backend)?);
    let path = scene;
    if !path.is_file() {
        return Err(PyOSError::new_err(missing(&path, "scene file")));
    }
    if out.as_os_str().is_empty() {
        return Err(PyValueError::new_err("out: an empty folder name (the cache's folder; \".\" for this one)"));
    }
    let (result, signal) = interruptible(py, |stop| -> Result<serde_json::Value, PyErr> {
        {
            let mut scene = hooke_sim::batch::load_scene(&path, &set, MEMORY_LIMIT).map_err(scene_error)?;
            // A cache that cannot fit the disk is refused before simulating.
            hooke_sim::space::check(&out, scene.frames, scene.model.particle_count()).map_err(|e| {
                PyValueError::new_err(format!("{}: solver.frames = {}: {e}", path.display(), scene.frames))
            })?;
            scene.solver.set_parallel(pool().current_num_threads() > 1);
            let failed_dir = Some(out.join(hooke_sim::FAILED_FOLDER));
            let settings = hooke_sim::BakeSettings { dir: out.clone(), format, options, strict, failed_dir };
            let baked = hooke_sim::Bake::new(&mut scene, settings).and_then(|b| b.run(stop, |_, _| {})).map_err(
                |e| match e {
                    hooke_sim::BakeError::Io { .. } | hooke_sim::BakeError::Cache(_) => {
                        PyOSError::new_err(e.to_string())
                    }
                    hooke_sim::BakeError::Strict(_) | hooke_sim::BakeError::CutShort(_) => {
                        SimulationError::new_err(e.to_string())
                    }
                    other => PyValueError::new_err(other.to_string()),
                },
            )?;
            if let Some(f) = &baked.failure {
                let frames = match baked.frames_written.saturating_sub(1) {
                    0 => "only frame 0, the start, was".to_string(),
                    k => format!("frames 0–{k} were"),
                };
                return Err(SimulationError::new_err(format!(
                    "{f}; {frames} written to {}, not into {}",
                    baked.diagnostics.parent().unwrap_or(&out).display(),
                    out.display()
                )));
            }
            let residual = baked.monitor.worst_residual();
            Ok(serde_json::json!({
                "frames": baked.frames_written,
                "time_s": baked.time,
                "seconds": baked.seconds,
                "max_stretch_strain": baked.worst.max_stretch_strain,
                "max_residual_strain": (!residual.is_nan()).then_some(residual),
                "max_penetration_m": baked.worst.max_penetration,
                "files": baked.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "diagnostics": baked.diagnostics.display().to_string(),
            }))
        }
    })?;
    if let Some(signal) = signal {
        return Err(signal);
    }
    json(py, &result?)
}

/// Runs `work` on the simulation pool with the interpreter's lock released, checking for
/// Ctrl-C (Python's signal handlers) every 20 ms: on a signal the flag `work` is given is set, so
/// that it stops after its current frame, and the signal's exception is returned beside what
/// `work` returned.
fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&std::sync::atomic::AtomicBool) -> T + Send,
) -> PyResult<(T, Option<PyErr>)> {
    interruptible_in(py, pool(), work)
}

/// [`interruptible`] with `work` run on `pool`.
fn interruptible_in<T: Send>(
    py: Python<'_>,
    on: &'static rayon::ThreadPool,
    work: impl FnOnce(&std::sync::atomic::AtomicBool) -> T + Send,
) -> PyResult<(T, Option<PyErr>)> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut signal = None;
    let out = py.detach(|| {
        std::thread::scope(|scope| {
            let handle = scope.spawn(|| on.install(|| work(&stop)));
            while !handle.is_finished() {
                std::thread::sleep(std::time::Duration::from_millis(20));
                if signal.is_none()
                    && let Err(e) = Python::attach(|py| py.check_signals())
                {
                    signal = Some(e);
                    stop.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            handle.join()
        })
    });
    let out = out.map_err(|_| PyRuntimeError::new_err("the simulation thread panicked"))?;
    Ok((out, signal))
}

/// See hooke.pyi.
#[pyfunction]
#[pyo3(signature = (manifest, out = None, shard = None, resume = false, backend = "cpu", jobs = None, worlds = None))]
#[allow(clippy::too_many_arguments)]
fn run_batch(
    py: Python<'_>,
    manifest: PathBuf,
    out: Option<PathBuf>,
    shard: Option<&Bound<'_, PyAny>>,
    resume: bool,
    backend: &str,
    jobs: Option<&Bound<'_, PyAny>>,
    worlds: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    // Python's bools are ints: `jobs=True` would be taken as 1. Refused by name, as `step`'s.
    let optional = |v: Option<&Bound<'_, PyAny>>, name: &str| match v {
        Some(v) if !v.is_none() => integer(v, name).map(Some),
        _ => Ok(None),
    };
    let (jobs, worlds) = (optional(jobs, "jobs")?.unwrap_or(1), optional(worlds, "worlds")?);
    if !(1..=1024).contains(&jobs) {
        return Err(PyValueError::new_err(format!("jobs: must be 1 to 1024, got {jobs}")));
    }
    // As `hooke batch`: packed by up to 256 on the GPU unless samples run side by side.
    let worlds = worlds.unwrap_or(if backend == "gpu" && jobs == 1 { 256 } else { 1 });
    if !(1..=65_536).contains(&worlds) {
        return Err(PyValueError::new_err(format!("worlds: must be 1 to 65536, got {worlds}")));
    }
    if worlds > 1 && jobs > 1 {
        return Err(PyValueError::new_err("worlds and jobs do not go together: a pack uses every thread"));
    }
    use hooke_sim::batch::{BatchError, BatchSettings, Shard};
    if out.as_ref().is_some_and(|o| o.as_os_str().is_empty()) {
        return Err(PyValueError::new_err("out: an empty folder name (the dataset's folder; \".\" for this one)"));
    }
    let m = read_manifest(&manifest)?;
    let shard = match shard {
        None => Shard::ALL,
        Some(s) if s.is_none() => Shard::ALL,
        Some(s) if s.try_iter().is_ok_and(|mut it| it.any(|x| x.is_ok_and(|x| boolean(&x)))) => {
            return Err(PyValueError::new_err(format!("shard: {s} holds a boolean, not an integer")));
        }
        Some(s) => match s.extract::<(usize, usize)>() {
            Ok((index, count)) => Shard::parse(&format!("{index}/{count}")),
            Err(_) => s
                .extract::<String>()
                .map_err(|_| "expected \"i/n\" or (i, n)".to_string())
                .and_then(|t| Shard::parse(&t)),
        }
        .map_err(|e| PyValueError::new_err(format!("shard: {e}")))?,
    };
    let mut options = SolverOptions::new(self::backend(backend)?);
    if options.backend == Backend::Gpu {
        // One device for every sample: its kernels are compiled once.
        options.context =
            Some(hooke_gpu::GpuContext::new().map_err(|e| PyRuntimeError::new_err(format!("backend \"gpu\": {e}")))?);
    }
    let settings = BatchSettings {
        out: out.unwrap_or_else(|| m.out.clone()),
        shard,
        resume,
        options,
        memory_limit: MEMORY_LIMIT,
        jobs: jobs as usize,
        worlds: worlds as usize,
    };
    // Packs of worlds run on the thread that waits for the jobs, before them, and sweep in
    // parallel on its pool: they keep `pool`.
    let on = if settings.jobs > 1 && settings.worlds <= 1 { batch_pool() } else { pool() };
    let (result, signal) = interruptible_in(py, on, |stop| {
        let mut records = Vec::new();
        hooke_sim::batch::run_shard(&m, &settings, stop, |r| records.push(r.clone()))?;
        // As `hooke batch` does: the index of what is complete when the shard ends.
        hooke_sim::batch::write_index(&settings.out, Some(&m))?;
        Ok::<_, BatchError>(records)
    })?;
    if let Some(signal) = signal {
        return Err(signal);
    }
    let records = result.map_err(|e| match e {
        BatchError::Io { .. } | BatchError::Bake { .. } => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    })?;
    json(py, &records)
}

/// See hooke.pyi.
#[pyfunction]
#[pyo3(signature = (out, manifest = None))]
fn write_index(py: Python<'_>, out: PathBuf, manifest: Option<PathBuf>) -> PyResult<Py<PyAny>> {
    use hooke_sim::batch::BatchError;
    let m = manifest.map(|m| read_manifest(&m)).transpose()?;
    let (_, records) = hooke_sim::batch::write_index(&out, m.as_ref()).map_err(|e| match e {
        BatchError::Io { .. } => PyOSError::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    })?;
    json(py, &records)
}

/// Why `path`, which is not a regular file, cannot be read as `what`: a folder, something else
/// that is there (a device, a pipe, a socket), or nothing there.
fn missing(path: &std::path::Path, what: &str) -> String {
    if path.is_dir() {
        format!("{}: a folder, not a {what}", path.display())
    } else if path.exists() {
        format!("{}: not a regular file (a device, a pipe or a socket), not a {what}", path.display())
    } else {
        format!("{}: no such {what}", path.display())
    }
}

/// Reads a batch manifest: OSError if the file cannot be read, ValueError if it is invalid.
fn read_manifest(path: &std::path::Path) -> PyResult<hooke_sim::batch::Manifest> {
    if !path.is_file() {
        return Err(PyOSError::new_err(missing(path, "manifest")));
    }
    hooke_sim::batch::Manifest::read(path).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The hooke module.
#[pymodule]
#[pyo3(name = "hooke")]
fn hooke_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(bake, m)?)?;
    m.add_function(wrap_pyfunction!(run_batch, m)?)?;
    m.add_function(wrap_pyfunction!(write_index, m)?)?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

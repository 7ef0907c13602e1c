//! Errors returned by model construction.

use crate::model::colouring::ColouringConflict;

/// Why a model could not be built. Every variant names the body or element at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// A parameter is out of its valid range (negative mass, zero spacing, NaN, …).
    #[error("{context}: {message}")]
    Invalid {
        /// Where: body and field, e.g. `cloth "flag": spacing`.
        context: String,
        /// What is wrong, with the offending value.
        message: String,
    },
    /// The model would need more memory than the builder's limit allows.
    #[error(
        "{context}: {particles} particles and {constraints} constraints need about {bytes} bytes, \
         more than the memory limit of {limit} bytes"
    )]
    TooLarge {
        /// Which body made it too large.
        context: String,
        /// Particle count requested.
        particles: u128,
        /// Constraint count requested.
        constraints: u128,
        /// Estimated bytes.
        bytes: u128,
        /// The limit (bytes).
        limit: u64,
    },
    /// Two bodies have the same name.
    #[error("two bodies are named {0:?}; names must be unique")]
    DuplicateName(String),
    /// Internal: a colouring conflict (a bug in a topology builder).
    #[error("internal colouring error: {0}")]
    Colouring(#[from] ColouringConflict),
}

impl ModelError {
    pub(crate) fn invalid(context: impl Into<String>, message: impl Into<String>) -> ModelError {
        ModelError::Invalid { context: context.into(), message: message.into() }
    }
}

/// Checks that `value` is finite and > 0.
pub(crate) fn positive(context: &str, field: &str, value: f32) -> Result<(), ModelError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(ModelError::invalid(format!("{context}: {field}"), format!("must be a finite number > 0, got {value}")))
    }
}

/// Checks that a collider's size `value` (m) is finite and > 0, and small enough that its square
/// is within f32 (the distances to it are squared).
pub(crate) fn collider_size(context: &str, field: &str, value: f32) -> Result<(), ModelError> {
    positive(context, field, value)?;
    if (value * value).is_finite() {
        Ok(())
    } else {
        Err(ModelError::invalid(
            format!("{context}: {field}"),
            format!("{value:e} m is too large: distances to the collider must square within f32"),
        ))
    }
}

/// Longest damping time τ = k_d/k a material takes (s): a stretched spring with its dashpot
/// (Kelvin–Voigt) creeps back to its rest length over about τ, so at 1 000 s (17 minutes) the
/// cloth already holds any change of length like putty, and far longer ones only push
/// γ = τ/Δt out of f32's useful range (a τ of 1e30 s ran, with residuals of 1e30 %).
pub(crate) const MAX_DAMPING: f32 = 1.0e3;

/// Checks that a damping time (s) is finite, ≥ 0 and at most [`MAX_DAMPING`].
pub(crate) fn damping(context: &str, field: &str, value: f32) -> Result<(), ModelError> {
    non_negative(context, field, value)?;
    if value <= MAX_DAMPING {
        Ok(())
    } else {
        Err(ModelError::invalid(
            format!("{context}: {field}"),
            format!(
                "{value:e} s is longer than {MAX_DAMPING:e} s: with a damping time τ = k_d/k that long a spring takes \
                 more than 17 minutes to creep back to its rest length (and γ = τ/Δt leaves f32's useful range)"
            ),
        ))
    }
}

/// Checks that `value` is finite and ≥ 0.
pub(crate) fn non_negative(context: &str, field: &str, value: f32) -> Result<(), ModelError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(ModelError::invalid(format!("{context}: {field}"), format!("must be a finite number ≥ 0, got {value}")))
    }
}

/// Checks that a stiffness is > 0 (`+inf` allowed: rigid).
pub(crate) fn stiffness(context: &str, field: &str, value: f32) -> Result<(), ModelError> {
    if value > 0.0 && !value.is_nan() {
        Ok(())
    } else {
        Err(ModelError::invalid(format!("{context}: {field}"), format!("must be > 0 N/m (inf for rigid), got {value}")))
    }
}

/// Checks that a rope's axial stiffness (EA, N) is > 0 (`+inf` allowed: rigid).
pub(crate) fn axial_stiffness(context: &str, field: &str, value: f32) -> Result<(), ModelError> {
    if value > 0.0 && !value.is_nan() {
        Ok(())
    } else {
        Err(ModelError::invalid(format!("{context}: {field}"), format!("must be > 0 N (inf for rigid), got {value}")))
    }
}

/// Checks that a bending modulus (in `unit`: N·m for cloth, N·m² for rope) is > 0 (`+inf`
/// allowed: rigid).
pub(crate) fn modulus(context: &str, field: &str, value: f32, unit: &str) -> Result<(), ModelError> {
    if value > 0.0 && !value.is_nan() {
        Ok(())
    } else {
        Err(ModelError::invalid(
            format!("{context}: {field}"),
            format!("must be > 0 {unit} (inf for rigid), got {value}"),
        ))
    }
}

/// Checks that a vector is finite.
pub(crate) fn finite_vec(context: &str, field: &str, v: glam::Vec3) -> Result<(), ModelError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(ModelError::invalid(format!("{context}: {field}"), format!("must be finite, got {v}")))
    }
}

/// Checks a body's contact settings: its contact `size` (m; the cloth's `"thickness"` or the
/// rope's `"radius"`, as `name` says) small enough that contact distances square within f32,
/// > 0 when `self_collision` is on, and non-negative self-contact friction coefficients.
pub(crate) fn contact(
    context: &str,
    name: &str,
    size: f32,
    self_collision: bool,
    friction: crate::collision::Friction,
) -> Result<(), ModelError> {
    if !(4.0 * size * size).is_finite() {
        return Err(ModelError::invalid(
            context,
            format!("{name} (m) {size:e} is too large: contact distances must square within f32"),
        ));
    }
    if self_collision && size <= 0.0 {
        return Err(ModelError::invalid(
            context,
            format!("self-collision needs a {name} > 0 m (the contact distance)"),
        ));
    }
    non_negative(context, "self-contact static friction (self_static_friction)", friction.static_coefficient)?;
    non_negative(context, "self-contact kinetic friction (self_kinetic_friction)", friction.kinetic_coefficient)
}

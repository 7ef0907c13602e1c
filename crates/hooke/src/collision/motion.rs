//! Keyframed collider motion: piecewise-linear translation and spherical-linear rotation.

use super::Pose;
use glam::{Quat, Vec3};

/// A keyframe: at `time` (s) the collider is moved by `translation` (m) and turned by
/// `rotation` about its origin ([`Shape::origin`](super::Shape::origin)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyframe {
    /// Time (s).
    pub time: f32,
    /// Translation of the collider from its rest placement (m).
    pub translation: Vec3,
    /// Rotation about the collider's origin, from its rest placement (unit quaternion).
    pub rotation: Quat,
}

impl Keyframe {
    /// A keyframe that only translates.
    pub fn translation(time: f32, translation: Vec3) -> Keyframe {
        Keyframe { time, translation, rotation: Quat::IDENTITY }
    }
}

/// Piecewise-linear motion over time: translation interpolated linearly and rotation
/// spherically between keys, constant before the first and after the last key. An empty track
/// means a collider at rest. Given to a solver through
/// [`Control::animate_collider`](crate::Control::animate_collider), which samples it at the
/// start and end of every substep.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Motion {
    keys: Vec<Keyframe>,
}

impl Motion {
    /// A motion through `keys`, which must be sorted by strictly increasing, finite time (s), at
    /// least 1 ns apart, with finite translations and unit rotations (normalised here).
    ///
    /// # Errors
    /// A message naming the first key that is out of order or not finite.
    pub fn new(mut keys: Vec<Keyframe>) -> Result<Motion, String> {
        for k in 0..keys.len() {
            let key = keys[k];
            if !key.time.is_finite() || !key.translation.is_finite() {
                return Err(format!("keyframe {k}: time and translation must be finite"));
            }
            if !key.rotation.is_finite() || key.rotation.length() < 1e-6 {
                return Err(format!("keyframe {k}: rotation must be a finite rotation"));
            }
            keys[k].rotation = key.rotation.normalize();
            if k > 0 && key.time <= keys[k - 1].time {
                return Err(format!(
                    "keyframe {k}: time {} s is not after the previous key's {} s",
                    key.time,
                    keys[k - 1].time
                ));
            }
            // As a time step: under 1 ns the speed between two keys (which raises the scene's
            // derived blow-up limit) is no physical motion (1 m in 1e-30 s set the limit to
            // 2e31 m/s, switching the speed check off).
            if k > 0 && key.time - keys[k - 1].time < 1e-9 {
                return Err(format!(
                    "keyframe {k}: time {:e} s is less than 1 ns after the previous key's {:e} s; keys must be at \
                     least 1 ns apart",
                    key.time,
                    keys[k - 1].time
                ));
            }
        }
        Ok(Motion { keys })
    }

    /// The keyframes, sorted by time.
    pub fn keys(&self) -> &[Keyframe] {
        &self.keys
    }

    /// Whether the collider never moves.
    pub fn is_static(&self) -> bool {
        self.keys.iter().all(|k| k.translation == self.keys[0].translation && k.rotation == self.keys[0].rotation)
    }

    /// Translation (m) at time `t` (s).
    pub fn translation_at(&self, t: f64) -> Vec3 {
        self.pose_at(t).translation
    }

    /// Placement at time `t` (s). Between two keys with equal rotations the rotation is that
    /// rotation exactly (no slerp rounding), so a translation-only track gives the identity.
    pub fn pose_at(&self, t: f64) -> Pose {
        let t = t as f32;
        let pose = |k: &Keyframe| Pose { translation: k.translation, rotation: k.rotation };
        match self.keys.as_slice() {
            [] => Pose::IDENTITY,
            [only] => pose(only),
            keys => {
                if t <= keys[0].time {
                    return pose(&keys[0]);
                }
                for w in keys.windows(2) {
                    if t <= w[1].time {
                        let s = (t - w[0].time) / (w[1].time - w[0].time);
                        let rotation = if w[0].rotation == w[1].rotation {
                            w[0].rotation
                        } else {
                            w[0].rotation.slerp(w[1].rotation, s)
                        };
                        return Pose { translation: w[0].translation.lerp(w[1].translation, s), rotation };
                    }
                }
                pose(&keys[keys.len() - 1])
            }
        }
    }
}

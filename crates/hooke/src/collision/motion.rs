//! Keyframed translation of animated colliders.

use glam::Vec3;

/// A translation keyframe: at `time` (s) the collider is moved by `translation` (m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyframe {
    /// Time (s).
    pub time: f32,
    /// Translation of the collider from its rest placement (m).
    pub translation: Vec3,
}

/// Piecewise-linear translation over time; constant before the first and after the last key.
/// An empty track means a static collider.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Motion {
    keys: Vec<Keyframe>,
}

impl Motion {
    /// A motion through `keys`, which must be sorted by strictly increasing, finite time.
    ///
    /// # Errors
    /// A message naming the first key that is out of order or not finite.
    pub fn new(keys: Vec<Keyframe>) -> Result<Motion, String> {
        for (k, key) in keys.iter().enumerate() {
            if !key.time.is_finite() || !key.translation.is_finite() {
                return Err(format!("keyframe {k}: time and translation must be finite"));
            }
            if k > 0 && key.time <= keys[k - 1].time {
                return Err(format!(
                    "keyframe {k}: time {} s is not after the previous key's {} s",
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
        self.keys.iter().all(|k| k.translation == self.keys[0].translation)
    }

    /// Translation (m) at time `t` (s).
    pub fn translation_at(&self, t: f64) -> Vec3 {
        let t = t as f32;
        match self.keys.as_slice() {
            [] => Vec3::ZERO,
            [only] => only.translation,
            keys => {
                if t <= keys[0].time {
                    return keys[0].translation;
                }
                for w in keys.windows(2) {
                    if t <= w[1].time {
                        let s = (t - w[0].time) / (w[1].time - w[0].time);
                        return w[0].translation.lerp(w[1].translation, s);
                    }
                }
                keys[keys.len() - 1].translation
            }
        }
    }
}

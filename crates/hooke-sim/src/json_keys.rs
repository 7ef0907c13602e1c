//! A key given twice in one JSON object. JSON (RFC 8259 §4) leaves such an object's meaning to
//! the reader, and `serde_json` keeps the last value silently; a manifest line with
//! `"set": {"k": 1, "k": 2}` would run one sample where its author may have meant two. TOML
//! refuses the same thing itself, so JSON Lines manifests refuse it here.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// The path of the first key given twice in one object of `json` — `"set"."rope.0.end_mass"`
/// or `"scene"`, each key quoted, array elements as `[i]` — or `None` where every object's
/// keys differ, or where `json` is not JSON at all (the parse that follows reports that).
pub(crate) fn duplicated_key(json: &str) -> Option<String> {
    serde_json::from_str::<Found>(json).ok().and_then(|f| f.0)
}

/// What a value holds: the path below it of its first duplicated key, if any.
struct Found(Option<String>);

impl<'de> Deserialize<'de> for Found {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Found, D::Error> {
        d.deserialize_any(Walk)
    }
}

/// Visits every value, objects and arrays included.
struct Walk;

impl<'de> Visitor<'de> for Walk {
    type Value = Found;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Found, E> {
        Ok(Found(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Found, E> {
        Ok(Found(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Found, E> {
        Ok(Found(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Found, E> {
        Ok(Found(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<Found, E> {
        Ok(Found(None))
    }

    fn visit_unit<E>(self) -> Result<Found, E> {
        Ok(Found(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found, A::Error> {
        let mut found = None;
        let mut i = 0usize;
        while let Some(Found(inner)) = seq.next_element()? {
            if found.is_none() {
                found = inner.map(|p| if p.starts_with('[') { format!("[{i}]{p}") } else { format!("[{i}].{p}") });
            }
            i += 1;
        }
        Ok(Found(found))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
        let mut seen = HashSet::new();
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            let Found(inner) = map.next_value()?;
            if found.is_none() {
                let quoted = format!("{key:?}");
                if !seen.insert(key) {
                    found = Some(quoted);
                } else if let Some(below) = inner {
                    found = Some(if below.starts_with('[') {
                        format!("{quoted}{below}")
                    } else {
                        format!("{quoted}.{below}")
                    });
                }
            }
        }
        Ok(Found(found))
    }
}

#[cfg(test)]
mod tests {
    use super::duplicated_key;

    #[test]
    fn a_key_given_twice_is_found_at_any_depth() {
        assert_eq!(duplicated_key(r#"{"scene": "a.toml", "set": {"k": 1, "j": 2}}"#), None);
        assert_eq!(duplicated_key(r#"{"scene": "a.toml", "scene": "b.toml"}"#).as_deref(), Some(r#""scene""#));
        assert_eq!(duplicated_key(r#"{"scene": "a", "set": {"k": 1, "k": 2}}"#).as_deref(), Some(r#""set"."k""#));
        assert_eq!(
            duplicated_key(r#"{"set": {"a.b": [0, {"x": 1, "x": 1}]}}"#).as_deref(),
            Some(r#""set"."a.b"[1]."x""#)
        );
        // The same key in two different objects is no duplicate; nor is anything in bad JSON.
        assert_eq!(duplicated_key(r#"{"a": {"k": 1}, "b": {"k": 1}, "c": [{"k": 1}, {"k": 2}]}"#), None);
        assert_eq!(duplicated_key(r#"{"k": 1, "k": "#), None);
    }
}

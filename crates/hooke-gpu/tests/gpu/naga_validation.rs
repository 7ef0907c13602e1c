//! Every kernel parses and validates with naga (no device needed), with the capabilities of a
//! device created without optional features.

use crate::*;

#[test]
fn every_shader_passes_naga_validation() {
    for (name, source, entries) in shaders::ALL {
        let module =
            naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
        let mut validator =
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty());
        validator.validate(&module).unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
        for entry in *entries {
            assert!(module.entry_points.iter().any(|e| e.name == *entry), "{name}: no entry point {entry}");
        }
        assert_eq!(module.entry_points.len(), entries.len(), "{name}: entry points not listed in shaders::ALL");
    }
}

#[test]
fn a_broken_shader_is_caught() {
    let src = format!("{}\nfn f() -> f32 {{ let x: u32 = 1u; return x; }}", shaders::FINISH);
    assert!(
        naga::front::wgsl::parse_str(&src).is_err() || {
            let m = naga::front::wgsl::parse_str(&src).unwrap();
            naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
                .validate(&m)
                .is_err()
        }
    );
}

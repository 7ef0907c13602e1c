//! The bending sweep of rope joints (`rope_bending.wgsl`): hooke's
//! [`RopeBending`](hooke::RopeBending) constraints, one dispatch per colour, projected by the
//! XPBD update every constraint type shares (`hooke::solver::xpbd`; Macklin, Müller &
//! Chentanez 2016) with the joint angle of `hooke::model::bending_angle` and the arctangent of
//! `hooke::angle` — every operation in the CPU's order, so that both round alike.

use crate::kernel::{Access::*, KernelSpec};

/// The file's pipelines and bindings, in binding order (a [`SetSweep`](crate::set_sweep::SetSweep)).
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "rope_bending.wgsl",
    source: crate::shaders::ROPE_BENDING,
    entries: &["solve", "solve_tiles"],
    access: &[Read, ReadWrite, Read, ReadWrite, Read],
    slot: true,
};

//! The dihedral bending sweep of cloth hinges (`dihedral.wgsl`): hooke's
//! [`DihedralBending`](hooke::DihedralBending) constraints, one dispatch per colour, projected
//! by the XPBD update every constraint type shares (`hooke::solver::xpbd`; Macklin, Müller &
//! Chentanez 2016) with the angle and gradients of Bridson, Marino & Fedkiw 2003 and the
//! arctangent of `hooke::angle` — every operation in the CPU's order, so that both round alike.

use crate::kernel::{Access::*, KernelSpec};

/// The file's pipelines and bindings, in binding order (a [`SetSweep`](crate::set_sweep::SetSweep)).
pub(crate) const SPEC: KernelSpec = KernelSpec {
    name: "dihedral.wgsl",
    source: crate::shaders::DIHEDRAL,
    entries: &["solve", "solve_tiles"],
    access: &[Read, ReadWrite, Read, ReadWrite, Read],
    slot: true,
};

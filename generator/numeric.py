"""The symbolic-numeric mode (dissertation 5.1.3): only the relative kinematics of each joint,
the body inertias and the active forces are generated; the recursions run as loops.

    generate_numeric(spec, form) -> Generated      same stages as pipeline.generate

Per model one kernel `numeric_terms(t, q, qd, p) -> T` is generated (sympy -> IR with
lower.lower_kernel, so it is dead-code eliminated and CSE'd like every kernel) with the layout
of runtime/numeric_core.h: per body G_i (9), rho_i (3), vr_hat_i (6), wr_hat_i (6), m_i, h_i
(3), Theta_i (6), the active wrench F_i (6); then A (6 per coordinate), the generalized forces
(one per coordinate) and gravity (3). The recursions of the form (forward pass, composite
inertias, mass matrix, tree-sparse L^T D L; the sweep; the L^T D L solves) are the hand-written C of
runtime/numeric_core.h, the same for every model; the module gets the topology as constant
arrays. Generation time and code size are O(bodies), not O(size of the unrolled recursion).

Active forces that need absolute positions or velocities of a body (spring-dampers, bushings,
forces in the ground frame) generate the forward kinematics of that body's path to the root
symbolically, on demand (`_LazyForward`); joint forces and body-frame forces need none.
"""

from __future__ import annotations

import hashlib
import time
from importlib import resources

import sympy as sp

from dynamica import __version__
from dynamica.generator import expr as ex
from dynamica.generator import ir
from dynamica.generator.forms import resolve
from dynamica.generator.forms.common import Z3, active_forces
from dynamica.generator.kinematics import derive_kinematics
from dynamica.generator.lower import lower_kernel, parameter_layout
from dynamica.generator.outputs import output_equations, wanted
from dynamica.generator.program import add, cross, matTvec, matvec

#: forms with a hand-written numeric recursion (runtime/numeric_core.h)
SUPPORTED_FORMS = ("composite", "articulated", "ltdl")
MODES = ("symbolic", "numeric")
CORE = "numeric_core.h"
#: doubles per body in the terms array (DYN_NM_TB in runtime/numeric_core.h)
TB = 40


def core_text() -> str:
    return resources.files("dynamica.runtime").joinpath(CORE).read_text()


def core_digest() -> str:
    """Hash of the hand-written core and the numeric templates: part of cache keys and signatures."""
    h = hashlib.sha256(core_text().encode())
    h.update(resources.files("dynamica.templates").joinpath("numeric_kernels.h.j2").read_bytes())
    return h.hexdigest()


def check_form(form: str) -> str:
    """Canonical form name, or ValueError listing what numeric mode supports."""
    name = resolve(form)
    if name not in SUPPORTED_FORMS:
        raise ValueError(f"form {form!r} is not available in numeric mode; supported: "
                         f"{', '.join(SUPPORTED_FORMS)} (use mode='symbolic' for the others)")
    return name


class _LazyList:
    def __init__(self, fill):
        self._fill, self._memo = fill, {}

    def __getitem__(self, i):
        if i not in self._memo:
            self._fill(i)
        return self._memo[i]


class _LazyForward:
    """The fields of common.ForwardPass that active_forces reads (v, R0, r0), computed on demand
    for the bodies it asks about (and their paths to the root), with the same formulas."""

    def __init__(self, kin):
        self.kin = kin
        self.v = _LazyList(self._fill_v)
        self.R0 = _LazyList(self._fill_pose)
        self.r0 = _LazyList(self._fill_pose)
        self.v._memo[0] = [sp.Integer(0)] * 6
        self.R0._memo[0] = sp.eye(3)
        self.r0._memo[0] = list(Z3)

    def _path(self, i, memo):
        path = []
        while i not in memo:
            path.append(i)
            i = self.kin.topo.kappa[i]
        return reversed(path)

    def _fill_v(self, i):
        prog, memo = self.kin.program, self.v._memo
        for b in self._path(i, memo):
            jk, k = self.kin.joints[b], self.kin.topo.kappa[b]
            G = jk.G
            rp = prog.let_vector(f"nm_rp{b}", matvec(G, jk.rho))
            vr = list(jk.vr_hat)
            for col, qd in zip(jk.A, jk.qd):
                vr = [a + qd * c for a, c in zip(vr, col)]
            vr = prog.let_vector(f"nm_vr{b}", vr)
            wk = prog.let_vector(f"nm_wk{b}", matvec(G, memo[k][3:]))
            vk = add(matvec(G, memo[k][:3]), cross(wk, rp))
            memo[b] = prog.let_vector(f"nm_v{b}", add(vk, vr[:3]) + add(wk, vr[3:]))

    def _fill_pose(self, i):
        prog, R0, r0 = self.kin.program, self.R0._memo, self.r0._memo
        for b in self._path(i, R0):
            jk, k = self.kin.joints[b], self.kin.topo.kappa[b]
            R0[b] = prog.let_matrix(f"nm_R{b}", jk.G * R0[k])
            r0[b] = prog.let_vector(f"nm_r{b}", add(r0[k], matTvec(R0[k], jk.rho)))


def terms_outputs(kin) -> list:
    """The expressions of the terms array, in the layout of runtime/numeric_core.h."""
    F, gen = active_forces(kin, _LazyForward(kin))
    out = []
    for i in range(1, kin.topo.n_bodies + 1):
        jk, bi = kin.joints[i], kin.inertia[i]
        th = bi.theta
        out += [jk.G[r, c] for r in range(3) for c in range(3)]
        out += list(jk.rho) + list(jk.vr_hat) + list(jk.wr_hat)
        out += [bi.mass] + list(bi.h) + [th[0, 0], th[0, 1], th[0, 2], th[1, 1], th[1, 2], th[2, 2]]
        out += list(F[i])
    assert len(out) == TB * kin.topo.n_bodies
    for i in range(1, kin.topo.n_bodies + 1):
        for col in kin.joints[i].A:
            out += list(col)
    out += [gen[c] for c in kin.coordinates]
    out += list(kin.gravity)
    return out


def topology_arrays(kin) -> dict:
    """kappa, first, ndof (index 0 unused) and lambda (preceding coordinate towards the root)."""
    topo = kin.topo
    nb = topo.n_bodies
    kappa, first, ndof = [0] * (nb + 1), [0] * (nb + 1), [0] * (nb + 1)
    lam, last = [], [-1] * (nb + 1)          # last[i]: last coordinate on the path root..i
    k = 0
    for i in range(1, nb + 1):
        kappa[i] = topo.kappa[i]
        if kappa[i] >= i:
            raise ValueError("numeric mode needs regular numbering (kappa[i] < i)")
        ni = len(kin.joints[i].A)
        first[i], ndof[i] = k, ni
        prev = last[kappa[i]]
        for _ in range(ni):
            lam.append(prev)
            prev = k
            k += 1
        last[i] = prev
    return {"kappa": kappa, "first": first, "ndof": ndof, "lambda": lam or [-1]}


def _c_ints(values, per_line=24) -> list:
    vals = [str(int(v)) for v in values]
    return [", ".join(vals[k:k + per_line]) + ("," if k + per_line < len(vals) else "")
            for k in range(0, len(vals), per_line)]


def render_numeric(mod: ir.ModuleIR, form: str, topo_arrays: dict, nb: int):
    """SourceBundle: the Cython module (the standard template), the kernel header, the core."""
    from dynamica.generator.printers import PRINTERS
    from dynamica.generator.render import (ENTRY, SourceBundle, _env, _scratch, _wrapper, kernel_context,
                                           python_wrappers)
    n = len(mod.coordinates)
    entries = [
        {"signature": f"void {ENTRY}qdd(double t, const double *q, const double *qd, const double *p, double *qdd)"},
        {"signature": f"void {ENTRY}mass_matrix(double t, const double *q, const double *p, double *M)"},
        {"signature": f"void {ENTRY}rhs(double t, const double *y, const double *p, double *ydot)"}]
    kernel, *rest = mod.kernels
    header = f"{mod.module_name}_kernels.h"
    wrappers = python_wrappers(mod)
    outputs = None
    if rest:                                   # the outputs kernel (lower_outputs)
        (ok,) = rest
        size = ok.outputs[0].size
        entries.append({"signature": f"void {ENTRY}outputs(double t, const double *q, const double *qd, "
                                     "const double *p, double *out)"})
        wrappers.append(_wrapper("outputs", f"The model's outputs (INFO['output_layout']) of the state (q, qd), "
                                            f"flat, into `out` (length {size}).",
                                 [("q", n, 0), ("qd", n, 0), ("p", len(mod.parameter_defaults), 0), ("out", size, 1)]))
        scratch, release = _scratch("qdd", n, [("out", size)])       # stack or heap, as the kernels' own
        outputs = {**kernel_context(ok, PRINTERS["cython"]), "scratch": scratch, "release": release}
    ctx = {
        "version": __version__, "model_name": mod.model_name, "form": form, "signature": mod.signature,
        "model_name_literal": repr(mod.model_name), "form_literal": repr(form), "kind_literal": repr(mod.kind),
        "signature_literal": repr(mod.signature), "version_literal": repr(__version__),
        "coordinates_literal": repr(tuple(mod.coordinates)), "parameters_literal": repr(tuple(mod.parameters)),
        "defaults_literal": repr(tuple(float(x) for x in mod.parameter_defaults)),
        "op_counts_literal": repr({k.name: k.op_count() for k in mod.kernels}),
        "n": n, "np": len(mod.parameter_defaults), "nb": nb, "prefix": ENTRY,
        "entries": entries, "wrappers": wrappers, "info_literal": repr(dict(mod.info)), "outputs": outputs,
        "module_code": [], "kernels_header": header,
        "guard": f"DYNAMICA_{mod.module_name.upper()}_KERNELS_H",
        "kernel": kernel_context(kernel, PRINTERS["cython"]),
        "topo": {k: _c_ints(v) for k, v in topo_arrays.items()}, "n_lambda": len(topo_arrays["lambda"]),
        "form_macro": form.upper(), "core": CORE,
    }
    env = _env()
    files = [(f"{mod.module_name}.pyx", env.get_template("cython_module.pyx.j2").render(**ctx)),
             (header, env.get_template("numeric_kernels.h.j2").render(**ctx)),
             (CORE, core_text())]
    for h in ("dynamica_helpers.pxd", "dynamica_helpers.h"):
        files.append((h, resources.files("dynamica.runtime").joinpath(h).read_text()))
    return SourceBundle(module_name=mod.module_name, backend="cython", files=tuple(files),
                        signature=mod.signature, op_count=kernel.op_count()["total"])


class NumericEquations:
    """Stands in for EquationsOfMotion in `Generated.equations` (numeric mode has no symbolic qdd)."""

    def __init__(self, form, coordinates, terms):
        self.form, self.kind, self.coordinates, self.terms = form, "lagrangian", coordinates, terms
        self.mode = "numeric"


def lower_terms(kin, spec, form: str) -> ir.ModuleIR:
    terms = terms_outputs(kin)
    n = len(kin.coordinates)
    params, defaults, psym = parameter_layout(spec)
    qs = [q for jk in kin.joints[1:] for q in jk.q]
    qds = [q for jk in kin.joints[1:] for q in jk.qd]
    sym = dict(psym)
    sym[ex.T] = ir.Arg("t")
    sym.update({s: ir.Arg("q", j) for j, s in enumerate(qs)})
    sym.update({s: ir.Arg("qd", j) for j, s in enumerate(qds)})
    inputs = (ir.Input("t", None), ir.Input("q", n), ir.Input("qd", n), ir.Input("p", len(defaults)))
    kernel = lower_kernel("numeric_terms", kin.program, inputs, [("T", terms)], sym)
    # structural zeros are not stored: the core clears the array before the call (dyn_nm_terms);
    # thousands of `= 0.0` stores cost the C compiler more than the rest of the kernel
    body = tuple(st for st in kernel.body
                 if not (isinstance(st, ir.Store) and isinstance(st.value, ir.Num) and st.value.value == 0.0))
    kernel = ir.Kernel(**{**kernel.__dict__, "body": body})
    kernels, info = (kernel,), (("mode", "numeric"),)
    if wanted(spec):
        out_kernel, layout = lower_outputs(spec, kin.topo, n, len(defaults), sym)
        kernels, info = kernels + (out_kernel,), info + (("output_layout", layout),)
    mod = ir.ModuleIR(model_name=spec.name, module_name=f"{spec.name}_{form}_numeric", form=form,
                      kind="lagrangian", coordinates=kin.coordinates, parameters=params,
                      parameter_defaults=defaults, kernels=kernels, entries="numeric", info=info)
    return mod, terms


def lower_outputs(spec, topo, n: int, n_params: int, sym: dict):
    """The `outputs` kernel (t, q, qd, qdd, p) -> out: generator/outputs.py with the accelerations
    as inputs (the numeric recursion computes them), so it stays linear in the bodies."""
    qdd = [sp.Symbol(f"nm_qdd{k}") for k in range(n)]
    oe = output_equations(spec, topo, qdd=qdd)
    sym = dict(sym)
    sym.update({s: ir.Arg("qdd", k) for k, s in enumerate(qdd)})
    inputs = (ir.Input("t", None), ir.Input("q", n), ir.Input("qd", n), ir.Input("qdd", n), ir.Input("p", n_params))
    return lower_kernel("outputs", oe.program, inputs, [("out", oe.values)], sym), oe.layout


def generate_numeric(spec, form: str = "composite", backend: str = "cython", progress=None):
    """The pipeline of pipeline.generate for mode='numeric' (same stages, same Generated)."""
    from dynamica.generator.pipeline import Generated
    from dynamica.generator.topology import build_topology
    if backend != "cython":
        raise ValueError(f"numeric mode supports backend 'cython' only, not {backend!r}")
    form = check_form(form)
    timings = {}

    def stage(name, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        timings[name] = time.perf_counter() - t0
        if progress is not None:
            progress(name, timings[name])
        return out

    topo = stage("topology", build_topology, spec)
    kin = stage("kinematics", derive_kinematics, spec, topo)
    mod, terms = stage("lower", lower_terms, kin, spec, form)
    arrays = topology_arrays(kin)
    digest = hashlib.sha256(repr((__version__, "numeric", form, mod, arrays, core_digest())).encode()).hexdigest()
    mod = ir.ModuleIR(**{**mod.__dict__, "signature": digest})
    bundle = stage("render", render_numeric, mod, form, arrays, topo.n_bodies)
    return Generated(spec, topo, kin, NumericEquations(form, kin.coordinates, terms), mod, bundle, timings)

"""The regression check: compiled (generated) RHS vs the numeric reference at random states.

Lagrangian modules (state [q, qd]): qdd and the mass matrix against the reference.
Hamiltonian modules (state [q, pm], pm the Poisson momenta (1.49)): at y = [q, momenta(q, qd)]
the RHS must be [qd, pm'] with pm' = d pm/dt of the reference along the Lagrangian motion
(NumericReference.pmd); momenta(q, qd) against the reference's B^T M v; velocities(q, pm) must
give back qd; and the mass matrix. `max_rel_qdd` then holds the worst relative difference of the
state derivative (qd and pm' parts), so `ok` means the same for both kinds. For Hamiltonian
modules the scaled parameters are redrawn until every body inertia M_i is positive definite
(scaling a moment of inertia and the parallel-axis terms independently can make an inertia
about the centre of mass negative, and then the mass matrix or the matrix of (1.65) indefinite).

Parameters are drawn as p0 * U(1 - spread, 1 + spread), and half of them (at random) also
shifted by U(-spread/4, spread/4): a default of zero moves and a small one may change sign, so
a parameter entering with a wrong sign or not at all is seen. Draws whose body inertias are
not positive semidefinite are redrawn (then the shift is dropped). A NaN or infinity in either
result counts as a mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamica.runtime.reference.numeric import NumericReference


@dataclass
class CheckReport:
    model: str
    form: str
    samples: int
    max_rel_qdd: float
    max_rel_mass: float
    max_asym: float
    kind: str = "lagrangian"
    # Hamiltonian modules only (0 otherwise)
    max_rel_momenta: float = 0.0     # momenta(q, qd) vs the reference B^T M v
    max_rel_qd: float = 0.0          # rhs[:n] at [q, pm] vs qd
    max_rel_pmd: float = 0.0         # rhs[n:] vs the reference d pm/dt
    max_rel_velocities: float = 0.0  # velocities(q, pm) vs qd

    def ok(self, rtol=1e-10) -> bool:
        return all(x <= rtol for x in (self.max_rel_qdd, self.max_rel_mass, self.max_asym, self.max_rel_momenta,
                                       self.max_rel_qd, self.max_rel_pmd, self.max_rel_velocities))

    def text(self) -> str:
        verdict = "OK" if self.ok() else "MISMATCH"
        head = f"{self.model} ({self.form}): {self.samples} random states and parameters\n"
        if self.kind == "hamiltonian":
            body = (f"  max relative difference, momenta:      {self.max_rel_momenta:.3e}\n"
                    f"  max relative difference, rhs qd:       {self.max_rel_qd:.3e}\n"
                    f"  max relative difference, rhs pm':      {self.max_rel_pmd:.3e}\n"
                    f"  max relative difference, velocities:   {self.max_rel_velocities:.3e}\n")
        else:
            body = f"  max relative difference, qdd:          {self.max_rel_qdd:.3e}\n"
        return (head + body +
                f"  max relative difference, mass matrix:  {self.max_rel_mass:.3e}\n"
                f"  max relative asymmetry, mass matrix:   {self.max_asym:.3e}\n"
                f"  {verdict} (tolerance 1e-10)")


def _rel(a, b):
    """||a - b|| / max(1, ||b||); infinite when either side is not finite (NaN never agrees)."""
    a, b = np.asarray(a), np.asarray(b)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def _draw(ref, p0, rng, spread):
    """Parameters scaled and (half of them) shifted, with physical body inertias when one of 50
    draws has them; else scaled only (see the module docstring)."""
    for _ in range(50):
        shift = rng.uniform(-spread / 4, spread / 4, p0.shape) * (rng.uniform(size=p0.shape) < 0.5)
        p = p0 * rng.uniform(1 - spread, 1 + spread, p0.shape) + shift
        if ref.physical(p):
            return p
    for _ in range(50):
        p = p0 * rng.uniform(1 - spread, 1 + spread, p0.shape)
        if ref.physical(p):
            break
    return p


def _check_loops(model, ref, samples, seed, params) -> CheckReport:
    """A model with closed loops: q'' is the constrained solution, which the reference (a tree)
    does not compute. At assembled random states about the initial one (default parameters), the
    reference's M q'' - Q must lie in the range of J^T (the loops act by constraint forces only;
    `max_rel_qdd`: the residual of that least-squares fit) and J q'' must equal the module's
    gamma; with J and gamma right (tests/runtime/test_loops.py: against differences of phi), these two
    fix q''. The mass matrix is the tree's, compared as for any model."""
    from dynamica.runtime import assembly as loops
    rng = np.random.default_rng(seed)
    perm = [ref.coordinates.index(c) for c in model.coordinates]
    n, declared = model.n, len(ref.defaults)
    t = float(rng.uniform(0, 2))
    q, qd = model.assemble(t=t, params=params)
    p = model.param_vector(params)
    e_qdd = e_M = e_sym = 0.0
    for _ in range(samples):
        q, qd = model.assemble(q + rng.normal(scale=0.05, size=n), rng.normal(scale=0.5, size=n), t, params, hold=[])
        qdd = model.qdd(q, qd, t, params)
        J, _ = loops.jacobian(model, q, t, params)
        gamma = np.empty(J.shape[0])
        model.module.con_bias(t, q, qd, model.param_vector(params), gamma)
        qr, qdr, qddr = (np.empty(n) for _ in range(3))
        qr[perm], qdr[perm], qddr[perm] = q, qd, qdd
        M, Q = ref.equations(qr, qdr, t, p[:declared])
        r = (M @ qddr - Q)[perm]
        lam = np.linalg.lstsq(J.T, r, rcond=None)[0]
        e_qdd = max(e_qdd, _rel(J.T @ lam, r), _rel(J @ qdd, gamma))
        Mm = model.mass_matrix(q, t, params)
        e_M = max(e_M, _rel(Mm, M[np.ix_(perm, perm)]))
        e_sym = max(e_sym, _rel(Mm, Mm.T))
    return CheckReport(model.name, model.form, samples, e_qdd, e_M, e_sym)


def check_against_reference(model, samples=20, seed=0, spread=0.2, params=None) -> CheckReport:
    """Random q, qd in [-1, 1], t in [0, 2], parameters drawn by `_draw` around the defaults
    overridden by `params` (a dict name -> value)."""
    ref = NumericReference(model.spec)
    if getattr(model, "loops", False):
        return _check_loops(model, ref, samples, seed, params)
    perm = [ref.coordinates.index(c) for c in model.coordinates]
    rng = np.random.default_rng(seed)
    p0 = model.param_vector(params)
    hamiltonian = getattr(model, "kind", "lagrangian") == "hamiltonian"
    e_qdd = e_M = e_sym = e_pm = e_qd = e_pmd = e_vel = 0.0
    for _ in range(samples):
        q, qd, t = rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n), rng.uniform(0, 2)
        p = _draw(ref, p0, rng, spread)
        slots = getattr(model, "slots", None)
        if slots and slots["size"] > slots.get("inputs", slots["states"]):   # inputs and extra states: random too
            first = slots.get("inputs", slots["states"])
            p[first:] = rng.uniform(-1, 1, slots["size"] - first)
        s = p[slots["states"]:slots["size"]] if slots else np.zeros(0)
        qr, qdr = np.empty(model.n), np.empty(model.n)
        qr[perm], qdr[perm] = q, qd
        if hamiltonian:
            pm = np.empty(model.n)
            model.module.momenta(t, q, qd, p, pm)
            e_pm = max(e_pm, _rel(pm, ref.momenta(qr, qdr, t, p)[perm]))
            yd = np.empty(2 * model.n + len(s))
            model.module.rhs(t, np.concatenate([q, pm, s]), p, yd)
            e_qd = max(e_qd, _rel(yd[:model.n], qd))
            e_pmd = max(e_pmd, _rel(yd[model.n:2 * model.n], ref.pmd(qr, qdr, t, p)[perm]))
            vel = np.empty(model.n)
            model.module.velocities(t, q, pm, p, vel)
            e_vel = max(e_vel, _rel(vel, qd))
            e_qdd = max(e_qdd, e_qd, e_pmd)
        else:
            a = np.empty(model.n)
            model.module.qdd(t, q, qd, p, a)
            e_qdd = max(e_qdd, _rel(a, ref.qdd(qr, qdr, t, p)[perm]))
        M = np.empty(model.n * model.n)
        model.module.mass_matrix(t, q, p, M)
        M = M.reshape(model.n, model.n)
        Mr = ref.mass_matrix(qr, t, p)[np.ix_(perm, perm)]
        e_M = max(e_M, _rel(M, Mr))
        e_sym = max(e_sym, _rel(M, M.T))
    if hamiltonian:
        return CheckReport(model.name, model.form, samples, e_qdd, e_M, e_sym, kind="hamiltonian",
                           max_rel_momenta=e_pm, max_rel_qd=e_qd, max_rel_pmd=e_pmd, max_rel_velocities=e_vel)
    return CheckReport(model.name, model.form, samples, e_qdd, e_M, e_sym)

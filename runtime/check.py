"""The regression check: compiled (generated) RHS vs the numeric reference at random states."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamica.runtime.reference import NumericReference


@dataclass
class CheckReport:
    model: str
    form: str
    samples: int
    max_rel_qdd: float
    max_rel_mass: float
    max_asym: float

    def ok(self, rtol=1e-10) -> bool:
        return self.max_rel_qdd <= rtol and self.max_rel_mass <= rtol and self.max_asym <= rtol

    def text(self) -> str:
        verdict = "OK" if self.ok() else "MISMATCH"
        return (f"{self.model} ({self.form}): {self.samples} random states and parameters\n"
                f"  max relative difference, qdd:          {self.max_rel_qdd:.3e}\n"
                f"  max relative difference, mass matrix:  {self.max_rel_mass:.3e}\n"
                f"  max relative asymmetry, mass matrix:   {self.max_asym:.3e}\n"
                f"  {verdict} (tolerance 1e-10)")


def check_against_reference(model, samples=20, seed=0, spread=0.2) -> CheckReport:
    """Random q, qd in [-1, 1], t in [0, 2], parameters scaled by U(1 - spread, 1 + spread)."""
    ref = NumericReference(model.spec)
    perm = [ref.coordinates.index(c) for c in model.coordinates]
    rng = np.random.default_rng(seed)
    p0 = model.param_vector()
    e_qdd = e_M = e_sym = 0.0
    for _ in range(samples):
        q, qd, t = rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n), rng.uniform(0, 2)
        p = p0 * rng.uniform(1 - spread, 1 + spread, p0.shape)
        qr, qdr = np.empty(model.n), np.empty(model.n)
        qr[perm], qdr[perm] = q, qd
        a = np.empty(model.n)
        model.module.qdd(t, q, qd, p, a)
        b = ref.qdd(qr, qdr, t, p)[perm]
        e_qdd = max(e_qdd, np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))
        M = np.empty(model.n * model.n)
        model.module.mass_matrix(t, q, p, M)
        M = M.reshape(model.n, model.n)
        Mr = ref.mass_matrix(qr, t, p)[np.ix_(perm, perm)]
        e_M = max(e_M, np.linalg.norm(M - Mr) / max(1.0, np.linalg.norm(Mr)))
        e_sym = max(e_sym, np.linalg.norm(M - M.T) / max(1.0, np.linalg.norm(M)))
    return CheckReport(model.name, model.form, samples, e_qdd, e_M, e_sym)

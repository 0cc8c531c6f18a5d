"""Energy is conserved over 10 s for conservative models (relative drift <= 1e-8)."""

import numpy as np
import pytest

import dynamica
from dynamica.runtime.reference.numeric import NumericReference

CONSERVATIVE = ["double_pendulum", "star", "spherical_chain", "cardan_chain"]


@pytest.mark.parametrize("name", CONSERVATIVE)
def test_energy_conserved(bundled, name):
    m = bundled(name)
    assert not [f for f in m.spec.forces if f.type in ("generalized_force", "body_force")] and \
        all(f["damping"] in (0, 0.0) for f in m.spec.forces), "model is not conservative"
    ref = NumericReference(m.spec)
    perm = [ref.coordinates.index(c) for c in m.coordinates]

    def energy(q, qd):
        qr, qdr = np.empty(m.n), np.empty(m.n)
        qr[perm], qdr[perm] = q, qd
        return ref.energy(qr, qdr)

    q0, qd0 = m.initial_state()
    qd0 = qd0 + 0.5          # make sure it moves in every coordinate
    r = dynamica.simulate(m, t_end=10.0, output_step=0.5, method="DOP853", rtol=1e-13, atol=1e-13,
                          qd0=qd0)
    E = np.array([energy(q, qd) for q, qd in zip(r.q, r.qd)])
    scale = max(abs(E[0]), np.abs(E - E[0]).max(), 1e-300)
    kinetic = [0.5 * qd @ m.mass_matrix(q) @ qd for q, qd in zip(r.q, r.qd)]
    scale = max(abs(E[0]), max(kinetic))
    drift = np.abs(E - E[0]).max() / scale
    assert drift <= 1e-8, drift
    assert np.ptp(kinetic) > 1e-3 * scale           # energy actually moves between forms

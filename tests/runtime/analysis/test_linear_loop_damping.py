"""The damping of linearised models with closed loops (docs/linear.md: C_z = T^T C T in the independent
coordinates), where it is not zero:

- a damped parallelogram four-bar at its hanging equilibrium against its closed form: the coupler
  translates, th2 = -th1, th3 = th1, so in any one of the coordinates M_z = (m1 + m3) l1^2 / 3 + m2 l1^2,
  K_z = g l1 (m1 / 2 + m2 + m3 / 2), C_z = c1 + c2 + c3 (the three joint dampers) and the damping ratio
  zeta = C_z / (2 sqrt(K_z M_z)) (1e-10);
- the double wishbone (a coil damper and a damped tyre) against central differences of the compiled
  constrained accelerations (runtime/assembly.py, not the derivative kernels) along the velocity of the
  independent coordinate, the others assembled on the loops (1e-6)."""

from __future__ import annotations

import math

import numpy as np

import dynamica
from dynamica.runtime import assembly as loops

from conftest import MODELS, write_model

L1, L0 = 0.3, 0.5                          # crank = rocker, coupler = ground: a parallelogram
M1, M2, M3, G = 1.2, 0.8, 0.5, 9.81
C1, C2, C3 = 0.7, 0.4, 0.25


def _parallelogram():
    rod = lambda m, l: [1e-4, m * l * l / 12, m * l * l / 12]  # noqa: E731
    return {
        "name": "parallelogram",
        "gravity": [0, -G, 0],
        "bodies": [
            {"name": "crank", "parent": "ground", "joint": {"type": "revolute", "axis": "z", "q": "th1"},
             "mass": M1, "com": [L1 / 2, 0, 0], "inertia": rod(M1, L1)},
            {"name": "coupler", "parent": "crank",
             "joint": {"type": "revolute", "axis": "z", "q": "th2", "offset": [L1, 0, 0]},
             "mass": M2, "com": [L0 / 2, 0, 0], "inertia": rod(M2, L0)},
            {"name": "rocker", "parent": "ground",
             "joint": {"type": "revolute", "axis": "z", "q": "th3", "offset": [L0, 0, 0]},
             "mass": M3, "com": [L1 / 2, 0, 0], "inertia": rod(M3, L1)},
        ],
        "loops": [{"name": "pin", "type": "revolute", "body_a": "coupler", "point_a": [L0, 0, 0],
                   "body_b": "rocker", "point_b": [L1, 0, 0], "axis": "z"}],
        "forces": [{"type": "joint_spring_damper", "coordinate": c, "damping": d}
                   for c, d in (("th1", C1), ("th2", C2), ("th3", C3))],
        "initial": {"th1": -1.4, "th2": 1.4, "th3": -1.4},
    }


def test_damped_parallelogram_fourbar_against_its_closed_form(tmp_path):
    model = dynamica.load(str(write_model(tmp_path, _parallelogram())))
    q = np.array([-math.pi / 2, math.pi / 2, -math.pi / 2])
    assert np.max(np.abs(model.constraints(q))) < 1e-14
    lin = dynamica.linearize(model, q=q)
    assert len(lin.coordinates) == 1
    t = abs(float(lin.basis[model.coordinates.index(lin.coordinates[0]), 0]))   # the basis' scale (1 if unit)
    Mz = (M1 + M3) * L1 ** 2 / 3 + M2 * L1 ** 2
    Kz = G * L1 * (M1 / 2 + M2 + M3 / 2)
    Cz = C1 + C2 + C3
    assert abs(lin.M[0, 0] / t ** 2 - Mz) < 1e-10 * Mz
    assert abs(lin.K[0, 0] / t ** 2 - Kz) < 1e-10 * Kz
    assert abs(lin.C[0, 0] / t ** 2 - Cz) < 1e-10 * Cz
    zeta = Cz / (2 * math.sqrt(Kz * Mz))
    assert abs(lin.modes().damping_ratios[0] - zeta) < 1e-10 * zeta


def test_double_wishbone_damping_against_differences_of_the_constrained_accelerations():
    model = dynamica.load(MODELS / "double_wishbone.yaml")
    lin = dynamica.linearize(model)
    ind = [model.coordinates.index(c) for c in lin.coordinates]
    assert len(ind) == 1
    hold = [model.coordinates[i] for i in ind]
    h = 1e-6

    def acc(dz, dv):
        q, qd = lin.q.copy(), np.zeros(model.n)
        q[ind] += dz
        qd[ind] = dv
        q, qd = model.assemble(q, qd, hold=hold + [f"der({c})" for c in hold])
        return loops.solve(model, q, qd)[0][ind]

    Av = (acc(0.0, h) - acc(0.0, -h)) / (2 * h)                  # d q''_ind / d q'_ind
    Aq = (acc(h, 0.0) - acc(-h, 0.0)) / (2 * h)
    assert abs(-lin.C[0, 0] / lin.M[0, 0] - Av[0]) < 1e-6 * abs(Av[0])
    assert abs(-lin.K[0, 0] / lin.M[0, 0] - Aq[0]) < 1e-6 * abs(Aq[0])
    # and the damping ratio those differences give
    zeta = -Av[0] / (2 * math.sqrt(-Aq[0]))
    assert abs(lin.modes().damping_ratios[0] - zeta) < 1e-6 * zeta
    assert 0.1 < zeta < 0.5

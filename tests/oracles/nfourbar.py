"""The N four-bar mechanism of the IFToMM library of computational benchmark problems for
multibody dynamics (problem A02): N + 1 vertical rods hinged to the ground at x = 0, 1, ..., N m,
their tips joined by N horizontal rods; every rod 1 m long, 1 kg, a slender bar; gravity
9.81 m/s^2 along -y; at t = 0 the rods stand vertical and the tip B0 of the first one moves at
1 m/s along +x. All rods pass the horizontal twice a turn, where the mechanism is singular (the
loops' Jacobian loses N of its rank for an instant) and the motion carries on along the
parallelogram branch.

The oracle is independent of the generated equations: on the parallelogram branch every vertical
rod turns by the same angle phi from the x axis and the horizontal rods translate, so

    T = 1/2 m L^2 ((N + 1)/3 + N) phi'^2,   V = m g L ((N + 1)/2 + N) sin(phi)

and phi'' = -(g / L) ((N + 1)/2 + N) / ((N + 1)/3 + N) cos(phi), integrated here with DOP853
at a tolerance far below the one checked.
"""

from __future__ import annotations

import math

import numpy as np

LENGTH, MASS, G = 1.0, 1.0, 9.81


def model_text(n: int, name: str | None = None) -> str:
    """The model file (YAML) of the N four-bar: rods `rod<i>` (coordinates a<i>, the angle from
    the x axis), horizontal rods `bar<i>` on the tips (b<i>, relative to rod i), each closed on
    the tip of rod i + 1 by a revolute loop `pin<i>`."""
    lines = [f"name: {name or f'nfourbar{n}'}",
             "parameters:", f"  L: {{value: {LENGTH}, unit: m}}", f"  m: {{value: {MASS}, unit: kg}}",
             f"  g: {G}", "gravity: [0, -g, 0]", "bodies:"]
    inertia = '[1.0e-6, "m*L**2/12", "m*L**2/12"]'
    for i in range(n + 1):
        lines += [f"  - name: rod{i}", "    parent: ground",
                  f"    joint: {{type: revolute, axis: z, q: a{i}, offset: [{i * LENGTH}, 0, 0]}}",
                  "    mass: m", '    com: ["L/2", 0, 0]', f"    inertia: {inertia}"]
    for i in range(n):
        lines += [f"  - name: bar{i}", f"    parent: rod{i}",
                  f"    joint: {{type: revolute, axis: z, q: b{i}, offset: [L, 0, 0]}}",
                  "    mass: m", '    com: ["L/2", 0, 0]', f"    inertia: {inertia}"]
    lines.append("loops:")
    for i in range(n):
        lines += [f"  - {{name: pin{i}, type: revolute, body_a: bar{i}, point_a: [L, 0, 0], body_b: rod{i + 1}, "
                  "point_b: [L, 0, 0], axis: z}"]
    init = {**{f"a{i}": math.pi / 2 for i in range(n + 1)}, **{f"b{i}": -math.pi / 2 for i in range(n)},
            **{f"der(a{i})": -1.0 / LENGTH for i in range(n + 1)}, **{f"der(b{i})": 1.0 / LENGTH for i in range(n)}}
    lines.append("initial: {" + ", ".join(f"{k}: {v!r}" for k, v in init.items()) + "}")
    return "\n".join(lines) + "\n"


def _signs(coordinates) -> np.ndarray:
    """+1 for the rods' angles a<i>, -1 for the horizontal rods' b<i> (b = -a on the branch)."""
    return np.array([1.0 if c.startswith("a") else -1.0 for c in coordinates])


def branch_state(coordinates, phi: float, rate: float):
    """(q, q') on the parallelogram branch at rod angle phi and rate phi', in the order of
    `coordinates` (the model's)."""
    s = _signs(coordinates)
    return s * phi, s * rate


def reduced_coefficient(n: int) -> float:
    """c of phi'' = -c cos(phi) (module docstring)."""
    return G / LENGTH * ((n + 1) / 2 + n) / ((n + 1) / 3 + n)


def branch_qdd(coordinates, phi: float) -> np.ndarray:
    """q'' on the parallelogram branch at angle phi (any rate: the reduced equation has no
    velocity term), in the order of `coordinates`."""
    n = sum(1 for c in coordinates if c.startswith("b"))
    return _signs(coordinates) * (-reduced_coefficient(n) * math.cos(phi))


def energy(n: int, phi, rate):
    """The total energy on the branch (J)."""
    inertia = MASS * LENGTH ** 2 * ((n + 1) / 3 + n)
    return 0.5 * inertia * np.asarray(rate) ** 2 + MASS * G * LENGTH * ((n + 1) / 2 + n) * np.sin(phi)


def reference(n: int, times) -> tuple:
    """(phi, phi') at `times` from phi(0) = pi/2, phi'(0) = -1 rad/s, by DOP853 at rtol 1e-14."""
    from scipy.integrate import solve_ivp
    c = reduced_coefficient(n)
    times = np.asarray(times, dtype=float)
    sol = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, float(times[-1])), [math.pi / 2, -1.0 / LENGTH],
                    method="DOP853", rtol=1e-14, atol=1e-14, t_eval=times)
    return sol.y[0], sol.y[1]


def b0_x(phi):
    """x of the tip B0 of the first rod (m)."""
    return LENGTH * np.cos(phi)

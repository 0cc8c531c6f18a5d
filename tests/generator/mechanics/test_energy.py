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


ELEMENTS = """name: conservative_elements
parameters: {m: 1.5, k: 40.0, kr: 3.0}
gravity: [0, 0, -9.81]
bodies:
  - {name: arm, parent: ground, joint: {type: revolute, axis: y, q: th}, mass: m, com: [0.3, 0, 0],
     inertia: [0.01, 0.05, 0.05]}
  - {name: bob, parent: arm, joint: [{translate: [0.6, 0, 0]}, {rotate: x, q: a}, {rotate: z, q: b},
     {translate: x, q: s}], mass: 0.7, com: [0.05, 0.02, 0], inertia: [0.01, 0.02, 0.03, 0.001, 0, 0.002]}
forces:
  - {type: limit, coordinate: th, lower: -0.4, upper: 0.5, stiffness: 2.0, decay: 30}
  - {type: bushing, body_a: arm, point_a: [0.6, 0, 0.1], body_b: bob, point_b: [0, 0.05, 0], stiffness: [k, 20, 30],
     rotational_stiffness: [kr, kr, kr]}
  - {type: armature, coordinate: a, inertia: 0.02}
  - {type: joint_spring_damper, coordinate: s, stiffness: k, neutral: 0.1}
  - {type: spring_damper, body_a: ground, point_a: [0, 0.2, 0.5], body_b: bob, point_b: [0, 0, 0],
     free_length: 0.3, stiffness: 25}
initial: {th: 0.2, a: 0.3, b: -0.2, s: 0.05, der(th): 1.0, der(b): 2.0}
outputs: {energy: true}
"""


def test_energy_of_every_conservative_force_element(tmp_path):
    """A limit, a bushing (isotropic rotational stiffness), an armature, a joint spring and a
    spring between points: the reference's energy (each law's own potential, written from
    docs/model_format.md) is conserved over 3 s of motion (1e-8 relative) and equals the compiled
    module's `energy.total` (the generator's potentials) at every row (1e-10)."""
    path = tmp_path / "elements.yaml"
    path.write_text(ELEMENTS)
    m = dynamica.load(str(path))
    ref = NumericReference(m.spec)
    assert ref.coordinates == list(m.coordinates)
    r = dynamica.simulate(m, t_end=3.0, output_step=0.05, method="DOP853", rtol=1e-12, atol=1e-12)
    E = np.array([ref.energy(q, qd) for q, qd in zip(r.q, r.qd)])
    kinetic = np.array([0.5 * qd @ m.mass_matrix(q) @ qd for q, qd in zip(r.q, r.qd)])
    scale = max(abs(E[0]), kinetic.max())
    assert np.abs(E - E[0]).max() <= 1e-8 * scale
    assert np.ptp(kinetic) > 0.1 * scale                  # the elements exchange energy with the motion
    assert np.abs(E - r.outputs["energy.total"]).max() <= 1e-10 * scale


def test_energy_refuses_a_force_without_potential(tmp_path):
    path = tmp_path / "pushed.yaml"
    path.write_text(ELEMENTS.replace("forces:\n", "forces:\n  - {type: generalized_force, coordinate: th, value: 1}\n"))
    ref = NumericReference(dynamica.load(str(path)).spec)
    with pytest.raises(ValueError, match="generalized_force_0.*no potential"):
        ref.energy(np.zeros(4), np.zeros(4))


CONTACTS = """
name: pressed
parameters: {k: 2.0e4}
gravity: [0, 0, -9.81]
bodies:
  - {name: ball, parent: ground, joint: {type: free, q: [x, y, z, rx, ry, rz]}, mass: 1, com: [0, 0, 0],
     inertia: [0.004, 0.004, 0.004]}
  - {name: block, parent: ground, joint: [{translate: z, q: h}], mass: 2, com: [0, 0, 0], inertia: [0.01, 0.01, 0.01]}
contact:
  shapes:
    floor: {type: plane, body: ground}
    ball: {type: sphere, body: ball, radius: 0.1}
    block: {type: box, body: block, size: [0.2, 0.3, 0.1], at: [1, 0, 0]}
  defaults: {stiffness: k, exponent: 1.3}
outputs: {energy: true}
"""


def test_contact_energy_against_the_compiled_potential(tmp_path):
    """The reference's elastic energy of the contact law (k delta^(e+1) / (e+1) per point, its own
    geometry) equals the compiled `energy.total` at random states in and out of penetration
    (1e-10 relative), and the elastic part is there (the energy with k = 0 differs)."""
    path = tmp_path / "pressed.yaml"
    path.write_text(CONTACTS)
    m = dynamica.load(str(path))
    ref = NumericReference(m.spec)
    assert ref.coordinates == list(m.coordinates)
    rng = np.random.default_rng(3)
    pressed = 0
    soft = ref.defaults.copy()
    soft[[n for n, _ in ref.slots].index("k")] = 0.0
    for _ in range(20):
        q = rng.uniform(-0.3, 0.3, m.n)
        q[m.coordinates.index("z")] = rng.uniform(0.07, 0.12)
        q[m.coordinates.index("h")] = rng.uniform(0.03, 0.06)
        qd = rng.normal(size=m.n)
        out = m.outputs(0.0, q, qd)
        pressed += ref.energy(q, qd) - ref.energy(q, qd, params=soft) > 1e-3
        assert abs(out["energy.total"] - ref.energy(q, qd)) <= 1e-10 * max(1.0, abs(ref.energy(q, qd)))
    assert pressed >= 5

"""Helpers shared by the tests: relative errors and the random trees several suites compile."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import numpy as np

from conftest import write_model
from oracles.pin_trees import random_tree, write_yaml


def rel_err(a, b) -> float:
    """||a - b|| / max(1, ||b||) (Euclidean norms of the flattened arrays)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def max_rel_err(a, b) -> float:
    """max_k |a_k - b_k| / max(1, |b_k|): every entry on its own scale."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))) if a.size else 0.0


#: random trees of oracles/pin_trees.py compiled by the backend and mode suites: name -> (kind, bodies,
#: joint tokens, seed, keywords); 1-, 2-, 3-DOF, custom and welded joints, a free base
TREES = {"chain6_123": ("chain", 6, (1, 2, 3), 201, {}),
         "mixed8_custom_welded": ("mixed", 8, (1, 2, 3, "custom", "welded"), 202, {}),
         "star9_free": ("star", 9, (1, 2, 3), 203, {"base_joint": "free"})}


def central(f, x, h=1e-6):
    """Columns d f / d x_j by central differences."""
    x = np.asarray(x, dtype=float)
    cols = []
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = h
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.array(cols).T


def scaled_err(a, b) -> float:
    """Largest difference over max(1, largest |b|): relative for large values, absolute near zero."""
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def tree_path(name: str, folder) -> Path:
    """The YAML file of random tree `name` (TREES) in `folder`, written on first use."""
    kind, n, tokens, seed, kw = TREES[name]
    path = Path(folder) / f"{name}.yaml"
    if not path.exists():
        write_yaml(random_tree(kind, n, tokens, np.random.default_rng(seed), name=name, **kw), path)
    return path


# small models several suites build (written into a test's tmp_path)

def cart_pendulum(tmp_path, start=(0.1, 0.2)):
    """A carriage (x, sliding vertically) on a spring k = 400 N/m carrying a pendulum (th about y,
    1 kg at 0.5 m) under gravity: stiffnesses 400 N/m and m g l = 4.9 N m/rad."""
    return write_model(tmp_path, {
        "name": "cart_pendulum", "parameters": {"M": 2.0, "m": 1.0, "l": 0.5, "g": 9.81, "k": 400.0},
        "gravity": [0, 0, "-g"],
        "bodies": [{"name": "cart", "parent": "ground", "joint": [{"translate": "z", "q": "x"}], "mass": "M",
                    "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]},
                   {"name": "rod", "parent": "cart", "joint": [{"rotate": "y", "q": "th"}], "mass": "m",
                    "com": [0, 0, "-l"], "inertia": [0, 0, 0]}],
        "forces": [{"type": "joint_spring_damper", "coordinate": "x", "stiffness": "k"}],
        "initial": {"x": start[0], "th": start[1]}}, "cart_pendulum.yaml")


def n_pendulum(tmp_path, N):
    bodies = [{"name": f"p{i}", "parent": "ground" if i == 1 else f"p{i - 1}",
               "joint": ([{"translate": [0, 0, -0.7]}] if i > 1 else []) + [{"rotate": "x", "q": f"a{i}"}],
               "mass": 1.3, "com": [0, 0, -0.7], "inertia": [0, 0, 0]} for i in range(1, N + 1)]
    return write_model(tmp_path, {"name": f"pendulum{N}", "gravity": [0, 0, -9.81], "bodies": bodies,
                                  "initial": {f"a{i}": 0.2 * (-1) ** i for i in range(1, N + 1)}}, f"p{N}.yaml")


#: a rigid pendulum (m, l, J about the centre of mass, g) whose q'' has a closed form
M, L, J, G = 1.3, 0.9, 0.05, 9.81
PENDULUM = {
    "name": "pendulum",
    "parameters": {"m": {"value": M}, "l": {"value": L}, "J": {"value": J}, "g": {"value": G}},
    "gravity": [0, 0, "-g"],
    "bodies": [{"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}],
                "mass": "m", "com": [0, 0, "-l"], "inertia": ["J", "J", "J"]}],
    "initial": {"phi": 0.7},
}


def model_universal_spherical():
    return {
        "name": "uj_sph",
        "parameters": {"m1": 1.0, "m2": 0.7, "l": 0.9, "g": 9.81, "off": [0.05, -0.02, -0.9]},
        "gravity": [0.5, 0, "-g"],
        "bodies": [
            {"name": "arm", "parent": "ground",
             "joint": {"type": "universal", "q": ["a", "b"], "axes": ["y", "x"],
                       "offset": [0.1, 0.2, 0.3]},
             "mass": "m1", "com": [0.01, 0.02, "-l/2"],
             "inertia": [0.08, 0.07, 0.02, 0.003, -0.004, 0.002]},
            {"name": "ball", "parent": "arm",
             "joint": {"type": "spherical", "q": ["p", "r", "y"],
                       "offset": ["off[0]", "off[1]", "off[2]"]},
             "mass": "m2", "com": [0.03, -0.02, -0.15],
             "inertia": [0.02, 0.03, 0.025, -0.002, 0.001, 0.003]},
        ],
        "forces": [
            {"type": "joint_spring_damper", "coordinate": "y", "stiffness": 0.5, "damping": 0.05},
        ],
    }


def model_free_body():
    return {
        "name": "free_body",
        "parameters": {"m": 1.5, "g": 9.81, "k": 40.0, "d": 0.3},
        "gravity": [0, 0, "-g"],
        "bodies": [
            {"name": "box", "parent": "ground",
             "joint": {"type": "free", "q": ["x", "y", "z", "rx", "ry", "rz"],
                       "offset": [0, 0, 1.0]},
             "mass": "m", "com": [0.02, 0.01, -0.03],
             "inertia": [0.1, 0.15, 0.2, 0.01, -0.005, 0.008]},
        ],
        "forces": [
            {"type": "spring_damper", "body_a": "ground", "point_a": [0, 0, 2.0],
             "body_b": "box", "point_b": [0.1, 0.05, 0.1], "stiffness": "k", "damping": "d",
             "free_length": 0.6},
        ],
    }


def oscillator(tmp_path, inputs=False):
    """A slider x of mass m on a spring k with damping c and a cubic spring k3 x^3 (k3 = 0 by
    default): m x'' = -k x - c x' + k3 x^3 (+ u with `inputs`: the model's input u, a force on x).
    x starts at 0."""
    name = "oscillator_u" if inputs else "oscillator"
    forces = [{"type": "joint_spring_damper", "coordinate": "x", "stiffness": "k", "damping": "c"},
              {"type": "generalized_force", "coordinate": "x", "value": "k3*x**3"}]
    data = {"name": name, "parameters": {"m": 2.0, "k": 50.0, "c": 0.3, "k3": 0.0},
            **({"inputs": ["u"]} if inputs else {}),
            "bodies": [{"name": "slider", "parent": "ground", "joint": [{"translate": "x", "q": "x"}], "mass": "m",
                        "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]}],
            "forces": forces + ([{"type": "generalized_force", "coordinate": "x", "value": "u"}] if inputs else [])}
    return write_model(tmp_path, data, f"{name}.yaml")


def mujoco_scene(tmp_path, fixed_geom: str, moving_geom: str, file: str, body="k", at="0 0 0.5"):
    """One free body (`body`, placed `at`) with `moving_geom` above `fixed_geom` in the world, written
    as MJCF and loaded both ways: (our model, its one contact pair's name, the MuJoCo oracle of its
    coordinates, MuJoCo's MjModel and MjData)."""
    import warnings

    import mujoco

    import dynamica
    from dynamica.generator.spec.model import DynamicaWarning

    from oracles.mujoco_mjcf import MujocoOracle
    path = tmp_path / file
    path.write_text(f"""<mujoco><option gravity="0 0 -9.81"/><worldbody>
      {fixed_geom}
      <body name="{body}" pos="{at}"><freejoint name="{body}"/>{moving_geom}</body>
      </worldbody></mujoco>""")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        model = dynamica.load(path)
    (pair,) = [f["name"] for f in model.spec.forces if f.type == "contact"]
    m = mujoco.MjModel.from_xml_path(str(path))
    return model, pair, MujocoOracle(path, model.coordinates), m, mujoco.MjData(m)


#: a contact scene of every narrow phase of planes, spheres, capsules and boxes on free bodies k, p, r
#: (plane-sphere, plane-capsule, plane-box, sphere-capsule, capsule-capsule, a body-fixed plane):
#: tests/generator/mechanics/test_contact_pairs.py and test_contact_broad.py
CONTACT_SHAPES = {"floor": {"type": "plane", "body": "ground", "normal": [0.1, -0.2, 1], "at": [0, 0, 0.01]},
                  "tilt": {"type": "plane", "body": "k", "at": [0, 0, 0.1], "rpy": [3.1, 0.1, 0]},
                  "ball": {"type": "sphere", "body": "p", "radius": 0.1, "at": [0.01, 0.02, 0]},
                  "rod": {"type": "capsule", "body": "r", "radius": 0.05, "length": 0.4, "rpy": [0.2, 1.3, 0]},
                  "blk": {"type": "box", "body": "k", "size": [0.2, 0.3, 0.1], "rpy": [0.1, 0, 0.2]},
                  "pin": {"type": "capsule", "body": "k", "radius": 0.04, "length": 0.3, "at": [0, 0, 0.2],
                          "rpy": [1.5, 0, 0.3]}}
CONTACT_PAIRS = [{"a": "floor", "b": x} for x in ("ball", "rod", "blk")] + [
    {"a": "ball", "b": "pin"}, {"a": "rod", "b": "pin"}, {"a": "ball", "b": "rod"}, {"a": "tilt", "b": "ball"}]


#: the C compilers of this machine the exported library is compiled with, and their flags (no warning
#: allowed): tests/runtime/export/
C_COMPILERS = [c for c in ("gcc", "clang") if shutil.which(c)]
C_FLAGS = ["-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic"]


def nfourbar_models(folder, sizes=(1, 2)) -> dict:
    """The IFToMM A02 N four-bar (tests/oracles/nfourbar.py's model file) loaded for each N."""
    import dynamica

    from oracles import nfourbar as nf
    out = {}
    for n in sizes:
        path = folder / f"nfourbar{n}.yaml"
        path.write_text(nf.model_text(n))
        out[n] = dynamica.load(str(path))
    return out


@contextlib.contextmanager
def within_seconds(seconds: int):
    """Fail the test when the block takes longer than `seconds` (SIGALRM: a run that would crawl for
    minutes fails in that time instead)."""
    import signal

    import pytest

    def stop(signum, frame):
        pytest.fail(f"did not finish in {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(int(seconds))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def within_bound(call, bound: float):
    """`call()`'s result, its CPU time (this process's: what other processes of a loaded machine run
    meanwhile is not counted, a runaway evaluation is) checked under `bound` seconds. A call over the
    bound runs once more and keeps the shorter time: a hang is slow both times, a stall of the process
    is not (a full garbage collection; a 4 ms case measured 1.08 s of wall time once in CI while other
    jobs ran; tests/test_fuzz_models.py's `check`)."""
    import time
    t0 = time.process_time()
    result = call()
    elapsed = time.process_time() - t0
    if elapsed >= bound:
        t0 = time.process_time()
        call()
        elapsed = min(elapsed, time.process_time() - t0)
    assert elapsed < bound, f"{elapsed:.2f} s, over the bound of {bound} s"
    return result

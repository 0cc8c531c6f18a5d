"""Importers: robot descriptions in other formats (URDF, MJCF) read into the mapping a model file gives.

May import: dynamica.errors, dynamica.generator.spec. Never the runtime.
"""

from pathlib import Path

from dynamica.errors import ModelError, Problem


def existing_file(path, what: str) -> Path:
    """`path` as a Path when it names a file; else one ModelError naming it (`what`: "a URDF file")."""
    path = Path(path)
    if path.is_dir() or not path.is_file():
        raise ModelError(str(path), [Problem("", f"is a directory, expected {what}" if path.is_dir()
                                            else "file not found")])
    return path


# ---------------------------------------------------------------- what URDF and MJCF share
#: joint torques as inputs (the importers' `torques` option): "inputs" (default) gives every
#: hinge/revolute/continuous and slide/prismatic joint an input `tau_<joint>`, a generalized force
#: on its coordinate (Pinocchio's tau of aba(q, v, tau), MuJoCo's qfrc_applied); "off" leaves them out
TORQUE_MODES = ("inputs", "off")

#: Coulomb friction f of a joint as one regularised law, f tanh(q' / friction_velocity): below the
#: stiction velocity v_s the force grows as a steep viscous one (slope f / v_s), above it it is
#: f to within 1 - tanh(3) = 0.5 % at 3 v_s. v_s = 0.01 rad/s or m/s: a UR5 with the friction
#: of its joints at 2 N m simulates 3 s with adams in a few times the time without friction
#: (benchmarks/bench_friction.py), where sign(q') stalls every integrator at the first reversal.
FRICTION_VELOCITY = {"value": 0.01, "unit": "rad/s or m/s",
                     "description": "Coulomb friction f tanh(q'/friction_velocity): the stiction velocity, "
                                    "at which the force is 76 % of f (99.5 % at 3 times it)"}


def coulomb_friction(f: str, q: str, velocity: str) -> str:
    """The generalized force of Coulomb friction `f` (a parameter) on coordinate `q`."""
    return f"-{f}*tanh(der({q})/{velocity})"


def check_torques(file, torques) -> list:
    """Problems of the `torques` option (empty when it is one of TORQUE_MODES)."""
    if torques in TORQUE_MODES:
        return []
    return [Problem("torques", f"expected one of {', '.join(TORQUE_MODES)}, found {torques!r}")]

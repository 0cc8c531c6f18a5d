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

#: Coulomb friction f of a joint as one regularised law, f tanh(q' / v_s): below the stiction
#: velocity v_s (the parameter `friction_velocity`) the force grows as a steep viscous one (slope
#: f / v_s), above it it is f to within 1 - tanh(3) = 0.5 % at 3 v_s. Each importer has its
#: default v_s (`friction_velocity`):
#:   MJCF frictionloss 0.01: MuJoCo's friction loss is a constraint of its solver (it holds at rest
#:     up to f), which a steep slope approaches;
#:   URDF friction 0.2, chosen by cost: the UR5 falling for 3 s with adams, friction 2 N m and
#:     damping 0.5 on every joint, against the same robot without friction
#:     (benchmarks/bench_friction.py, benchmarks/results/friction.txt, shortest of 11 interleaved
#:     runs): RHS evaluations relative 50x at v_s = 0.01, 20x at 0.03, 7.9x at 0.1, 4.9x at 0.2,
#:     3.7x at 0.3; the time relative 40x, 17x, 6.3x, 4.1x, 3.1x in a quiet run, up to twice
#:     that under load (a 1 ms baseline). -f sign(q') stalled every integrator at the first
#:     reversal of q'.
MJCF_FRICTION_VELOCITY = 0.01
URDF_FRICTION_VELOCITY = 0.2


def friction_velocity(value: float) -> dict:
    """The parameter `friction_velocity` (v_s of the law above) with its default."""
    return {"value": value, "unit": "rad/s or m/s",
            "description": "Coulomb friction f tanh(q'/friction_velocity): the stiction velocity, at which the "
                           "force is 76 % of f (99.5 % at 3 times it)"}


def coulomb_friction(f: str, q: str, velocity: str) -> str:
    """The generalized force of Coulomb friction `f` (a parameter) on coordinate `q`."""
    return f"-{f}*tanh(der({q})/{velocity})"


def check_torques(file, torques) -> list:
    """Problems of the `torques` option (empty when it is one of TORQUE_MODES)."""
    if torques in TORQUE_MODES:
        return []
    return [Problem("torques", f"expected one of {', '.join(TORQUE_MODES)}, found {torques!r}")]

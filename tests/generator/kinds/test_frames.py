"""Operational-space kinematics (model.frame, generator/kinds/frames.py) against Pinocchio on the
same URDF files (example-robot-data), eight robots: the UR5 and UR3, the Panda (with its mimic
finger), the Kinova arm, Unitree's Z1, the Allegro hand (16 DOF, four fingers) and both double
pendulums (one with continuous joints, Pinocchio's (cos, sin) coordinates). At random states: the
placement (framesForwardKinematics: oMf), the frame Jacobian in LOCAL, WORLD and
LOCAL_WORLD_ALIGNED (getFrameJacobian), the spatial velocity and acceleration (getFrameVelocity,
getFrameAcceleration) and the classical acceleration (getFrameClassicalAcceleration) in the
three references, and J'q' (the classical acceleration at q'' = 0), each through the Frame's
methods and its prepared functions (frame_function, with `out=`), all to 1e-12 scaled (both are
exact recursions in double precision: measured agreement ~1e-15; the brief asks 1e-10). The
end links of every robot and every link of the UR5 run in the fast set, every link of every
robot in the slow one (a frames module per link). A point `at` of a body is compared with a
Pinocchio frame added at that placement. A name that is no body is one error naming it."""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")
pytest.importorskip("yourdfpy")

import dynamica  # noqa: E402
from dynamica.errors import ModelError  # noqa: E402
from dynamica.generator.spec.model import DynamicaWarning  # noqa: E402

from oracles.pin_urdf import coordinate_map, identifier, pin_model, pin_state, robot_file  # noqa: E402

TOL = 1e-12
# robot: (file, the end links checked in the fast set; None: every link)
ROBOTS = {"ur5": ("robots/ur_description/urdf/ur5_robot.urdf", None),
          "ur3": ("robots/ur_description/urdf/ur3_robot.urdf", ["tool0"]),
          "panda": ("robots/panda_description/urdf/panda.urdf", ["panda_link7", "panda_hand", "panda_leftfinger"]),
          "kinova": ("robots/kinova_description/robots/kinova.urdf", ["j2s6s200_end_effector",
                                                                      "j2s6s200_link_finger_tip_2"]),
          "z1": ("robots/z1_description/urdf/z1.urdf", ["gripperMover"]),
          "allegro": ("robots/allegro_hand_description/urdf/allegro_right_hand.urdf", ["link_3.0_tip",
                                                                                       "link_15.0_tip"]),
          "double_pendulum": ("robots/double_pendulum_description/urdf/double_pendulum.urdf", ["link2"]),
          "double_pendulum_continuous": ("robots/double_pendulum_description/urdf/double_pendulum_continuous.urdf",
                                         ["link2"])}
REFS = {"LOCAL": pin.ReferenceFrame.LOCAL, "WORLD": pin.ReferenceFrame.WORLD,
        "LOCAL_WORLD_ALIGNED": pin.ReferenceFrame.LOCAL_WORLD_ALIGNED}


def scaled_err(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, np.max(np.abs(b))))


@lru_cache(maxsize=None)
def _robot(name):
    """(file, model, Pinocchio's model) of a robot, loaded once per session."""
    path = robot_file(ROBOTS[name][0])
    if path is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        return path, dynamica.load(path, limits=False), pin_model(path)   # (Pinocchio models no stops)


def _compare(model, pmodel, frame, fid, seed):
    """Every quantity of `frame` against Pinocchio's frame `fid` at 3 random states."""
    data = pmodel.createData()
    cmap = coordinate_map(pmodel, list(model.coordinates))
    order = np.zeros(model.n, dtype=int)
    for _, iv, _, idx in cmap:
        order[idx] = np.arange(iv, iv + len(idx))
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(3):
        q, qd, qdd = (rng.uniform(-1.5, 1.5, model.n) for _ in range(3))
        qp, vp = pin_state(pmodel, cmap, q, qd)
        ap = np.zeros(pmodel.nv)
        ap[order] = qdd
        pin.forwardKinematics(pmodel, data, qp, vp, ap)
        pin.updateFramePlacements(pmodel, data)
        pin.computeJointJacobians(pmodel, data, qp)
        pos, R = frame.placement(q)
        errs = [scaled_err(pos, data.oMf[fid].translation), scaled_err(R, data.oMf[fid].rotation)]
        out = np.empty(12)
        frame.function("placement")(q, out=out)                   # the prepared function, into `out`
        errs += [scaled_err(out[:3], data.oMf[fid].translation), scaled_err(out[3:], data.oMf[fid].rotation.ravel())]
        for ref, pref in REFS.items():
            J = pin.getFrameJacobian(pmodel, data, fid, pref)[:, order]
            Jout, v6, a6, c6 = np.empty((6, model.n)), np.empty(6), np.empty(6), np.empty(6)
            frame.function("jacobian", ref)(q, out=Jout)
            frame.function("velocity", ref)(q, qd, out=v6)
            frame.function("acceleration", ref)(q, qd, qdd, out=a6)
            frame.function("classical", pref)(list(q), list(qd), list(qdd), out=c6)   # lists: the checked path
            errs += [scaled_err(Jout, J), scaled_err(v6, pin.getFrameVelocity(pmodel, data, fid, pref).vector),
                     scaled_err(a6, pin.getFrameAcceleration(pmodel, data, fid, pref).vector),
                     scaled_err(c6, pin.getFrameClassicalAcceleration(pmodel, data, fid, pref).vector),
                     scaled_err(frame.jacobian(q, ref, out=np.empty((6, model.n))), J),
                     scaled_err(frame.jacobian(q, ref), J),
                     scaled_err(frame.velocity(q, qd, ref), pin.getFrameVelocity(pmodel, data, fid, pref).vector),
                     scaled_err(frame.acceleration(q, qd, qdd, ref),
                                pin.getFrameAcceleration(pmodel, data, fid, pref).vector),
                     scaled_err(frame.acceleration(q, qd, qdd, ref, classical=True),
                                pin.getFrameClassicalAcceleration(pmodel, data, fid, pref).vector)]
        pin.forwardKinematics(pmodel, data, qp, vp, np.zeros(pmodel.nv))
        for ref in REFS:
            b = pin.getFrameClassicalAcceleration(pmodel, data, fid, REFS[ref]).vector
            errs.append(scaled_err(frame.bias(q, qd, ref), b))
            errs.append(scaled_err(frame.function("bias", ref)(q, qd), b))
        for ref in ("LOCAL", "LOCAL_WORLD_ALIGNED"):
            b = frame.bias(q, qd, ref)
            # J q'' + J'q' is the classical acceleration
            errs.append(scaled_err(frame.jacobian(q, ref) @ qdd + b,
                                   frame.acceleration(q, qd, qdd, ref, classical=True)))
        worst = max(worst, *errs)
    return worst


def _check_links(name, links):
    path, model, pmodel = _robot(name)
    links = links or [pmodel.frames[k].name for k in range(pmodel.nframes)
                      if pmodel.frames[k].type == pin.FrameType.BODY]
    bodies = {b.name for b in model.spec.bodies}
    checked = 0
    for k, link in enumerate(links):
        body = identifier(link)
        if body not in bodies:                   # Pinocchio's universe-attached root has no body here
            continue
        worst = _compare(model, pmodel, model.frame(body), pmodel.getFrameId(link, pin.FrameType.BODY), k)
        assert worst < TOL, (link, worst)
        checked += 1
    assert checked >= 1


@pytest.mark.parametrize("name", list(ROBOTS))
def test_frames_match_pinocchio(name):
    _check_links(name, ROBOTS[name][1])


# the slow set in parts of at most ~8 links (a frames module each, ~3 s to generate on a loaded machine)
PARTS = {"panda": 2, "kinova": 2, "allegro": 4}


@pytest.mark.slow
@pytest.mark.parametrize("name, part", [(n, k) for n, (_, links) in ROBOTS.items() if links is not None
                                        for k in range(PARTS.get(n, 1))])
def test_every_link_matches_pinocchio(name, part):
    _, _, pmodel = _robot(name)
    links = [f.name for f in pmodel.frames if f.type == pin.FrameType.BODY]
    _check_links(name, links[part::PARTS.get(name, 1)])


def test_a_point_of_a_body():
    """model.frame(body, at=p): Pinocchio's frame added at the placement (I, p) in that body."""
    path, model, _ = _robot("ur5")
    pmodel = pin_model(path)                     # (a frame is added to it: not the shared one)
    parent = pmodel.frames[pmodel.getFrameId("wrist_3_link", pin.FrameType.BODY)]
    at = np.array([0.02, -0.05, 0.13])
    place = parent.placement * pin.SE3(np.eye(3), at)
    fid = pmodel.addFrame(pin.Frame("tcp", parent.parentJoint, parent.parentFrame if hasattr(parent, "parentFrame")
                                    else parent.previousFrame, place, pin.FrameType.OP_FRAME))
    assert _compare(model, pmodel, model.frame("wrist_3_link", at=at), fid, 9) < TOL


def test_unknown_body_is_an_error_naming_it():
    _, model, _ = _robot("ur5")
    with pytest.raises(ModelError, match=r"frame\('tool'\).*no body or frame named 'tool'.*did you mean.*tool0"):
        model.frame("tool")
    with pytest.raises(ValueError, match="reference 'GLOBAL'"):
        model.frame("tool0").jacobian(np.zeros(6), "GLOBAL")
    with pytest.raises(ValueError, match="reference 'GLOBAL'"):
        model.frame_function("tool0", "jacobian", "GLOBAL")
    with pytest.raises(ValueError, match="frame function 'jacobians': expected one of placement, jacobian"):
        model.frame_function("tool0", "jacobians")
    with pytest.raises(ModelError, match="no body or frame named 'tool'"):
        model.frame_function("tool", "jacobian")
    jac = model.frame_function("tool0", "jacobian")
    with pytest.raises(ValueError, match=r"`q` has length 5, expected 6"):
        jac(np.zeros(5))
    with pytest.raises(ValueError, match=r"`out` must be a writable C-contiguous float64 array of shape \(6, 6\)"):
        jac(np.zeros(6), out=np.zeros((6, 6), order="F")[:, :5])


def test_command_line_prints_the_frame(capsys):
    """`dynamica frame MODEL BODY --q ...`: the position printed is Pinocchio's oMf (to the 6
    digits printed); an unknown body is one error line naming it, exit status 2."""
    from dynamica.runtime.cli.main import main
    path, model, pmodel = _robot("ur5")
    assert main(["frame", str(path), "tool0", "--q", "elbow_joint=0.5", "shoulder_lift_joint=-0.7", "-q"]) == 0
    out = capsys.readouterr().out
    pos = np.array([float(x) for x in out.split("position [")[1].split("]")[0].split()])
    data = pmodel.createData()
    cmap = coordinate_map(pmodel, list(model.coordinates))
    q = np.zeros(model.n)
    q[model.coordinates.index("elbow_joint")], q[model.coordinates.index("shoulder_lift_joint")] = 0.5, -0.7
    pin.framesForwardKinematics(pmodel, data, pin_state(pmodel, cmap, q, q)[0])
    assert np.abs(pos - data.oMf[pmodel.getFrameId("tool0")].translation).max() < 1e-6
    assert "Jacobian (6 x 6" in out
    assert main(["frame", str(path), "tool", "-q"]) == 2
    assert "no body or frame named 'tool'" in capsys.readouterr().err

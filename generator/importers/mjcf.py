"""MJCF (MuJoCo's XML) models as models (docs/mjcf.md): an MJCF file becomes the mapping a YAML
model file would hold, which then goes through the normal loader (loader.load), as a URDF file
does (generator/importers/urdf.py).

The file is compiled by the maintained `mujoco` package (MjModel.from_xml_path) and the resolved
tree is read from the compiled model: defaults classes applied, angles in radians whatever the
`angle` compiler setting, inertias computed from geoms where the file asks for it, body frames
(body_pos, body_quat), inertial frames (body_ipos, body_iquat, body_inertia), joint anchors and
axes in body coordinates. The numbers are then those MuJoCo simulates.

Mapping (MuJoCo's kinematics, mj_kinematics: a body's frame is placed by body_pos/body_quat in
its parent's, then its joints move it in order, each in the frame the previous ones left):
  body                 -> body of that name (`body<id>` when unnamed); world is the ground
  body_pos, body_quat  -> translate [x, y, z], then rotate z by yaw, y by pitch, x by roll
  hinge (anchor p)     -> translate p, rotate about the axis by a coordinate named after the
                          joint (minus its `ref`), translate -p
  slide                -> translate along the axis by the coordinate (minus its `ref`)
  ball (anchor p)      -> translate p, Cardan rotations x, y, z by <joint>_rx, _ry, _rz,
                          translate -p (MuJoCo's quaternion as three angles)
  free                 -> a free joint <joint>_x, _y, _z, _rx, _ry, _rz (translations along the
                          ground axes, then Cardan rotations), starting at the body's place
  inertial             -> parameters <body>_mass, <body>_com, <body>_inertia (the principal
                          inertia rotated into the body frame, R diag(I) R^T)
  damping, stiffness   -> joint_spring_damper (neutral: springref); on a ball's or a free
                          joint's rotation a bushing's rotational damping
  armature             -> an `armature` element: added to the coordinate's diagonal of M; on a
                          free joint's (or a world ball joint's) rotation, the same on the three,
                          added to the body's rotational inertia (exact: _rotation_armature); on
                          a ball joint whose parent moves, a `rotation_armature` element
  hinge, slide joints  -> an input tau_<joint> each (torques="inputs", the default): a generalized
                          force on the coordinate, added to the actuators' (MuJoCo's qfrc_applied)
  motor actuators      -> inputs u_<actuator>, generalized_force gear*gain*u (clamped to
                          ctrlrange/forcerange when MuJoCo clamps); servos' affine bias; on
                          fixed tendons through their coefficients
  fixed tendon springs -> generalized_force c_i (-k (L - L0) - d L') on each joint
  geoms                -> the body's `visual:` (sphere, box, cylinder; capsule as a cylinder
                          with two spheres; ellipsoid as a sphere)
  site on a body       -> frames: {<site>: {body, at: site_pos, rpy: of site_quat}} (model.frame)
  option gravity       -> gravity [0, 0, -g] with the parameter g, or a vector parameter
  equality connect     -> a spherical loop (docs/loops.md); weld -> a weld loop
Contacts, joint limits, friction loss, other equality constraints, tendons, fluid forces,
sensors and the actuators this does not model are named in one warning; what would change the motion
without a way to switch it off in MuJoCo either (a ball joint's spring, other armature on rotations
of a ball or free joint, a spatial tendon's spring) is a ModelError naming the element.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from dynamica.errors import ModelError, Problem
from dynamica.generator.importers import (
    MJCF_FRICTION_VELOCITY,
    check_torques,
    coulomb_friction,
    existing_file,
    friction_velocity,
)
from dynamica.generator.importers.urdf import IdentifierNames, cleaned, rpy_of, yaml_num
from dynamica.generator.spec.contact_sections import PAIR_TYPES

SUFFIXES = (".xml", ".mjcf")
ACTUATORS = ("inputs", "off")
CONTACTS = (True, False, "ground")


def check_options(file, actuators="inputs", limits=True, frictionloss=False, contacts=True, torques="inputs",
                  saturate=False, broad_phase="auto", **other) -> dict:
    """The import options of an MJCF file: actuators="inputs" (each an input u_<actuator>) or
    "off" (left out, as MuJoCo's actuation flag off); torques="inputs" (an input tau_<joint> per
    hinge and slide joint, MuJoCo's qfrc_applied) or "off"; limits=False leaves out the joint ranges
    (default: `stop` forces), frictionloss=True (a regularised Coulomb force); contacts=False leaves the
    geoms' contacts out, contacts="ground" keeps the pairs with a geom fixed to the ground (default:
    sphere, capsule, box and plane geoms collide as MuJoCo's filters say; many pairs run through the
    broad phase, docs/contact.md: broad_phase="auto" (above 64 pairs), True or False); saturate=True
    clamps the torque inputs to their joint's `actuatorfrcrange` (as URDF's to `effort`); URDF's other
    options are an error."""
    problems = check_torques(file, torques)
    if saturate and torques == "off":
        problems.append(Problem("saturate", "saturates the torque inputs, which torques='off' leaves out"))
    if other:
        problems.append(Problem("", f"the options {', '.join(sorted(other))} are for URDF files; an MJCF file "
                                    "takes actuators='inputs' or 'off', torques, saturate, limits, frictionloss, "
                                    "contacts and broad_phase"))
    if actuators not in ACTUATORS:
        problems.append(Problem("actuators", f"expected one of {', '.join(ACTUATORS)}, found {actuators!r}"))
    if contacts not in CONTACTS:
        problems.append(Problem("contacts", f"expected True, False or 'ground', found {contacts!r}"))
    if broad_phase not in (True, False, "auto"):
        problems.append(Problem("broad_phase", f"expected True, False or 'auto', found {broad_phase!r}"))
    if problems:
        raise ModelError(str(file), problems)
    return {"actuators": actuators, "limits": bool(limits), "frictionloss": bool(frictionloss),
            "contacts": contacts if contacts == "ground" else bool(contacts), "torques": torques,
            "saturate": bool(saturate), "broad_phase": broad_phase}
FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3
_KIND = {FREE: "free", BALL: "ball", SLIDE: "slide", HINGE: "hinge"}


# ---------------------------------------------------------------- reading
def root_tag(path: Path) -> str:
    """The root element's tag of an XML file ('' when it does not parse)."""
    try:
        for _, el in ET.iterparse(str(path), events=("start",)):
            return el.tag
    except (ET.ParseError, OSError, UnicodeDecodeError):
        return ""
    return ""


def compile_model(path: Path):
    """mujoco's MjModel of an MJCF file; its compiler's messages become a ModelError."""
    file = str(path)
    try:
        import mujoco
    except ImportError:
        raise ModelError(file, [Problem("", "reading MJCF needs the `mujoco` package: pip install "
                                            "'dynamica[mjcf]' (or pip install mujoco)")]) from None
    try:
        ET.parse(file)
    except ET.ParseError as exc:
        raise ModelError(file, [Problem("", f"not a valid XML file: {exc}")]) from None
    tag = root_tag(path)
    if tag != "mujoco":
        raise ModelError(file, [Problem("", f"expected a <mujoco> element at the top (MJCF), found <{tag}>")])
    messages, before = [], mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(messages.append)     # not printed, nor written to MUJOCO_LOG.TXT in the
    try:                                              # working directory: the converter's warning names them
        return mujoco.MjModel.from_xml_path(file), messages
    except ValueError as exc:
        raise ModelError(file, [Problem(_element_path(str(exc)), f"MuJoCo's compiler refuses the file: "
                                                                 f"{_short(exc)}")]) from None
    finally:
        mujoco.set_mju_user_warning(before)


def _element_path(text: str) -> str:
    """`joint[elbow]` (or `joint`, or `body[3]`) from the element a compiler message names."""
    import re
    kind = re.search(r"\bin (\w+)\s+Element|Element '(\w+)'", text)
    kind = next((g for g in kind.groups() if g), None) if kind else None
    name = re.search(r"Element name '([^']*)'", text)
    ident = re.search(r"Element name '[^']*', id (\d+)|Element id (\d+)", text)
    label = name.group(1) if name and name.group(1) else next((g for g in ident.groups() if g), None) if ident else None
    if kind and label is not None:
        return f"{kind}[{label}]"
    return kind or (f"element[{label}]" if label is not None else "mujoco")


def _short(exc) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 400 else text[:400] + " ..."


def _name(m, kind, i) -> str:
    import mujoco
    return mujoco.mj_id2name(m, getattr(mujoco.mjtObj, f"mjOBJ_{kind}"), i) or ""


def _quat_matrix(qt) -> np.ndarray:
    w, x, y, z = (float(v) for v in qt)
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def cardan_xyz(R) -> tuple:
    """Angles a, b, c with R = Rx(a) Ry(b) Rz(c) (the model format's Cardan rotations x, y, z)."""
    b = math.asin(max(-1.0, min(1.0, R[0, 2])))
    return math.atan2(-R[1, 2], R[2, 2]), b, math.atan2(-R[0, 1], R[0, 0])


_NAMED_AXES = {(1.0, 0.0, 0.0): "x", (0.0, 1.0, 0.0): "y", (0.0, 0.0, 1.0): "z",
               (-1.0, 0.0, 0.0): "-x", (0.0, -1.0, 0.0): "-y", (0.0, 0.0, -1.0): "-z"}


def _axis(a):
    a = tuple(cleaned(a, 1e-15))
    return _NAMED_AXES.get(a, [yaml_num(x) for x in a])


def _rotation(R) -> list:
    """Fixed rotations of a body frame: yaw about z, pitch about y, roll about x (R = Rz Ry Rx)."""
    roll, pitch, yaw = cleaned(rpy_of(R), 1e-15)
    return [{"rotate": ax, "by": yaml_num(v)} for ax, v in (("z", yaw), ("y", pitch), ("x", roll)) if v]


def _translate(p) -> list:
    p = cleaned(p, 1e-15)
    return [{"translate": [yaml_num(x) for x in p]}] if any(p) else []


def _merge(transforms) -> list:
    """Adjacent constant translations as one (the -p of a joint's anchor and the next joint's p)."""
    out = []
    for t in transforms:
        if out and set(t) == {"translate"} and set(out[-1]) == {"translate"} and \
                isinstance(t["translate"], list) and isinstance(out[-1]["translate"], list):
            s = cleaned([float(a) + float(b) for a, b in zip(out[-1]["translate"], t["translate"])], 1e-15)
            out.pop()
            if any(s):
                out.append({"translate": [yaml_num(x) for x in s]})
        else:
            out.append(t)
    return out


# ---------------------------------------------------------------- the conversion
class _Converter:
    def __init__(self, m, file: str, options=None):
        self.m, self.file = m, file
        self.options = {"actuators": "inputs", "limits": True, "frictionloss": False, "contacts": False,
                        "torques": "inputs", "saturate": False,
                        **(options or {})}
        self.names = IdentifierNames()
        self.params: dict = {}
        self.forces: list = []
        self.initial: dict = {}
        self.ranges: dict = {}                         # limits=False: coordinate -> [lower, upper]
        self.inputs: list = []
        self.torques: list = []                        # the inputs tau_<joint>
        self.torque_forces: set = set()                # their generalized forces' names
        self.problems: list[Problem] = []
        self.ignored: dict = {}                       # what the model leaves out -> its elements
        self.body_name: dict = {0: "ground"}
        self.coords: dict = {}                         # joint id -> coordinate names
        self.joint_of: dict = {}                       # hinge or slide coordinate -> joint id
        self.rotation_armature: dict = {}              # body id -> parameter of its free/ball joint's armature
        self.efforts: dict = {}                        # coordinate -> (lower, upper) of actuatorfrcrange, or None

    def disabled(self, flag) -> bool:
        """Whether an option flag of MuJoCo's (mjDSBL_GRAVITY, mjDSBL_SPRING, ...) is set."""
        import mujoco
        return bool(self.m.opt.disableflags & int(getattr(mujoco.mjtDisableBit, f"mjDSBL_{flag}")))

    def err(self, where, msg):
        self.problems.append(Problem(where, msg))

    def ignore(self, what, element):
        self.ignored.setdefault(what, []).append(element)

    def jname(self, j) -> str:
        return _name(self.m, "JOINT", j) or f"joint{j}"

    def run(self) -> dict:
        m = self.m
        for b in range(1, m.nbody):
            self.body_name[b] = self.names(_name(m, "BODY", b) or f"body{b}", "body")
        self._gravity()
        bodies = [self._body(b) for b in range(1, m.nbody)]
        frames = self._sites()
        self._tendons()
        self._actuators()
        loops = self._equalities()
        contact = self._contacts()
        if loops and self.torques:          # closed loops take no inputs yet (mechanics/constraints.py)
            self.inputs = [u for u in self.inputs if u not in self.torques]
            self.forces = [f for f in self.forces if f.get("name") not in self.torque_forces]
            for u in self.torques:
                self.ignore("joint torques (torques='inputs': a model with closed loops takes no inputs yet)", u)
        self._unsupported()
        if self.problems:
            raise ModelError(self.file, self.problems)
        model_name = _model_attribute(self.file)
        model = {"name": self.names(model_name or Path(self.file).stem, "model"),
                 "description": f"converted from the MJCF file {Path(self.file).name}"
                                + (f" (model `{model_name}`)" if model_name else ""),
                 "parameters": self.params}
        if self.inputs:
            model["inputs"] = [{"name": u, "default": 0} if u in self.torques else u   # (torques: 0 unless given)
                               for u in self.inputs]
        model["gravity"] = self.gravity
        model["bodies"] = bodies
        if self.initial:
            model["initial"] = self.initial
        if self.forces:
            model["forces"] = self.forces
        if loops:
            model["loops"] = loops
        if contact:
            model["contact"] = contact
        if self.ranges:
            model["ranges"] = self.ranges
        if frames:
            model["frames"] = frames
        self._warn()
        return model

    def _gravity(self):
        g = [0.0, 0.0, 0.0] if self.disabled("GRAVITY") else cleaned(self.m.opt.gravity, 0.0)
        if g[0] == 0 and g[1] == 0:
            self.params[self.names("g", "symbol")] = {"value": yaml_num(-g[2]), "unit": "m/s^2",
                                "description": "gravitational acceleration (MJCF option gravity [0, 0, -g])"}
            self.gravity = [0, 0, "-g"]
        else:
            self.params[self.names("gravity", "symbol")] = {"value": [yaml_num(x) for x in g], "unit": "m/s^2",
                                      "description": "gravity (MJCF option gravity)"}
            self.gravity = "gravity"

    # -- one body
    def _body(self, b) -> dict:
        m = self.m
        name = self.body_name[b]
        where = f"body[{_name(m, 'BODY', b) or b}]"
        parent = int(m.body_parentid[b])
        if m.body_mocapid[b] >= 0:
            self.ignore("mocap bodies (welded where they are)", name)
        joints = [int(m.body_jntadr[b]) + k for k in range(int(m.body_jntnum[b]))]
        R = _quat_matrix(m.body_quat[b])
        body = {"name": name, "parent": self.body_name[parent]}
        if any(m.jnt_type[j] == FREE for j in joints):
            body["joint"] = self._free(b, joints, parent, R)
        else:
            transforms = _translate(m.body_pos[b]) + _rotation(R)
            for j in joints:
                transforms += self._joint(j)
            body["joint"] = _merge(transforms)
        body.update(self._inertial(b, name, where))
        arm = self.rotation_armature.get(b)
        if arm is not None:              # a free or ball joint's armature: + a I (_rotation_armature)
            inertia = body.get("inertia")
            body.setdefault("com", [0, 0, 0])
            body["inertia"] = ([f"{inertia}[{k}] + {arm}" for k in range(3)] + [f"{inertia}[{k}]" for k in range(3, 6)]
                               if inertia else [arm, arm, arm, 0, 0, 0])
        self._gravcomp(b, name, body["mass"])
        visual = [v for g in range(m.ngeom) if m.geom_bodyid[g] == b for v in self._geom(g)]
        if visual:
            body["visual"] = visual
        return body

    def _sites(self) -> dict:
        """Sites on bodies as declared frames (model.frame): site_pos and site_quat in the body's
        frame, defaults applied by MuJoCo's compiler (sites of the world body are fixed: left out)."""
        m, out = self.m, {}
        for s in range(m.nsite):
            b = int(m.site_bodyid[s])
            if b == 0:
                continue
            name = self.names(_name(m, "SITE", s) or f"site{s}", "body")
            frame = {"body": self.body_name[b]}
            at = cleaned(m.site_pos[s], 1e-15)
            if any(at):
                frame["at"] = [yaml_num(x) for x in at]
            rpy = cleaned(rpy_of(_quat_matrix(m.site_quat[s])), 1e-15)
            if any(rpy):
                frame["rpy"] = [yaml_num(x) for x in rpy]
            out[name] = frame
        return out

    def _free(self, b, joints, parent, R) -> dict:
        j = next(j for j in joints if self.m.jnt_type[j] == FREE)
        where = f"joint[{self.jname(j)}]"
        if len(joints) > 1:
            self.err(where, "a free joint shares its body with other joints (MuJoCo refuses this too)")
        if parent != 0:
            self.err(where, "a free joint in a body that is not a child of the world")
        if self.m.jnt_stiffness[j] and not self.disabled("SPRING"):
            self.err(f"{where}.stiffness", "a free joint's spring (MuJoCo's, towards its reference pose) is not "
                                           "modelled")
        base = self.names(self.jname(j) if _name(self.m, "JOINT", j) else self.body_name[b], "joint")
        q = [self.names(f"{base}_{s}", "symbol") for s in ("x", "y", "z", "rx", "ry", "rz")]
        self.coords[j] = q
        adr = int(self.m.jnt_qposadr[j])
        pos, quat = self.m.qpos0[adr:adr + 3], self.m.qpos0[adr + 3:adr + 7]
        for name, v in zip(q, list(pos) + list(cardan_xyz(_quat_matrix(quat)))):
            if abs(v) > 1e-15:
                self.initial[name] = yaml_num(v)
        dof = int(self.m.jnt_dofadr[j])
        self._dof_forces(j, q[:3], dof)
        self._rotation_forces(j, b, parent, dof + 3, where)
        return {"type": "free", "q": q}

    def _joint(self, j) -> list:
        m = self.m
        kind = int(m.jnt_type[j])
        where = f"joint[{self.jname(j)}]"
        axis = np.asarray(m.jnt_axis[j], dtype=float)
        if kind in (HINGE, SLIDE) and not np.linalg.norm(axis) > 0:
            self.err(f"{where}.axis", "a zero axis")
            return []
        p = m.jnt_pos[j]
        adr, dof = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
        if kind in (HINGE, SLIDE):
            q = self.names(self.jname(j), "symbol")
            self.coords[j] = [q]
            self.joint_of[q] = j
            ref = float(m.qpos0[adr])
            move = "rotate" if kind == HINGE else "translate"
            out = [{move: _axis(axis), "by": yaml_num(-ref)}] if ref else []
            out.append({move: _axis(axis), "q": q})
            if ref:
                self.initial[q] = yaml_num(ref)
            self._torque(q)
            self._dof_forces(j, [q], dof)
            self._spring(j, q, adr)
            return _translate(p) + out + _translate(-np.asarray(p)) if kind == HINGE else out
        if kind == BALL:
            base = self.names(self.jname(j), "joint")
            q = [self.names(f"{base}_{s}", "symbol") for s in ("rx", "ry", "rz")]
            self.coords[j] = q
            a, b_, c = cardan_xyz(_quat_matrix(m.qpos0[adr:adr + 4]))
            for name, v in zip(q, (a, b_, c)):
                if abs(v) > 1e-15:
                    self.initial[name] = yaml_num(v)
            if m.jnt_stiffness[j]:
                self.err(f"{where}.stiffness", "a ball joint's spring (MuJoCo's torque about the rotation vector) "
                                               "is not modelled; remove it or use three hinges")
            body = int(m.jnt_bodyid[j])
            self._rotation_forces(j, body, int(m.body_parentid[body]), dof, where, ball=True)
            rot = [{"rotate": ax, "q": n} for ax, n in zip(("x", "y", "z"), q)]
            return _translate(p) + rot + _translate(-np.asarray(p))
        self.err(f"{where}.type", f"unknown joint type {kind}")
        return []

    def _torque(self, q):
        """torques="inputs": the input tau_<joint>, a generalized force on the joint's coordinate
        that adds to the actuators' (MuJoCo's qfrc_applied beside its actuator forces)."""
        if self.options["torques"] != "inputs":
            return
        u = self.names(f"tau_{q}", "symbol")
        self.inputs.append(u)
        self.torques.append(u)
        value = u
        effort = self._effort(q)
        if self.options["saturate"] and effort is not None:
            value = f"min(max({u}, {effort[0]}), {effort[1]})"
        name = self.names(u, "force")
        self.torque_forces.add(name)
        self.forces.append({"type": "generalized_force", "name": name, "coordinate": q, "value": value})

    def _effort(self, q):
        """A joint's `actuatorfrcrange` (when limited) as the parameter <q>_effort, as URDF's effort:
        one number E for a range [-E, E], else [lower, upper]; the two bounds' expressions."""
        if q in self.efforts:
            return self.efforts[q]
        m, j = self.m, self.joint_of[q]
        lo, hi = (float(x) for x in m.jnt_actfrcrange[j])
        if not m.jnt_actfrclimited[j] or not lo < hi:
            self.efforts[q] = None
            return None
        p = self.names(f"{q}_effort", "symbol")
        unit = "N*m" if m.jnt_type[j] == HINGE else "N"
        if lo == -hi:
            self.params[p] = {"value": yaml_num(hi), "unit": unit, "description": f"largest actuator force of "
                              f"joint `{self.jname(j)}` (MJCF actuatorfrcrange)"}
            self.efforts[q] = (f"-{p}", p)
        else:
            self.params[p] = {"value": [yaml_num(lo), yaml_num(hi)], "unit": unit,
                              "description": f"actuator force range of joint `{self.jname(j)}` (MJCF actuatorfrcrange)"}
            self.efforts[q] = (f"{p}[0]", f"{p}[1]")
        return self.efforts[q]

    def _dof_forces(self, j, coords, dof):
        """Damping and armature of translational or 1-DOF coordinates (diagonal in them)."""
        m = self.m
        for k, q in enumerate(coords):
            d, arm = 0.0 if self.disabled("DAMPER") else float(m.dof_damping[dof + k]), float(m.dof_armature[dof + k])
            unit_rot = m.jnt_type[j] == HINGE
            if d:
                p = self.names(f"{q}_damping", "symbol")
                self.params[p] = {"value": yaml_num(d), "unit": "N*m*s/rad" if unit_rot else "N*s/m",
                                  "description": f"damping of joint `{self.jname(j)}` (MJCF damping)"}
                self.forces.append({"type": "joint_spring_damper", "name": self.names(p, "force"), "coordinate": q,
                                    "damping": p})
            if arm:
                p = self.names(f"{q}_armature", "symbol")
                self.params[p] = {"value": yaml_num(arm), "unit": "kg*m^2" if unit_rot else "kg",
                                  "description": f"armature of joint `{self.jname(j)}` (MJCF armature)"}
                self.forces.append({"type": "armature", "name": self.names(p, "force"), "coordinate": q, "inertia": p})
            off = self.disabled("FRICTIONLOSS") or self.disabled("CONSTRAINT")
            f = 0.0 if off else float(m.dof_frictionloss[dof + k])
            if f and self.options["frictionloss"]:
                p = self.names(f"{q}_frictionloss", "symbol")
                self.params[p] = {"value": yaml_num(f), "unit": "N*m" if unit_rot else "N",
                                  "description": f"friction loss of joint `{self.jname(j)}` (MJCF frictionloss)"}
                w = self._friction_velocity()
                self.forces.append({"type": "generalized_force", "name": self.names(p, "force"), "coordinate": q,
                                    "value": coulomb_friction(p, q, w)})
            elif f:
                self.ignore("friction loss (a constraint in MuJoCo; frictionloss=True: a regularised Coulomb "
                            "force)", self.jname(j))
            self._limit(j, q)

    def _friction_velocity(self) -> str:
        if getattr(self, "_fv", None) is None:
            self._fv = self.names("friction_velocity", "symbol")
            self.params[self._fv] = friction_velocity(MJCF_FRICTION_VELOCITY)
        return self._fv

    def _limit(self, j, q):
        """A joint's range as a `stop` force (limits=True, the default), with URDF's parameters
        (limit_stiffness, limit_damping); otherwise named in the warning."""
        m = self.m
        if not m.jnt_limited[j] or m.jnt_type[j] not in (HINGE, SLIDE) or self.disabled("LIMIT") or \
                self.disabled("CONSTRAINT"):
            return
        lo, hi = (float(x) for x in m.jnt_range[j])
        if not self.options["limits"] or not lo < hi:
            self.ignore("joint limits (range; limits=True: `stop` forces)", self.jname(j))
            if lo < hi:
                self.ranges[q] = [yaml_num(lo), yaml_num(hi)]             # warned about when left
            return
        from dynamica.generator.importers.urdf import LIMIT_PARAMETERS
        for key, value in LIMIT_PARAMETERS.items():
            if key not in self.params:
                self.params[self.names(key, "symbol")] = value
        self.forces.append({"type": "stop", "name": self.names(f"{q}_limit", "force"), "coordinate": q,
                            "lower": yaml_num(lo), "upper": yaml_num(hi), "stiffness": "limit_stiffness",
                            "damping": "limit_damping"})

    def _spring(self, j, q, adr):
        k = float(self.m.jnt_stiffness[j])
        if not k or self.disabled("SPRING"):
            return
        p = self.names(f"{q}_stiffness", "symbol")
        unit = "N*m/rad" if self.m.jnt_type[j] == HINGE else "N/m"
        self.params[p] = {"value": yaml_num(k), "unit": unit,
                          "description": f"stiffness of joint `{self.jname(j)}` (MJCF stiffness)"}
        f = {"type": "joint_spring_damper", "name": self.names(p, "force"), "coordinate": q, "stiffness": p}
        ref = float(self.m.qpos_spring[adr])
        if ref:
            f["neutral"] = yaml_num(ref)
        self.forces.append(f)

    def _rotation_forces(self, j, body, parent, dof, where, ball=False):
        """Damping of the three rotational DOFs of a ball or free joint (MuJoCo: -d w, w the
        relative angular velocity): a bushing's rotational damping; armature (_rotation_armature)."""
        m = self.m
        d = [0.0 if self.disabled("DAMPER") else float(x) for x in m.dof_damping[dof:dof + 3]]
        arm = [float(x) for x in m.dof_armature[dof:dof + 3]]
        if any(arm):
            self._rotation_armature(j, body, parent, arm, where)
        if any(d):
            if len(set(d)) > 1:
                self.err(f"{where}.damping", "different damping on the three rotational DOFs")
                return
            base = self.coords[j][-3].rsplit("_", 1)[0]
            p = self.names(f"{base}_damping", "symbol")
            self.params[p] = {"value": yaml_num(d[0]), "unit": "N*m*s/rad",
                              "description": f"damping of the rotation of joint `{self.jname(j)}` (MJCF damping)"}
            self.forces.append({"type": "bushing", "name": self.names(p, "force"), "body_a": self.body_name[parent],
                                "body_b": self.body_name[body], "rotational_damping": [p, p, p]})
        if any(float(x) for x in m.dof_frictionloss[dof:dof + 3]):
            self.ignore("friction loss (a constraint in MuJoCo)", self.jname(j))

    def _rotation_armature(self, j, body, parent, arm, where):
        """Armature a on the three rotational DOFs of a free joint, or of a ball joint on the world
        body: MuJoCo adds (1/2) a |w|^2 to the kinetic energy (a on M's diagonal in the body's angular
        velocity w) and no velocity term, which is the body's rotational inertia a I added (the same a
        on the three: the gyroscopic w x (a I w) vanishes), exact in the Cardan coordinates. On a ball
        joint whose parent moves, w is the relative angular velocity: a `rotation_armature` element
        (a W^T W on the joint's block of M, generator/mechanics/forces.py). Different armatures on the
        three, or a ball joint beside other joints of its body, are refused."""
        if len(set(arm)) > 1:
            self.err(f"{where}.armature", "different armature on the three rotational DOFs of a ball or free "
                                          "joint is not modelled (the same value on the three is)")
            return
        if int(self.m.body_jntnum[body]) != 1:
            self.err(f"{where}.armature", "armature on the rotation of a ball joint beside other joints of its "
                                          "body is not modelled (on a free joint, or a ball joint alone on its "
                                          "body, it is)")
            return
        base = self.coords[j][-3].rsplit("_", 1)[0]
        p = self.names(f"{base}_armature", "symbol")
        moving = parent != 0
        self.params[p] = {"value": yaml_num(arm[0]), "unit": "kg*m^2",
                          "description": f"armature of the rotation of joint `{self.jname(j)}` (MJCF armature)"
                                         + ("" if moving else ", added to the body's rotational inertia")}
        if moving:
            self.forces.append({"type": "rotation_armature", "name": self.names(p, "force"),
                                "body": self.body_name[body], "inertia": p})
        else:
            self.rotation_armature[body] = p

    def _inertial(self, b, name, where) -> dict:
        m = self.m
        mass = float(m.body_mass[b])
        I = np.asarray(m.body_inertia[b], dtype=float)
        if not (math.isfinite(mass) and np.all(np.isfinite(I))):
            self.err(f"{where}.inertial", "mass and inertia must be finite numbers")
            return {"mass": 0}
        if mass < 0 or np.any(I < 0):
            self.err(f"{where}.inertial", f"an inertia that is not positive (mass {mass:.6g}, principal moments "
                                          f"{', '.join(f'{x:.6g}' for x in I)})")
            return {"mass": 0}
        if mass == 0 and not I.any():
            return {"mass": 0}
        R = _quat_matrix(m.body_iquat[b])
        Ib = R @ np.diag(I) @ R.T
        com = cleaned(m.body_ipos[b], 1e-15)
        pm, pc, pi = (self.names(f"{name}_{s}", "symbol") for s in ("mass", "com", "inertia"))
        label = _name(m, "BODY", b) or name
        self.params[pm] = {"value": yaml_num(mass), "unit": "kg", "description": f"mass of body `{label}`"}
        self.params[pc] = {"value": [yaml_num(x) for x in com], "unit": "m",
                           "description": f"centre of mass of body `{label}`, body frame"}
        tiny = 1e-15 * float(np.max(np.abs(Ib)))      # round-off of the rotation (1e-18 beside 1e-2)
        self.params[pi] = {"value": [yaml_num(x) for x in cleaned([Ib[0, 0], Ib[1, 1], Ib[2, 2],
                                                               Ib[0, 1], Ib[1, 2], Ib[0, 2]], tiny)],
                           "unit": "kg*m^2", "description": f"inertia of body `{label}` about its centre of mass, "
                                                            "body axes: Ixx, Iyy, Izz, Ixy, Iyz, Ixz"}
        return {"mass": pm, "com": pc, "inertia": pi}

    def _gravcomp(self, b, name, mass):
        """MuJoCo's gravity compensation (body gravcomp): the force -gravcomp m g at the centre of mass."""
        c = float(self.m.body_gravcomp[b])
        if not c or mass == 0 or self.disabled("GRAVITY"):
            return
        p = self.names(f"{name}_gravcomp", "symbol")
        self.params[p] = {"value": yaml_num(c), "description": f"gravity compensation of body `{name}` (MJCF gravcomp)"}
        g = ["g[0]", "g[1]", "g[2]"] if self.gravity == "gravity" else ["0", "0", "-g"]
        g = [x.replace("g[", "gravity[") for x in g] if self.gravity == "gravity" else g
        self.forces.append({"type": "body_force", "name": self.names(p, "force"), "body": name,
                            "force": [f"-{p}*{mass}*({x})" for x in g]})

    def _geom(self, g) -> list:
        m = self.m
        kind, size = int(m.geom_type[g]), [float(x) for x in m.geom_size[g]]
        pos, R = np.asarray(m.geom_pos[g], dtype=float), _quat_matrix(m.geom_quat[g])
        rgba = [float(x) for x in m.geom_rgba[g]]
        if rgba[3] == 0:
            return []

        def place(shape, at=pos):
            at = cleaned(at, 1e-15)
            if any(at):
                shape["at"] = [yaml_num(x) for x in at]
            rpy = cleaned(rpy_of(R), 1e-15)
            if any(rpy) and shape["shape"] != "sphere":
                shape["rpy"] = [yaml_num(x) for x in rpy]
            shape["color"] = [yaml_num(round(x, 4)) for x in rgba[:3]]
            return shape
        if kind == 2:                                              # sphere
            return [place({"shape": "sphere", "radius": yaml_num(size[0])})]
        if kind == 4:                                              # ellipsoid: its largest sphere
            return [place({"shape": "sphere", "radius": yaml_num(max(size))})]
        if kind == 6:                                              # box: half sizes
            return [place({"shape": "box", "size": [yaml_num(2 * x) for x in size]})]
        if kind == 5:                                              # cylinder: radius, half length
            return [place({"shape": "cylinder", "radius": yaml_num(size[0]), "length": yaml_num(2 * size[1])})]
        if kind == 3:                                              # capsule: a cylinder and its end caps
            ends = [pos + R[:, 2] * s * size[1] for s in (1, -1)]
            return [place({"shape": "cylinder", "radius": yaml_num(size[0]), "length": yaml_num(2 * size[1])})] + \
                [place({"shape": "sphere", "radius": yaml_num(size[0])}, at=e) for e in ends]
        if kind == 7:
            self.ignore("mesh geoms (not drawn)", _name(m, "GEOM", g) or f"geom{g}")
        return []

    # -- contacts: geoms as collision shapes, MuJoCo's filters as the pairs
    def _contact_shapes(self) -> tuple:
        """({shape name: shape}, {geom: shape name}) of the geoms that can touch (contype or
        conaffinity, or in an explicit <pair>) and have a closed form here."""
        m = self.m
        kinds = {0: "plane", 2: "sphere", 3: "capsule", 5: "cylinder", 6: "box"}
        shapes, names = {}, {}
        for g in range(m.ngeom):
            if not (m.geom_contype[g] or m.geom_conaffinity[g]) and not any(
                    g in (m.pair_geom1[k], m.pair_geom2[k]) for k in range(m.npair)):
                continue
            kind, size = int(m.geom_type[g]), [float(x) for x in m.geom_size[g]]
            label = _name(m, "GEOM", g) or f"geom{g}"
            if kind not in kinds:
                self.ignore("contacts of ellipsoid, mesh and height-field geoms", label)
                continue
            R = _quat_matrix(m.geom_quat[g])
            shape = {"type": kinds[kind], "body": self.body_name[int(m.geom_bodyid[g])]}
            at = cleaned(m.geom_pos[g], 1e-15)
            if any(at):
                shape["at"] = [yaml_num(x) for x in at]
            rpy = cleaned(rpy_of(R), 1e-15)
            if any(rpy) and kind != 2:
                shape["rpy"] = [yaml_num(x) for x in rpy]
            if kind in (2, 3, 5):
                shape["radius"] = yaml_num(size[0])
            if kind in (3, 5):
                shape["length"] = yaml_num(2 * size[1])
            if kind == 6:
                shape["size"] = [yaml_num(2 * x) for x in size]
            names[g] = self.names(label, "shape")
            shapes[names[g]] = shape
        return shapes, names

    def _filtered_pairs(self, geoms, seen):
        """The geom pairs MuJoCo's broad phase would test: not an explicit pair already, not
        within one welded body, contype & conaffinity, not a body and its parent unless that is
        the world (filterparent), not excluded."""
        import mujoco
        m = self.m
        filter_parent = not (m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_FILTERPARENT))
        excluded = {int(x) for x in m.exclude_signature[:m.nexclude]} if m.nexclude else set()
        weld = [int(x) for x in m.body_weldid]
        for i, g1 in enumerate(geoms):
            for g2 in geoms[i + 1:]:
                b1, b2 = int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2])
                w1, w2 = weld[b1], weld[b2]
                if (g1, g2) in seen or w1 == w2:
                    continue
                if not (m.geom_contype[g1] & m.geom_conaffinity[g2] or m.geom_contype[g2] & m.geom_conaffinity[g1]):
                    continue
                p1, p2 = weld[int(m.body_parentid[w1])], weld[int(m.body_parentid[w2])]
                if filter_parent and ((p1 == w2 and w2 != 0) or (p2 == w1 and w1 != 0)):
                    continue
                if ((min(b1, b2) << 16) + max(b1, b2)) in excluded or ((b1 << 16) + b2) in excluded \
                        or ((b2 << 16) + b1) in excluded:
                    continue
                yield g1, g2

    def _contacts(self) -> dict:
        """The `contact` section (docs/contact.md): sphere, capsule, box and plane geoms as shapes;
        the pairs MuJoCo's broad phase would test (contype & conaffinity, not within one welded
        body, not a body and its parent unless that is the world, not excluded) and its explicit
        <pair>s, with MuJoCo's friction (the larger sliding coefficient of the two geoms); the law's
        stiffness, damping and exponent as parameters (MuJoCo's solref/solimp are another law)."""
        m = self.m
        if not self.options["contacts"] or self.disabled("CONSTRAINT") or self.disabled("CONTACT"):
            return {}
        shapes, names = self._contact_shapes()
        if not shapes:
            return {}
        weld = [int(x) for x in m.body_weldid]
        pairs, seen, kept = [], set(), []        # kept: explicit or with a geom fixed to the ground
        order = {"plane": 0, "box": 1, "sphere": 2, "capsule": 3, "cylinder": 4}

        def add(g1, g2, friction, explicit=False):
            a, b = names[g1], names[g2]
            if order[shapes[a]["type"]] > order[shapes[b]["type"]]:
                a, b = b, a
            ka, kb = shapes[a]["type"], shapes[b]["type"]
            if (ka, kb) not in PAIR_TYPES and (kb, ka) not in PAIR_TYPES:
                self.ignore("contacts between two planes, or a cylinder and a box or a cylinder", f"{a}-{b}")
                return
            if (ka, kb) not in PAIR_TYPES:
                a, b = b, a
            pairs.append({"name": self.names(f"contact_{a}_{b}", "force"), "a": a, "b": b,
                          "friction": yaml_num(friction)})
            kept.append(explicit or 0 in (weld[int(m.geom_bodyid[g1])], weld[int(m.geom_bodyid[g2])]))
        for k in range(m.npair):                                  # explicit pairs: always, their friction
            g1, g2 = int(m.pair_geom1[k]), int(m.pair_geom2[k])
            if g1 in names and g2 in names:
                seen.add((min(g1, g2), max(g1, g2)))
                add(g1, g2, float(m.pair_friction[k][0]), explicit=True)
        for g1, g2 in self._filtered_pairs(sorted(names), seen):
            add(g1, g2, max(float(m.geom_friction[g1][0]), float(m.geom_friction[g2][0])))
        if self.options["contacts"] == "ground":
            if len(pairs) > sum(kept):
                self.ignore("contacts between two moving bodies (contacts='ground': only the pairs with the "
                            "ground and the explicit <pair>s are kept)", f"{len(pairs) - sum(kept)} pairs")
            pairs = [pair for pair, k in zip(pairs, kept) if k]
        if not pairs:
            return {}
        law = {}
        for key, (value, unit, what) in CONTACT_PARAMETERS.items():
            name = law[key.removeprefix("contact_")] = self.names(key, "symbol")
            self.params[name] = {"value": value, "unit": unit, "description": what}
        return {"shapes": {n: s for n, s in shapes.items() if any(n in (p["a"], p["b"]) for p in pairs)},
                "defaults": law,
                "pairs": pairs, **({"broad_phase": self.options["broad_phase"]}
                                   if self.options.get("broad_phase", "auto") != "auto" else {})}

    # -- fixed tendons: L = sum c_i q_i over hinge and slide joints
    def _fixed_tendon(self, t):
        """[(coordinate, coefficient)] of a fixed tendon whose joints are all hinges or slides
        (None otherwise): its length is sum c_i q_i, a force F along it acts as c_i F on q_i."""
        m = self.m
        out = []
        for w in range(int(m.tendon_adr[t]), int(m.tendon_adr[t]) + int(m.tendon_num[t])):
            j = int(m.wrap_objid[w])
            if int(m.wrap_type[w]) != 1 or j not in self.coords or len(self.coords[j]) != 1:
                return None
            out.append((self.coords[j][0], float(m.wrap_prm[w])))
        return out

    @staticmethod
    def _length(path, rate=False) -> str:
        terms = [f"{_fmt(c)}*{'der(' + q + ')' if rate else q}" for q, c in path if c]
        return "(" + " + ".join(terms).replace("+ -", "- ") + ")" if terms else "0"

    def _tendons(self):
        """Springs and dampers of fixed tendons: F = -k (L - L0) - d L', c_i F on each q_i."""
        m = self.m
        for t in range(m.ntendon):
            label = _name(m, "TENDON", t) or f"tendon{t}"
            k = 0.0 if self.disabled("SPRING") else float(m.tendon_stiffness[t])
            d = 0.0 if self.disabled("DAMPER") else float(m.tendon_damping[t])
            path = self._fixed_tendon(t)
            if not (k or d):
                if m.tendon_limited[t] or not any(
                        int(m.actuator_trntype[a]) == 3 and int(m.actuator_trnid[a, 0]) == t for a in range(m.nu)):
                    self.ignore("tendons (their limits; spatial tendons)", label)
                continue
            lo, hi = (float(x) for x in np.ravel(m.tendon_lengthspring[t])[:2])
            if path is None or (k and lo != hi):
                self.err(f"tendon[{label}]", "a spring or damper on a tendon that is not a fixed tendon of hinge and "
                                             "slide joints, or a spring with a dead band, is not modelled")
                continue
            base = self.names(label, "joint")
            terms = []
            if k:
                pk = self.names(f"{base}_stiffness", "symbol")
                self.params[pk] = {"value": yaml_num(k), "description": f"stiffness of tendon `{label}` (MJCF)"}
                terms.append(f"-{pk}*({self._length(path)} - {_fmt(lo)})" if lo else f"-{pk}*{self._length(path)}")
            if d:
                pd = self.names(f"{base}_damping", "symbol")
                self.params[pd] = {"value": yaml_num(d), "description": f"damping of tendon `{label}` (MJCF)"}
                terms.append(f"-{pd}*{self._length(path, rate=True)}")
            for q, c in path:
                if c:
                    self.forces.append({"type": "generalized_force", "name": self.names(f"{base}_{q}", "force"),
                                        "coordinate": q, "value": f"{_fmt(c)}*({' '.join(terms)})"})

    # -- actuators
    def _actuators(self):
        m = self.m
        if self.options["actuators"] == "off" or self.disabled("ACTUATION"):
            return
        actuation: dict = {}                 # coordinate -> [(name, generalized force of an actuator)]
        for a in range(m.nu):
            label = _name(m, "ACTUATOR", a) or f"actuator{a}"
            trn = int(m.actuator_trntype[a])
            if trn not in (0, 3) or int(m.actuator_dyntype[a]) != 0 or \
                    int(m.actuator_gaintype[a]) != 0 or int(m.actuator_biastype[a]) not in (0, 1):
                self.ignore("actuators other than motors and position/velocity servos on joints and fixed tendons",
                            label)
                continue
            target = int(m.actuator_trnid[a, 0])
            if trn == 0:
                path = [(self.coords[target][0], 1.0)] if len(self.coords.get(target, ())) == 1 else None
            else:
                path = self._fixed_tendon(target)
            if path is None:
                self.ignore("actuators on ball or free joints or on spatial tendons", label)
                continue
            u = self.names(f"u_{label}", "symbol")
            self.inputs.append(u)
            gear, gain = float(m.actuator_gear[a, 0]), float(m.actuator_gainprm[a, 0])
            ctrl = u
            if m.actuator_ctrllimited[a] and not self.disabled("CLAMPCTRL"):
                lo, hi = (float(x) for x in m.actuator_ctrlrange[a])
                ctrl = f"min(max({u}, {_fmt(lo)}), {_fmt(hi)})"
            force = ctrl if gain == 1 else f"{_fmt(gain)}*{ctrl}" if gain > 0 else f"({_fmt(gain)})*{ctrl}"
            if int(m.actuator_biastype[a]) == 1:      # affine bias: b0 + b1*length + b2*velocity (length = gear*L)
                b0, b1, b2 = (float(x) for x in m.actuator_biasprm[a, :3])
                single = len(path) == 1 and path[0][1] == 1.0
                length = path[0][0] if single else self._length(path)
                rate = f"der({path[0][0]})" if single else self._length(path, rate=True)
                for coef, term in ((b0, ""), (b1 * gear, f"*{length}"), (b2 * gear, f"*{rate}")):
                    if coef:
                        force += f" {'+' if coef > 0 else '-'} {_fmt(abs(coef))}{term}"
            if m.actuator_forcelimited[a]:
                lo, hi = (float(x) for x in m.actuator_forcerange[a])
                force = f"min(max({force}, {_fmt(lo)}), {_fmt(hi)})"
            for q, c in path:
                scale = gear * c
                if not scale:
                    continue
                name = label if len(path) == 1 else f"{label}_{q}"
                actuation.setdefault(q, []).append((name, f"{_fmt(scale)}*({force})" if scale != 1 else force))
        for q, terms in actuation.items():
            effort = self._effort(q)
            if effort is None:
                for name, value in terms:
                    self.forces.append({"type": "generalized_force", "name": self.names(name, "force"),
                                        "coordinate": q, "value": value})
            else:                  # MuJoCo clamps the actuators' force on the joint (qfrc_actuator) to its range
                total = " + ".join(f"({v})" for _, v in terms) if len(terms) > 1 else terms[0][1]
                self.forces.append({"type": "generalized_force", "name": self.names(f"{q}_actuation", "force"),
                                    "coordinate": q, "value": f"min(max({total}, {effort[0]}), {effort[1]})"})

    # -- equality constraints
    def _equalities(self) -> list:
        """`connect` and `weld` between bodies as loops (docs/loops.md): MuJoCo's soft constraints
        as exact ones. connect: the point eq_data[0:3] of body1 on the point eq_data[3:6] of body2
        (the compiler's, from qpos0); weld: the point eq_data[3:6] of body1 on eq_data[0:3] of
        body2, and their relative orientation kept (relquat, which must be the one at qpos0: a
        loop keeps the orientation it is assembled in)."""
        m, out = self.m, []
        if self.disabled("CONSTRAINT") or self.disabled("EQUALITY"):
            return out                               # switched off in the file: MuJoCo simulates without them
        for e in range(m.neq):
            label = _name(m, "EQUALITY", e) or f"equality{e}"
            kind = int(m.eq_type[e])
            objtype = int(m.eq_objtype[e]) if hasattr(m, "eq_objtype") else 1
            if kind not in (0, 1) or objtype != 1:
                self.ignore("equality constraints other than connect and weld between bodies", label)
                continue
            if not m.eq_active0[e]:
                self.ignore("inactive equality constraints", label)
                continue
            b1, b2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            data = [float(x) for x in m.eq_data[e]]
            pa, pb = (data[0:3], data[3:6]) if kind == 0 else (data[3:6], data[0:3])
            if kind == 1 and not self._relquat_at_qpos0(b1, b2, data[6:10]):
                self.err(f"equality[{label}].relpose", "a weld whose relative orientation is not the one at the "
                                                      "reference configuration (qpos0): a loop keeps the orientation "
                                                      "it is assembled in")
                continue
            loop = {"name": self.names(label, "body"), "type": "spherical" if kind == 0 else "weld",
                    "body_a": self.body_name[b1], "point_a": [yaml_num(x) for x in cleaned(pa, 1e-15)],
                    "body_b": self.body_name[b2], "point_b": [yaml_num(x) for x in cleaned(pb, 1e-15)]}
            out.append(loop)
        return out

    def _relquat_at_qpos0(self, b1, b2, relquat) -> bool:
        import mujoco
        d = mujoco.MjData(self.m)
        mujoco.mj_kinematics(self.m, d)
        R1, R2 = (d.xmat[b].reshape(3, 3) for b in (b1, b2))
        return bool(np.abs(R1.T @ R2 - _quat_matrix(relquat)).max() < 1e-9)

    # -- what is left out
    def _unsupported(self):
        m = self.m
        colliding = int(np.count_nonzero(np.asarray(m.geom_contype) | np.asarray(m.geom_conaffinity)))
        if colliding and not self.options["contacts"] and not (self.disabled("CONSTRAINT") or self.disabled("CONTACT")):
            self.ignore("contacts (geom collisions; contacts=True: `contact` forces)", f"{colliding} geoms")
        for j in range(m.njnt):
            if m.jnt_limited[j] and m.jnt_type[j] == BALL and not self.disabled("LIMIT"):
                self.ignore("joint limits (range)", self.jname(j))
        if m.opt.density or m.opt.viscosity:
            self.ignore("fluid forces (option density/viscosity)", f"density {m.opt.density:g}, "
                                                                   f"viscosity {m.opt.viscosity:g}")
        if m.nsensor:
            self.ignore("sensors", f"{m.nsensor} sensors")

    def _warn(self):
        if not self.ignored:
            return
        from dynamica.generator.spec.model import DynamicaWarning
        parts = []
        for what, items in self.ignored.items():
            shown = ", ".join(f"`{x}`" for x in items[:6]) + (f" and {len(items) - 6} more" if len(items) > 6 else "")
            parts.append(f"{what}: {shown}")
        warnings.warn_explicit(f"{self.file}: not modelled (the motion is that of MuJoCo with them switched off): "
                               + "; ".join(parts), DynamicaWarning, filename=self.file, lineno=0,
                               module="dynamica.mjcf")


#: the contact law's parameters of an MJCF model's pairs (docs/contact.md): value, unit, meaning
CONTACT_PARAMETERS = {
    "contact_stiffness": (1e6, "N/m^1.5", "contacts: k of the normal law k delta^e (1 + 3/2 c delta')"),
    "contact_damping": (0.5, "s/m", "contacts: c of the normal law (restitution about 1 - c v)"),
    "contact_exponent": (1.5, "", "contacts: e of the normal law"),
    "contact_stiction_velocity": (1e-3, "m/s", "contacts: slip speed below which friction is viscous"),
}


def _model_attribute(file) -> str:
    try:
        return ET.parse(file).getroot().get("model") or ""
    except (ET.ParseError, OSError):
        return ""


def _fmt(x: float) -> str:
    """A number in an expression, exactly (repr round-trips a double)."""
    return repr(yaml_num(x))


# ---------------------------------------------------------------- entry points
def read_mjcf(path, options=None) -> dict:
    """The model mapping of an MJCF file (what a YAML model file would hold); ModelError naming
    the element for what is wrong with it."""
    path = existing_file(path, "an MJCF file")
    file = str(path)
    m, messages = compile_model(path)
    converter = _Converter(m, file, options)
    for text in messages:
        converter.ignore("MuJoCo's compiler warnings", " ".join(str(text).split()))
    return converter.run()


def _included(path: Path, seen=None) -> list:
    """The files an MJCF file includes (<include file=...>), recursively, for the cache key."""
    seen = seen if seen is not None else set()
    out = []
    try:
        root = ET.parse(str(path)).getroot()
    except (ET.ParseError, OSError):
        return out
    base = path.parent
    for el in root.iter("include"):
        f = el.get("file")
        if not f:
            continue
        p = (base / f).resolve()
        if p in seen or not p.is_file():
            continue
        seen.add(p)
        out.append(p)
        out += _included(p, seen)
    return out


def cached_model(path, options: dict, cache: Path | None) -> dict:
    """`read_mjcf`, kept in the module cache keyed by the file's bytes and those of its
    includes, its place and this tool: a cached load does not import mujoco."""
    path = Path(path)
    if cache is None or not path.is_file():
        return read_mjcf(path, options)
    from dynamica.build import tool_fingerprint
    parts = [tool_fingerprint().encode(), path.read_bytes(), str(path.resolve()).encode(),
             json.dumps(options, sort_keys=True).encode()]
    parts += [p.read_bytes() for p in _included(path)]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()
    entry = cache / "mjcf" / f"{key}.json"
    try:
        stored = json.loads(entry.read_text())
        model, texts = stored["model"], stored["warnings"]
    except (OSError, ValueError, KeyError, TypeError):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = read_mjcf(path, options)
        texts = [str(w.message) for w in caught]
        try:
            from dynamica.files import write_atomic
            write_atomic(entry, json.dumps({"model": model, "warnings": texts}), parents=True)
        except OSError:
            pass
    if texts:                                 # the warnings again, from the caller's point of view, cached or not
        from dynamica.generator.spec.model import DynamicaWarning
        for text in texts:
            warnings.warn_explicit(text, DynamicaWarning, filename=str(path), lineno=0, module="dynamica.mjcf")
    return model

"""URDF robot descriptions as models (docs/urdf.md): a URDF file becomes the mapping a YAML
model file would hold, which then goes through the normal loader (loader.load), so every check
of a model file applies to it.

The file is read by yourdfpy (a maintained URDF library on PyPI, with lxml underneath; the PyPI
release of ROS's urdf_parser_py is from 2021). What it does not check (the tree, the numbers of
an inertia, the joint types) is checked here, each problem a `Problem` naming the element
(`joint[elbow].parent`, `link[forearm].inertial.inertia`).

Mapping (the same conventions as Pinocchio's buildModelFromUrdf):
  link                 -> body of that name; the root link is welded to the ground (or, with
                          floating=True, on a free joint: coordinates <root>_x ... <root>_rz)
  joint origin xyz rpy -> translate [x, y, z], then rotate z by yaw, y by pitch, x by roll
                          (R = Rz(yaw) Ry(pitch) Rx(roll), URDF's fixed-axis roll-pitch-yaw)
  revolute, continuous -> rotate about the joint axis by a coordinate named after the joint
  prismatic            -> translate along the axis;  fixed -> no motion
  floating (a joint)   -> free: translations x, y, z, then rotations x, y, z
  inertial             -> parameters <link>_mass, <link>_com and <link>_inertia: the inertia
                          given in the inertial frame, rotated into the link frame (R I R^T)
  joint (1 DOF)        -> an input tau_<joint>, a generalized_force on its coordinate (torques="inputs",
                          the default), clamped to +-<joint>_effort with saturate=True
  limit effort, velocity -> parameters <joint>_effort, <joint>_velocity
  dynamics damping     -> joint_spring_damper (parameter <joint>_damping)
  dynamics friction    -> generalized_force -friction*tanh(q'/friction_velocity) (parameter
                          <joint>_friction): the regularised Coulomb law MJCF's frictionloss has
  limit                -> a `stop` force: no force inside [lower, upper], a compliant stop beyond
                          (parameters limit_stiffness, limit_damping); limits=False leaves them out
  mimic                -> an independent coordinate with a warning (as Pinocchio without mimic)
  visual               -> the body's `visual` entries (box, cylinder, sphere, mesh)
"""

from __future__ import annotations

import hashlib
import json
import keyword
import math
import re
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from dynamica.errors import ModelError, Problem
from dynamica.files import write_atomic
from dynamica.generator.importers import (
    URDF_FRICTION_VELOCITY,
    check_torques,
    coulomb_friction,
    existing_file,
    friction_velocity,
)
from dynamica.generator.spec import expr as ex

#: what this importer adds to the cache key of a module (generator/importers/urdf.py's own text is in the
#: tool fingerprint)
SUFFIXES = (".urdf",)
MIMIC_MODES = ("independent", "coupled")


@dataclass(frozen=True)
class UrdfOptions:
    floating: bool = False          # a free joint between the ground and the root link
    mimic: str = "independent"      # "coupled": mimic joints follow their joint (needs constraints)
    limits: bool = True             # joint limits as `stop` forces
    torques: str = "inputs"         # "inputs": an input tau_<joint> per 1-DOF joint; "off": none
    saturate: bool = False          # the torque inputs clamped to +-<joint>_effort (URDF <limit effort>)

    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def check_options(file, floating=False, mimic="independent", limits=True, torques="inputs",
                  saturate=False) -> UrdfOptions:
    problems = check_torques(file, torques)
    if mimic not in MIMIC_MODES:
        problems.append(Problem("mimic", f"expected one of {', '.join(MIMIC_MODES)}, found {mimic!r}"))
    if saturate and torques == "off":
        problems.append(Problem("saturate", "saturates the torque inputs, which torques='off' leaves out"))
    if problems:
        raise ModelError(str(file), problems)
    return UrdfOptions(bool(floating), mimic, bool(limits), torques, bool(saturate))


# ---------------------------------------------------------------- names
class IdentifierNames:
    """URDF names as identifiers of the model format: other characters become `_`, a reserved
    name or a Python keyword gets a `_` appended, a clash a numeric suffix."""

    def __init__(self):
        self.used = {}

    def __call__(self, raw: str, space: str) -> str:
        name = re.sub(r"[^A-Za-z0-9_]", "_", str(raw)) or "_"
        if name[0].isdigit():
            name = "_" + name
        if name in ex.RESERVED or keyword.iskeyword(name):
            name += "_"
        taken = self.used.setdefault(space, set())
        base, k = name, 2
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        return name


# ---------------------------------------------------------------- numbers
def yaml_num(x) -> float | int:
    """A float as YAML writes it back exactly; integral values as ints (readability)."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 1e15 else x


def rpy_of(R) -> tuple:
    """Fixed-axis roll, pitch, yaw of a rotation matrix (R = Rz(y) Ry(p) Rx(r))."""
    p = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if math.hypot(R[0, 0], R[1, 0]) < 1e-12:           # gimbal lock: put everything into roll
        return math.atan2(-R[1, 2], R[1, 1]), p, 0.0
    return math.atan2(R[2, 1], R[2, 2]), p, math.atan2(R[1, 0], R[0, 0])


def cleaned(v, tol=1e-15):
    """Round-off of a decomposed transform (1e-17 for a zero) back to zero."""
    return [0.0 if abs(x) < tol else float(x) for x in v]


def _origin_transforms(T) -> list:
    """Elementary transforms of a URDF origin (4x4): translate, then yaw, pitch, roll."""
    out = []
    if T is None:
        return out
    xyz = cleaned(T[:3, 3])
    if any(xyz):
        out.append({"translate": [yaml_num(x) for x in xyz]})
    roll, pitch, yaw = cleaned(rpy_of(T[:3, :3]))
    for axis, angle in (("z", yaw), ("y", pitch), ("x", roll)):
        if angle:
            out.append({"rotate": axis, "by": yaml_num(angle)})
    return out


_NAMED_AXES = {(1, 0, 0): "x", (0, 1, 0): "y", (0, 0, 1): "z", (-1, 0, 0): "-x", (0, -1, 0): "-y", (0, 0, -1): "-z"}


def _axis(a):
    a = [float(x) for x in (a if a is not None else (1, 0, 0))]
    return _NAMED_AXES.get(tuple(a), [yaml_num(x) for x in a])


# ---------------------------------------------------------------- the conversion
def _finite(values) -> bool:
    try:
        return all(math.isfinite(float(v)) for v in np.ravel(values))
    except (TypeError, ValueError):
        return False


class _Converter:
    def __init__(self, robot, file: str, options: UrdfOptions, mesh_resolver):
        self.robot, self.file, self.opt, self.resolve = robot, file, options, mesh_resolver
        self.problems: list[Problem] = []
        self.names = IdentifierNames()
        self.params: dict = {}
        self.forces: list = []
        self.initial: dict = {}
        self.ranges: dict = {}                         # limits=False: coordinate -> [lower, upper]
        self.inputs: list = []
        self.friction_velocity: str | None = None
        self.body_name: dict = {}
        self.coord_name: dict = {}
        self.mimics: list = []

    def err(self, path, msg):
        self.problems.append(Problem(path, msg))

    def run(self) -> dict:
        robot = self.robot
        links = {}
        for k, link in enumerate(robot.links):
            if link.name in links:
                self.err(f"link[{link.name}]", f"a second link named `{link.name}`; link names are unique")
            links.setdefault(link.name, link)
        joints = self._joints(links)
        root = self._root(links, joints)
        if self.problems or root is None:
            raise ModelError(self.file, self.problems)
        for name in links:
            self.body_name[name] = self.names(name, "body")
        order = self._tree_order(root, joints)
        self.params["g"] = {"value": 9.81, "unit": "m/s^2", "description": "gravitational acceleration"}
        if self.opt.limits and any(
            j.type in ("revolute", "prismatic") and j.limit is not None for j in joints.values()
        ):
            self.params.update(LIMIT_PARAMETERS)
        bodies = [self._body(links[root], None)] + [self._body(links[j.child], j) for j in order]
        if self.problems:
            raise ModelError(self.file, self.problems)
        self._mimic_warnings()
        model = {"name": self.names(robot.name or Path(self.file).stem, "model"),
                 "description": f"converted from the URDF file {Path(self.file).name} (robot `{robot.name}`)",
                 "parameters": self.params}
        if self.inputs:
            model["inputs"] = [{"name": u, "default": 0} for u in self.inputs]   # (held at 0 unless given)
        model.update({"gravity": [0, 0, "-g"], "bodies": bodies})
        if self.initial:
            model["initial"] = self.initial
        if self.forces:
            model["forces"] = self.forces
        if self.ranges:
            model["ranges"] = self.ranges
        return model

    # -- the tree
    def _joints(self, links) -> dict:
        """child link -> joint, with every structural problem named."""
        by_child, names = {}, set()
        for j in self.robot.joints:
            where = f"joint[{j.name}]"
            if j.name in names:
                self.err(where, f"a second joint named `{j.name}`; joint names are unique")
            names.add(j.name)
            if j.type not in JOINT_KINDS:
                self.err(f"{where}.type", f"unknown joint type {ex.shown(j.type)}"
                                          f"{ex.did_you_mean(str(j.type), JOINT_KINDS)}; expected one of "
                                          f"{', '.join(JOINT_KINDS)}")
            for role in ("parent", "child"):
                link = getattr(j, role)
                if link not in links:
                    self.err(f"{where}.{role}", f"link `{link}` is not defined (no <link name="
                                                f"\"{link}\">){ex.did_you_mean(str(link), links)}")
            if j.child == j.parent:
                self.err(where, f"joins link `{j.child}` to itself")
            if j.child in by_child:
                self.err(f"{where}.child", f"link `{j.child}` is already the child of joint "
                                           f"`{by_child[j.child].name}`: a link has one parent joint (a "
                                           "closed loop is not a URDF tree)")
            if j.origin is not None and not _finite(j.origin):
                self.err(f"{where}.origin", "xyz and rpy must be finite numbers")
            if j.type in ("revolute", "continuous", "prismatic") and (
                    not _finite(j.axis) or not np.any(np.asarray(j.axis, dtype=float))):
                self.err(f"{where}.axis", f"expected a non-zero axis of finite numbers, found {ex.shown(j.axis)}")
            by_child.setdefault(j.child, j)
        return by_child

    def _root(self, links, joints):
        roots = [name for name in links if name not in joints]
        if len(roots) == 1:
            return roots[0]
        if not roots:
            self.err("robot", f"no root link: every link is the child of a joint, so the joints form a cycle "
                              f"({_cycle(joints)})")
        else:
            self.err("robot", f"{len(roots)} root links ({', '.join(f'`{r}`' for r in roots)}): a URDF is one tree; "
                              "join them with joints")
        return None

    def _tree_order(self, root, joints) -> list:
        """Joints in depth-first pre-order from the root (children in file order); joints the
        root does not reach (a cycle off the tree) are an error naming them."""
        children = {}
        for j in self.robot.joints:
            if joints.get(j.child) is j:
                children.setdefault(j.parent, []).append(j)
        order, stack = [], [(root, None)]
        while stack:
            link, j = stack.pop()
            if j is not None:
                order.append(j)
            stack.extend((k.child, k) for k in reversed(children.get(link, [])))
        reached = {j.child for j in order}
        cut = [j for j in joints.values() if j.child not in reached]
        if cut:
            self.err(f"joint[{cut[0].name}]", f"the joints {', '.join(f'`{j.name}`' for j in cut)} form a cycle "
                                              f"not connected to the root link `{root}` ({_cycle(joints)})")
        return order

    # -- one body
    def _body(self, link, joint) -> dict:
        name = self.body_name[link.name]
        body = {"name": name, "parent": "ground" if joint is None else self.body_name[joint.parent],
                "joint": self._root_joint(name) if joint is None else self._joint(joint)}
        body.update(self._inertial(link, name))
        visuals = [v for v in (self._visual(link, k, vis) for k, vis in enumerate(link.visuals)) if v]
        if visuals:
            body["visual"] = visuals
        return body

    def _root_joint(self, name):
        if not self.opt.floating:
            return []
        return {
            "type": "free",
            "q": [self.names(f"{name}_{c}", "coordinate") for c in ("x", "y", "z", "rx", "ry", "rz")],
        }

    def _joint(self, j) -> list:
        out = _origin_transforms(j.origin)
        kind = JOINT_KINDS.get(j.type)
        if kind is None:
            return out
        q = self.names(j.name, "coordinate") if kind.dof else None
        if q:
            self.coord_name[j.name] = q
        out += kind.motion(j, q, self)
        if q and kind.dof == 1:
            self._joint_forces(j, q)
        if j.mimic is not None:
            self.mimics.append(j)
        return out

    def _joint_forces(self, j, q):
        unit = "N*m*s/rad" if j.type != "prismatic" else "N*s/m"
        force = unit.split("*s")[0]
        effort = self._limit_parameters(j, q, force)
        if self.opt.torques == "inputs":
            u = self.names(f"tau_{q}", "parameter")
            self.inputs.append(u)
            value = f"min(max({u}, -{effort}), {effort})" if self.opt.saturate and effort else u
            self.forces.append({"type": "generalized_force", "name": u, "coordinate": q, "value": value})
        d = j.dynamics
        for attr, what in (("damping", "viscous damping"), ("friction", "Coulomb friction")):
            value = getattr(d, attr, None) if d is not None else None
            if value is None:
                continue
            if not _finite([value]) or float(value) < 0:
                self.err(f"joint[{j.name}].dynamics.{attr}", f"expected a finite number >= 0, found {ex.shown(value)}")
                continue
            if float(value) == 0:
                continue
            p = self.names(f"{q}_{attr}", "parameter")
            self.params[p] = {"value": yaml_num(value), "unit": unit if attr == "damping" else force,
                              "description": f"{what} of joint `{j.name}` (URDF <dynamics>)"}
            if attr == "damping":
                self.forces.append({"type": "joint_spring_damper", "name": p, "coordinate": q, "damping": p})
            else:
                if self.friction_velocity is None:
                    self.friction_velocity = self.names("friction_velocity", "parameter")
                    self.params[self.friction_velocity] = friction_velocity(URDF_FRICTION_VELOCITY)
                self.forces.append({"type": "generalized_force", "name": p, "coordinate": q,
                                    "value": coulomb_friction(p, q, self.friction_velocity)})
        lim = j.limit
        if self.opt.limits and j.type in ("revolute", "prismatic") and lim is not None \
                and lim.lower is not None and lim.upper is not None and lim.lower < lim.upper:
            self.forces.append({"type": "stop", "name": f"{q}_limit", "coordinate": q, "lower": yaml_num(lim.lower),
                                "upper": yaml_num(lim.upper), "stiffness": "limit_stiffness",
                                "damping": "limit_damping"})
            if not lim.lower <= 0 <= lim.upper:
                self.initial[q] = yaml_num((lim.lower + lim.upper) / 2)
        elif j.type in ("revolute", "prismatic") and lim is not None and lim.lower is not None \
                and lim.upper is not None and lim.lower < lim.upper:        # limits=False: warned about
            self.ranges[q] = [yaml_num(lim.lower), yaml_num(lim.upper)]

    def _limit_parameters(self, j, q, force) -> str | None:
        """URDF <limit effort velocity> as parameters <q>_effort, <q>_velocity (when > 0); the
        effort's name (None without one)."""
        lim, effort = j.limit, None
        if lim is None:
            return None
        rate = "rad/s" if j.type != "prismatic" else "m/s"
        for attr, unit, what in (("effort", force, "largest joint torque (force)"),
                                 ("velocity", rate, "largest joint speed")):
            value = getattr(lim, attr, None)
            if value is None:
                continue
            if not _finite([value]) or float(value) < 0:
                self.err(f"joint[{j.name}].limit.{attr}", f"expected a finite number >= 0, found {ex.shown(value)}")
                continue
            if float(value) == 0:                     # URDF's "no limit given" in many files
                continue
            p = self.names(f"{q}_{attr}", "parameter")
            self.params[p] = {"value": yaml_num(value), "unit": unit,
                              "description": f"{what} of joint `{j.name}` (URDF <limit {attr}>)"}
            if attr == "effort":
                effort = p
        return effort

    def _inertial(self, link, name) -> dict:
        where = f"link[{link.name}].inertial"
        inertial = link.inertial
        if inertial is None or inertial.mass is None:
            return {"mass": 0}
        m, I = inertial.mass, inertial.inertia
        if not _finite([m]) or float(m) < 0:
            self.err(f"{where}.mass", f"expected a finite mass >= 0, found {ex.shown(m)}")
            return {"mass": 0}
        if I is None:
            I = np.zeros((3, 3))
        if not _finite(I):
            self.err(f"{where}.inertia", "ixx, ixy, ixz, iyy, iyz, izz must be finite numbers")
            return {"mass": 0}
        T = inertial.origin if inertial.origin is not None else np.eye(4)
        if not _finite(T):
            self.err(f"{where}.origin", "xyz and rpy must be finite numbers")
            return {"mass": 0}
        I = np.asarray(I, dtype=float)
        ev = np.linalg.eigvalsh(I)
        if ev.min() < -1e-12 * max(1.0, abs(ev).max()):
            self.err(f"{where}.inertia", f"the inertia is not positive semi-definite (principal moments "
                                         f"{', '.join(f'{x:.6g}' for x in ev)})")
            return {"mass": 0}
        if float(m) == 0 and not I.any():
            return {"mass": 0}
        R = np.asarray(T, dtype=float)[:3, :3]
        Il = R @ I @ R.T                                   # inertial frame -> link frame, about the com
        com = cleaned(np.asarray(T, dtype=float)[:3, 3])
        pm, pc, pi = (self.names(f"{name}_{s}", "parameter") for s in ("mass", "com", "inertia"))
        self.params[pm] = {"value": yaml_num(m), "unit": "kg", "description": f"mass of link `{link.name}`"}
        self.params[pc] = {"value": [yaml_num(x) for x in com], "unit": "m",
                           "description": f"centre of mass of link `{link.name}`, link frame"}
        self.params[pi] = {"value": [yaml_num(Il[0, 0]), yaml_num(Il[1, 1]), yaml_num(Il[2, 2]),
                                     yaml_num(Il[0, 1]), yaml_num(Il[1, 2]), yaml_num(Il[0, 2])],
                           "unit": "kg*m^2", "description": f"inertia of link `{link.name}` about its centre of "
                                                             "mass, link axes: Ixx, Iyy, Izz, Ixy, Iyz, Ixz"}
        return {"mass": pm, "com": pc, "inertia": pi}

    def _visual(self, link, k, vis) -> dict | None:
        g = vis.geometry
        if g is None:
            return None
        out = None
        if g.box is not None:
            out = {"shape": "box", "size": [yaml_num(x) for x in g.box.size]}
        elif g.cylinder is not None:
            out = {"shape": "cylinder", "radius": yaml_num(g.cylinder.radius), "length": yaml_num(g.cylinder.length)}
        elif g.sphere is not None:
            out = {"shape": "sphere", "radius": yaml_num(g.sphere.radius)}
        elif g.mesh is not None:
            out = {"shape": "mesh", "file": self.resolve(g.mesh.filename)}
            if g.mesh.scale is not None:
                s = np.broadcast_to(np.asarray(g.mesh.scale, dtype=float), (3,))
                if not np.allclose(s, 1.0):
                    out["scale"] = [yaml_num(x) for x in s]
        if out is None:
            return None
        T = vis.origin
        if T is not None and _finite(T):
            xyz, rpy = cleaned(T[:3, 3]), cleaned(rpy_of(T[:3, :3]))
            if any(xyz):
                out["at"] = [yaml_num(x) for x in xyz]
            if any(rpy):
                out["rpy"] = [yaml_num(x) for x in rpy]
        color = getattr(getattr(vis, "material", None), "color", None)
        rgba = getattr(color, "rgba", None)
        if rgba is not None and _finite(rgba):
            out["color"] = [yaml_num(round(float(x), 4)) for x in list(rgba)[:3]]
        return out

    def _mimic_warnings(self):
        if not self.mimics:
            return
        if self.opt.mimic == "coupled":
            raise ModelError(self.file, [Problem(f"joint[{j.name}].mimic", (
                f"coupling joint `{j.name}` to `{j.mimic.joint}` (q = {j.mimic.multiplier or 1} * "
                f"q_{j.mimic.joint} + {j.mimic.offset or 0}) is a constraint between coordinates, which the URDF "
                "loader cannot express (the loop joints of docs/loops.md tie bodies, not coordinates); load with "
                "mimic='independent' (each mimic joint its own coordinate)")) for j in self.mimics])
        names = ", ".join(f"`{j.name}` (mimics `{j.mimic.joint}`)" for j in self.mimics)
        warnings.warn_explicit(f"{self.file}: mimic joints are independent coordinates here, as in Pinocchio's "
                               f"URDF parser without mimic: {names}", _warning_class(), filename=self.file,
                               lineno=0, module="dynamica.urdf")


def _warning_class():
    from dynamica.generator.spec.model import DynamicaWarning
    return DynamicaWarning


def _cycle(joints) -> str:
    """A readable cycle of child -> parent links, when there is one."""
    for start in joints:
        path, link = [], start
        while link in joints and link not in path:
            path.append(link)
            link = joints[link].parent
        if link in path:
            loop = path[path.index(link):] + [link]
            return " -> ".join(f"`{x}`" for x in loop) + " (child -> parent)"
    return "no cycle found"


# ---------------------------------------------------------------- joint kinds (a registry)
@dataclass(frozen=True)
class JointKind:
    dof: int
    motion: object                    # (joint, coordinate name, converter) -> transforms


JOINT_KINDS = {
    "revolute": JointKind(1, lambda j, q, c: [{"rotate": _axis(j.axis), "q": q}]),
    "continuous": JointKind(1, lambda j, q, c: [{"rotate": _axis(j.axis), "q": q}]),
    "prismatic": JointKind(1, lambda j, q, c: [{"translate": _axis(j.axis), "q": q}]),
    "fixed": JointKind(0, lambda j, q, c: []),
    "floating": JointKind(6, lambda j, q, c: [{"type": "free", "q": [
        c.names(f"{q}_{s}", "coordinate") for s in ("x", "y", "z", "rx", "ry", "rz")]}]),
}

#: the parameters of the joint limits' `stop` forces (docs/urdf.md): a 1 kg m^2 link meeting its stop
#: rings at sqrt(1e4) = 100 rad/s, 1 mrad deep under 10 N m; c = 1 s/rad: restitution about 1 - c v
LIMIT_PARAMETERS = {
    "limit_stiffness": {"value": 1e4, "unit": "N*m/rad or N/m", "description": "joint limits: stiffness of the stop"},
    "limit_damping": {"value": 1.0, "unit": "s/rad or s/m",
                      "description": "joint limits: damping of the stop (restitution about 1 - damping * speed)"},
}


# ---------------------------------------------------------------- entry points
def read_urdf(path, options: UrdfOptions = UrdfOptions()) -> dict:
    """The model mapping of a URDF file (what a YAML model file would hold); ModelError naming
    the element for what is wrong with it."""
    path = existing_file(path, "a URDF file")
    file = str(path)
    from dynamica.generator.importers.urdf_xml import mesh_resolver, parse
    robot = parse(path)
    return _Converter(robot, file, options, mesh_resolver(path)).run()


# ---------------------------------------------------------------- a cache of conversions
def cached_model(path, options: UrdfOptions, cache: Path | None) -> dict:
    """`read_urdf`, kept in the module cache keyed by the file's bytes, its place (meshes are
    found relative to it), the options and this tool: a cached load does not import yourdfpy."""
    path = Path(path)
    if cache is None or not path.is_file():
        return read_urdf(path, options)
    from dynamica.build import tool_fingerprint
    key = hashlib.sha256(b"\0".join([tool_fingerprint().encode(), path.read_bytes(),
                                     str(path.resolve()).encode(), options.key().encode()])).hexdigest()
    entry = cache / "urdf" / f"{key}.json"
    try:
        return json.loads(entry.read_text())
    except (OSError, ValueError):
        pass
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = read_urdf(path, options)
    for w in caught:                         # the warnings again, from the caller's point of view
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, module="dynamica.urdf")
    if caught:                                # a model with warnings is converted again each time,
        return model                          # so that they are not lost on a cached load
    try:
        write_atomic(entry, json.dumps(model), parents=True)
    except OSError:
        pass
    return model

"""Stages (the cyclogram of D90, dissertation 5.1.2 and 5.2.2; docs/stages.md): the `stages`
section of a model file, and the kinematic structure of each stage.

A stage is statics or dynamics. Its structure is the model's tree after the changes made so far:
`release` (the body's joint to its parent becomes a free joint to the ground: with its subtree it
moves on as a free body) and `remove` (the body and its subtree leave the system) hold from
their stage on, `lock` (coordinates held at their value, rate 0) only in its own stage. A
structure is a ModelSpec of its own (`derive`), compiled like any model and cached; a locked
coordinate becomes a parameter of the same name (its value set at the stage's start), so the
expressions that use it keep their meaning, and der(locked) is 0.

An event ends a dynamics stage when an expression of t, coordinates, rates, parameters and
output values crosses zero. Outputs are named by their keys (`spring.tension`, `tip.position[2]`,
an expression's name); `event_expression` rewrites them into local names before parsing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.expr import found
from dynamica.generator.spec.model import AXES, Parameter, Shape, Transform

STAGE_TYPES = ("statics", "dynamics")
DIRECTIONS = {"rising": 1, "falling": -1, "both": 0}
#: the coordinates of a released body: translations along the ground's axes, Cardan rotations
FREE_SUFFIXES = ("_x", "_y", "_z", "_rx", "_ry", "_rz")


@dataclass(frozen=True)
class Stage:
    name: str
    type: str                        # "statics" | "dynamics"
    until: float | None = None       # dynamics: absolute end time
    event: tuple | None = None       # (expression text, direction +1 | -1 | 0)
    set: tuple = ()                  # ((parameter, value), ...): values from this stage on
    lock: tuple = ()                 # coordinates held in this stage
    release: tuple = ()              # bodies cut free from this stage on
    remove: tuple = ()               # bodies dropped (with their subtrees) from this stage on
    free: tuple | None = None        # statics: the coordinates solved for (None: all not locked)
    output_step: float | None = None
    path: str = ""


@dataclass(frozen=True)
class Structure:
    """What makes a stage's tree differ from the model's: a key of the compiled modules."""
    released: tuple = ()             # in the order of release
    removed: tuple = ()              # every removed body, subtrees included (sorted)
    locked: tuple = ()               # sorted

    @property
    def is_base(self) -> bool:
        return not (self.released or self.removed or self.locked)


def free_coordinates(body: str) -> tuple:
    return tuple(body + s for s in FREE_SUFFIXES)


# ------------------------------------------------------------------ structures
def _subtree(bodies, roots) -> set:
    """The names of `roots` and of every body below them (bodies: Body records with parents)."""
    children = {}
    for b in bodies:
        children.setdefault(b.parent, []).append(b.name)
    out, todo = set(), list(roots)
    while todo:
        b = todo.pop()
        if b not in out:
            out.add(b)
            todo.extend(children.get(b, []))
    return out


def structures(spec) -> list:
    """The Structure of every stage of `spec`, in order."""
    released, removed, out = [], set(), []
    for st in spec.stages:
        released += [b for b in st.release if b not in released]
        tree = [replace(b, parent="ground") if b.name in released else b for b in spec.bodies]
        removed |= _subtree(tree, st.remove)
        out.append(Structure(released=tuple(b for b in released if b not in removed),
                             removed=tuple(sorted(removed)), locked=tuple(sorted(st.lock))))
    return out


def coordinates_of(spec, structure: Structure) -> tuple:
    """The coordinates of a structure's tree, locked ones included (in the model's order; a
    released body's free coordinates take the place of its joint's)."""
    out = []
    for b in spec.bodies:
        if b.name in structure.removed:
            continue
        out += free_coordinates(b.name) if b.name in structure.released else b.coordinates
    return tuple(out)


def result_columns(spec, coordinates) -> tuple:
    """The coordinate columns of a staged run's results: the first structure's `coordinates`, then
    each later stage's new ones (a released body's free coordinates) in order of appearance, as
    runtime/stages/cyclogram.py builds them."""
    out = list(coordinates)
    for st in structures(spec):
        out += [c for c in coordinates_of(spec, st) if c not in out]
    return tuple(out)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _names_in(value) -> set:
    """Identifiers an entry (expression text, number, tuple of them) uses."""
    if isinstance(value, str):
        return set(_NAME.findall(value))
    if isinstance(value, tuple):
        return set().union(*(_names_in(v) for v in value)) if value else set()
    return set()


def _zero_rates(value, locked):
    """der(c) -> 0 for the locked coordinates c (their rate is 0 in the stage)."""
    if isinstance(value, str) and "der" in value:
        for c in locked:
            value = re.sub(rf"\bder\s*\(\s*{c}\s*\)", "(0)", value)
        return value
    if isinstance(value, tuple):
        return tuple(_zero_rates(v, locked) for v in value)
    return value


def derive(spec, structure: Structure):
    """The ModelSpec of a stage's structure, and the names of the model's force elements and
    named outputs it leaves out (they act on removed bodies or use vanished coordinates)."""
    from dynamica.generator.spec.model import Outputs
    removed, released, locked = set(structure.removed), set(structure.released), set(structure.locked)
    vanished = {c for b in spec.bodies if b.name in removed or b.name in released for c in b.coordinates}
    bodies = []
    for b in spec.bodies:
        if b.name in removed:
            continue
        if b.name in released:
            names = free_coordinates(b.name)
            joint = tuple(Transform(kind, AXES[a], q=c, path=f"{b.path}.joint")
                          for (kind, a), c in zip([("translate", a) for a in "xyz"] + [("rotate", a) for a in "xyz"],
                                                  names))
            b = replace(b, parent="ground", joint=joint)
        elif locked & set(b.coordinates):
            b = replace(b, joint=tuple(replace(tr, q=None, by=tr.q) if tr.q in locked else tr for tr in b.joint))
        bodies.append(b)
    params = spec.parameters + tuple(Parameter(c, 0.0, description="locked coordinate") for c in sorted(locked))
    dropped = []

    def keeps(fields, name):
        bodies_used = {v for k, v in fields if k in ("body", "body_a", "body_b") and isinstance(v, str)}
        bodies_used |= {v.body for _, v in fields if isinstance(v, Shape)}         # a contact's shapes
        coords_used = {v for k, v in fields if k == "coordinate"}
        if bodies_used & removed or coords_used & (vanished | locked) or _names_in(
                tuple(v for k, v in fields if k not in ("body", "body_a", "body_b", "coordinate", "name"))) & vanished:
            dropped.append(name)
            return False
        return True
    forces = tuple(replace(f, fields=_zero_rates(f.fields, locked)) for f in spec.forces if keeps(f.fields, f["name"]))
    o = spec.outputs
    exprs = []
    for name, text in o.expressions:
        if _names_in(text) & vanished:
            dropped.append(name)
        else:
            exprs.append((name, _zero_rates(text, locked)))
    outputs = Outputs(points=tuple(p for p in o.points if p[1] not in removed),
                      angular=tuple(b for b in o.angular if b not in removed), reactions=o.reactions,
                      expressions=tuple(exprs), forces=o.forces)
    gone = vanished | locked
    loops = tuple(lp for lp in spec.loops if lp.body_a not in removed and lp.body_b not in removed)
    derived = replace(
        spec,
        name=f"{spec.name}_{_digest(structure)}",
        parameters=params,
        bodies=tuple(bodies),
        initial=tuple((k, v) for k, v in spec.initial if _coordinate_of(k) not in gone),
        forces=forces,
        outputs=outputs,
        loops=loops,
        assembly_hold=tuple(h for h in spec.assembly_hold if _coordinate_of(h) not in gone),
        stages=(),
    )
    return derived, tuple(dropped)


def _coordinate_of(key: str) -> str:
    return key[4:-1] if key.startswith("der(") else key


def _digest(structure: Structure) -> str:
    import hashlib
    return hashlib.sha256(repr(structure).encode()).hexdigest()[:10]


# ------------------------------------------------------------------ events
#: an output key with a dot (`spring.tension`, `tip.position`), maybe indexed (`tip.position[2]`)
OUTPUT_REF = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\.([A-Za-z_]\w*)(?:\s*\[\s*(\d+)\s*\])?")


def event_expression(text, scope: ex.Scope, plain_outputs=()):
    """(sympy expression, refs): `text` parsed with the outputs it names replaced by local
    symbols; refs = ((local name, output key, component index or None), ...). `plain_outputs`:
    output keys without a dot (the model's named expressions) usable as they are."""
    if not isinstance(text, str):
        return ex.parse(text, scope), ()
    taken = set(scope.scalars) | set(scope.vectors) | set(scope.coordinates) | set(plain_outputs)
    refs, seen = [], {}

    def local(m):
        key, idx = f"{m.group(1)}.{m.group(2)}", m.group(3)
        ident = (key, None if idx is None else int(idx))
        if ident not in seen:
            k = len(seen)
            name = f"_out{k}_"
            while name in taken:
                name = "_" + name
            seen[ident] = name
            refs.append((name, key, ident[1]))
        return seen[ident]
    rewritten = OUTPUT_REF.sub(local, text)
    plain = tuple(n for n in plain_outputs if n not in scope.scalars and n not in scope.coordinates)
    refs += [(n, n, None) for n in plain if re.search(rf"\b{n}\b", rewritten)]
    e = ex.parse(rewritten, scope.child(local=tuple(scope.local) + tuple(r[0] for r in refs)))
    return e, tuple(refs)


# ------------------------------------------------------------------ the loader's section
class StageSections:
    """The loader's `stages` section (mixed into loader._Loader, which has err, keys, ident, ...)."""

    STAGE_KEYS = {"name", "type", "until", "event", "set", "lock", "release", "remove", "free", "output_step"}

    def stages(self, lst: list, bodies, params, outputs, forces, loops) -> list:
        out, seen = [], {}
        released, removed, last_until = [], {}, None
        by_name = {b.name: b for b in bodies if isinstance(b.name, str)}
        all_names = set(by_name) | {c for b in bodies for c in b.coordinates} | {p.name for p in params}
        for i, d in enumerate(lst):
            path = self.entry = f"stages[{i}]"
            if not isinstance(d, dict):
                self.err(path, f"expected a mapping with `name` and `type`, found {found(d)}")
                continue
            st_type = d.get("type", "dynamics")
            if st_type not in STAGE_TYPES:
                self.err(f"{path}.type", f"expected one of {', '.join(STAGE_TYPES)}, found {found(st_type)}")
                continue
            allowed = self.STAGE_KEYS - ({"until", "event", "output_step"} if st_type == "statics" else {"free"})
            self.keys(d, path, allowed, required=("name",) + (("until",) if st_type == "dynamics" else ()))
            name = d.get("name")
            if "name" in d and self.ident(name, f"{path}.name", "a stage name"):
                if name in seen:
                    self.err(f"{path}.name", f"duplicate stage name `{name}` (also {seen[name]})")
                seen.setdefault(name, path)
            where = f"stage `{name}`" if isinstance(name, str) else path
            rel, rem, coords = self._structure(d, path, where, by_name, released, removed, all_names)
            lock = self._names(d, "lock", path, where, coords, "coordinate")
            free = None
            if st_type == "statics" and "free" in d:
                free = self._names(d, "free", path, where, coords, "coordinate")
                for c in set(free) & set(lock):
                    self.err(f"{path}.free", f"{where}: coordinate `{c}` is both locked and free")
            sets = self._sets(d.get("set"), f"{path}.set", where, params)
            until = event = step = None
            if st_type == "dynamics":
                until = self.number(d.get("until"), f"{path}.until") if "until" in d else None
                if until is not None and last_until is not None and until < last_until:
                    self.err(f"{path}.until", f"{where}: ends at {until}, before the stage before it ({last_until}); "
                                              "`until` is an absolute time")
                last_until = until if until is not None else last_until
                if "output_step" in d:
                    step = self.number(d["output_step"], f"{path}.output_step", positive=True)
                if "event" in d:
                    event = self._event(d["event"], f"{path}.event", where, coords, lock, params, outputs,
                                        set(by_name) | {f["name"] for f in forces} | {lp.name for lp in loops},
                                        removed, {f["name"] for f in forces})
            out.append(Stage(name=name, type=st_type, until=until, event=event, set=sets, lock=tuple(lock),
                             release=tuple(rel), remove=tuple(rem), free=None if free is None else tuple(free),
                             output_step=step, path=path))
        return out

    def _structure(self, d, path, where, by_name, released, removed, all_names):
        """A stage's releases and removals (they hold from here on: `released` and `removed`
        grow) and the coordinates of the structure they leave: (release, remove, coordinates)."""
        rel = self._bodies(d, "release", path, where, by_name, removed)
        for b in rel:
            if b in released:
                self.err(f"{path}.release", f"{where}: body `{b}` was released before")
            clash = set(free_coordinates(b)) & all_names
            if clash:
                self.err(f"{path}.release", f"{where}: releasing `{b}` makes the coordinates "
                                            f"{', '.join(free_coordinates(b))}, but `{sorted(clash)[0]}` is taken")
        released += [b for b in rel if b not in released]
        rem = self._bodies(d, "remove", path, where, by_name, removed)
        tree = [replace(b, parent="ground") if b.name in released else b for b in by_name.values()]
        for b in rem:
            for x in _subtree(tree, [b]):
                removed.setdefault(x, where)
        coords = coordinates_of(_Tree(tuple(by_name.values())),
                                Structure(released=tuple(b for b in released if b not in removed),
                                          removed=tuple(removed)))
        return rel, rem, coords

    def _list(self, d, key, path, where):
        v = d.get(key, [])
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list):
            self.err(f"{path}.{key}", f"{where}: expected a list of names, found {found(v)}")
            return []
        return v

    def _bodies(self, d, key, path, where, by_name, removed) -> list:
        out = []
        for k, b in enumerate(self._list(d, key, path, where)):
            p = f"{path}.{key}[{k}]"
            if b == "ground":
                self.err(p, f"{where}: the ground cannot be {'released' if key == 'release' else 'removed'}")
            elif not (isinstance(b, str) and b in by_name):
                hint = ex.did_you_mean(b, by_name) if isinstance(b, str) and len(b) < 100 else ""
                self.err(p, f"{where}: unknown body {ex.shown(b)}{hint}")
            elif b in removed:
                self.err(p, f"{where}: body `{b}` was removed before (in {removed[b]})")
            elif b in out:
                self.err(p, f"{where}: body `{b}` is named twice")
            else:
                out.append(b)
        return out

    def _names(self, d, key, path, where, coords, what) -> list:
        out = []
        for k, c in enumerate(self._list(d, key, path, where)):
            if not (isinstance(c, str) and c in coords):
                hint = ex.did_you_mean(c, coords) if isinstance(c, str) and len(c) < 100 else ""
                self.err(f"{path}.{key}[{k}]", f"{where}: unknown {what} {ex.shown(c)}{hint} (the coordinates of "
                                               "this stage's structure)")
            elif c not in out:
                out.append(c)
        return out

    def _sets(self, v, path, where, params) -> tuple:
        if v is None:
            return ()
        if not isinstance(v, dict):
            self.err(path, f"{where}: expected a mapping parameter -> value, found {found(v)}")
            return ()
        declared = {p.name: p for p in params}
        out = []
        for name, value in v.items():
            p = ex.join_path(path, name)
            if name not in declared:
                hint = ex.did_you_mean(name, declared) if isinstance(name, str) and len(name) < 100 else ""
                self.err(p, f"{where}: unknown parameter {ex.shown(name)}{hint}")
            elif isinstance(declared[name].value, tuple):
                vals = value if isinstance(value, list) else None
                if vals is None or len(vals) != declared[name].size:
                    self.err(p, f"{where}: vector parameter `{name}` takes a list of {declared[name].size} numbers, "
                                f"found {found(value)}")
                    continue
                nums = [self.number(x, f"{p}[{k}]") for k, x in enumerate(vals)]
                if all(x is not None for x in nums):
                    out.append((name, tuple(nums)))
            else:
                x = self.expression(value, p, self.pscope.child(time_allowed=False))
                if x is not None:
                    out.append((name, x))
        return tuple(out)

    def _event(self, v, path, where, coords, lock, params, outputs, owners, removed, force_names):
        """(text, direction) of a stage's event; `owners`: the names an output key can start with
        besides the points (bodies, forces, loops)."""
        if isinstance(v, str):
            v = {"expr": v}
        if not isinstance(v, dict):
            self.err(path, f"{where}: expected {{expr: ..., direction: rising | falling | both}}, found {found(v)}")
            return None
        self.keys(v, path, {"expr", "direction"}, required=("expr",))
        direction = v.get("direction", "both")
        if direction not in DIRECTIONS:
            self.err(f"{path}.direction", f"{where}: expected rising, falling or both, found {found(direction)}")
            return None
        if "expr" not in v:
            return None
        text = v["expr"]
        lock = set(lock)
        scope = ex.Scope(scalars=frozenset({p.name for p in params if not isinstance(p.value, tuple)} | lock),
                         vectors={p.name: p.size for p in params if isinstance(p.value, tuple)},
                         coordinates=frozenset(set(coords) - lock), coordinates_allowed=True, time_allowed=True)
        try:
            if isinstance(text, str):
                text = _zero_rates(text, lock)
            e, refs = event_expression(text, scope, [n for n, _ in outputs.expressions])
        except ex.ExpressionError as exc:
            self.err(f"{path}.expr", f"{where}: {exc}")
            return None
        owners = set(owners) | {p[0] for p in outputs.points}
        for _, key, _ in refs:
            owner = key.split(".")[0]
            if "." in key and owner not in owners:
                hint = ex.did_you_mean(owner, owners) if len(owner) < 100 else ""
                self.err(f"{path}.expr", f"{where}: `{key}` is not an output: `{owner}` is not a point, body, force "
                                         f"or loop of the model{hint}")
            elif "." in key and owner in removed:
                self.err(f"{path}.expr", f"{where}: `{key}` belongs to body `{owner}`, removed in {removed[owner]}")
            elif owner in force_names and not outputs.forces:
                self.err(f"{path}.expr", f"{where}: `{key}` is the value of a force element, an output only with "
                                         "`outputs: {forces: true}`")
        return (text, DIRECTIONS[direction])


@dataclass(frozen=True)
class _Tree:
    """The bodies alone, for coordinates_of during loading."""
    bodies: tuple

"""The loading of `forces` and `outputs` (docs/model_format.md): the part of the loader
(loader._Loader) that reads the force elements (their types and required fields from the
registry in generator/mechanics/forces.py) and what the outputs section asks for.
"""

from __future__ import annotations

from dynamica.generator.mechanics.forces import FORCE_TYPES, LAW_LOCALS, REQUIRED
from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.expr import found, join_path
from dynamica.generator.spec.model import OUTPUT_KEYS_RESERVED, Force, Outputs


class ForceSections:
    """Methods of loader._Loader: `forces` and `outputs` (uses its err, keys, expression, ...)."""

    def forces(self, lst: list, coords, body_names, bodies, more=()) -> list:
        """The force elements of `forces` and then `more` ((path, mapping): the contact pairs)."""
        out, names = [], {}
        com_of = {b.name: b.com for b in bodies}
        entries = [(f"forces[{i}]", f) for i, f in enumerate(lst)] + list(more)
        for i, (path, f) in enumerate(entries):
            self.entry = path
            if not isinstance(f, dict):
                self.err(path, f"expected a mapping with a `type`, found {found(f)}")
                continue
            ft = f.get("type")
            if not isinstance(ft, str) or ft not in FORCE_TYPES:
                hint = ex.did_you_mean(ft, FORCE_TYPES) if isinstance(ft, str) and len(ft) < 100 else ""
                self.err(f"{path}.type", f"unknown force type {ex.shown(ft)}{hint}; "
                                         f"expected one of {', '.join(FORCE_TYPES)}")
                continue
            schema = FORCE_TYPES[ft].schema
            self.keys(f, path, set(schema) | {"type", "name"},
                      required=[k for k, (kind, dflt) in schema.items() if dflt is REQUIRED])
            fields = []
            for key, (kind, dflt) in schema.items():
                p = f"{path}.{key}"
                v = f.get(key, dflt)
                if v is REQUIRED or (v is None and kind in ("expr", "law")):     # optional, not given
                    continue
                v = FIELD_KINDS[kind](self, v, p, coords, body_names, com_of.get(f.get("body")) if
                                      isinstance(f.get("body"), str) else None)
                if v is not None:
                    fields.append((key, v))
            if FORCE_TYPES[ft].check is not None:
                for key, message in FORCE_TYPES[ft].check(f, dict(fields)):
                    self.err(f"{path}.{key}" if key else path, message)
            name = f.get("name", f"{ft}_{i}")
            if "name" in f and not self.ident(name, f"{path}.name", "a force name"):
                continue
            if name in names:
                self.err(f"{path}.name" if "name" in f else path,
                         f"force name `{name}` is already used by {names[name]} (its outputs would be the "
                         "same keys)")
            names.setdefault(name, path)
            out.append(Force(ft, tuple(fields) + (("name", name),), path))
        return out

    # -- force fields by kind (FORCE_TYPES): the checked value, or None after an error
    def coordinate_field(self, v, p, coords, body_names, com):
        if isinstance(v, str) and v in coords:
            return v
        hint = ex.did_you_mean(v, coords) if isinstance(v, str) and len(v) < 100 else ""
        self.unknown(p, v, f"unknown coordinate {ex.shown(v)}{hint}")

    def body_field(self, v, p, coords, body_names, com, ground=False):
        if isinstance(v, str) and (v in body_names or (ground and v == "ground")):
            return v
        hint = ex.did_you_mean(v, body_names) if isinstance(v, str) and len(v) < 100 else ""
        self.err(p, f"unknown body {ex.shown(v)}{hint}")

    def point_field(self, v, p, coords, body_names, com):
        if v is None:                    # the centre of mass of the force's body
            return com or (0, 0, 0)
        return self.vector(v, p, self.pscope.child(time_allowed=False))

    def frame_field(self, v, p, coords, body_names, com):
        if isinstance(v, str) and v in ("ground", "body"):
            return v
        self.err(p, f"expected `ground` or `body`, found {found(v)}")

    def outputs(self, d: dict, body_names) -> Outputs:
        self.keys(d, "outputs", {"points", "angular", "reactions", "expressions", "forces", "energy"})
        points = []
        for name, pt in self.mapping(d, "points", "outputs.points", "a mapping name -> {body:, at:}").items():
            p = self.entry = join_path("outputs.points", name)
            if not self.ident(name, p, "a point name"):
                continue
            if not isinstance(pt, dict):
                self.err(p, f"expected {{body: NAME, at: [x, y, z]}}, found {found(pt)}")
                continue
            self.keys(pt, p, {"body", "at"}, required=("body",))
            body = pt.get("body")
            if not (isinstance(body, str) and (body in body_names or body == "ground")):
                hint = ex.did_you_mean(body, body_names) if isinstance(body, str) and len(body) < 100 else ""
                if "body" in pt:
                    self.err(f"{p}.body", f"unknown body {ex.shown(body)}{hint}")
                continue
            at = self.vector(pt.get("at", [0, 0, 0]), f"{p}.at", self.pscope.child(time_allowed=False))
            if at is not None:
                points.append((name, body, at))
        angular = d.get("angular") or []
        if not isinstance(angular, list):
            self.err("outputs.angular", f"expected a list of body names, found {found(angular)}")
            angular = []
        for k, b in enumerate(angular):
            if not (isinstance(b, str) and b in body_names):
                hint = ex.did_you_mean(b, body_names) if isinstance(b, str) and len(b) < 100 else ""
                self.err(f"outputs.angular[{k}]", f"unknown body {ex.shown(b)}{hint}")
        reactions = d.get("reactions", False)
        if not isinstance(reactions, bool):
            self.err("outputs.reactions", f"expected true or false, found {found(reactions)}")
            reactions = False
        forces, energy = (self.flag(d, key) for key in ("forces", "energy"))
        exprs = []
        for name, e in self.mapping(d, "expressions", "outputs.expressions", "a mapping name -> expression").items():
            p = self.entry = join_path("outputs.expressions", name)
            if name in OUTPUT_KEYS_RESERVED:
                self.err(p, f"`{name}` is the name of an output the tool writes; choose another")
            elif self.ident(name, p, "an expression name"):
                v = self.expression(e, p, self.fscope)
                if v is not None:
                    exprs.append((name, v))
        return Outputs(tuple(points), tuple(b for b in angular if isinstance(b, str) and b in body_names),
                       reactions, tuple(exprs), forces, energy)


#: force field kind -> its check: (loader, value, path, coordinates, body names, com of the force's
#: body) -> the checked value, or None after an error
FIELD_KINDS = {
    "coordinate": ForceSections.coordinate_field,
    "body": ForceSections.body_field,
    "body_or_ground": lambda self, *a: self.body_field(*a, ground=True),
    "point": ForceSections.point_field,
    "frame": ForceSections.frame_field,
    "expr": lambda self, v, p, *a: self.expression(v, p, self.fscope),
    "law": lambda self, v, p, *a: self.expression(v, p, self.fscope.child(local=LAW_LOCALS)),
    "vector": lambda self, v, p, *a: self.vector(v, p, self.fscope),
    "constant": lambda self, v, p, *a: self.expression(v, p, self.pscope.child(time_allowed=False)),
    "shape": lambda self, *a: self.shape_field(*a),
}

"""Reading a URDF file for generator/importers/urdf.py: the XML (lxml, which yourdfpy reads with), the
checks that name an element where yourdfpy would fail with a bare Python exception, yourdfpy's
robot, and the resolution of mesh file names."""

from __future__ import annotations

import math
import os
from pathlib import Path

from dynamica.errors import ModelError, Problem
from dynamica.generator.spec import expr as ex


def parse(path: Path):
    """yourdfpy's robot (links, joints) without loading meshes; its exceptions become a
    ModelError naming the element that could not be read."""
    from lxml import etree
    try:
        tree = etree.parse(str(path), etree.XMLParser(remove_blank_text=True))
    except (etree.XMLSyntaxError, OSError) as exc:
        raise ModelError(str(path), [Problem("", f"not a valid XML file: {exc}")]) from None
    root = tree.getroot()
    if root.tag != "robot":
        raise ModelError(str(path), [Problem("", f"expected a <robot> element at the top, found <{root.tag}>")])
    problems = list(_element_problems(root))
    if problems:
        raise ModelError(str(path), problems)
    import yourdfpy
    etree.strip_tags(root, etree.Comment)
    try:
        return yourdfpy.URDF._parse_robot(xml_element=root)
    except Exception as exc:                 # noqa: BLE001 (a library's exception must not escape as a traceback)
        raise ModelError(str(path), [Problem("robot", f"yourdfpy cannot read the file: {type(exc).__name__}: "
                                                      f"{ex.shown(str(exc), 200)}")]) from None


_NUMERIC = {"origin": ("xyz", "rpy"), "axis": ("xyz",), "mass": ("value",),
            "inertia": ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), "limit": ("lower", "upper", "effort", "velocity"),
            "dynamics": ("damping", "friction"), "mimic": ("multiplier", "offset")}


def _element_problems(root):
    """What yourdfpy would fail on with a bare Python exception, named by element: a link or
    joint without a name, a joint without parent/child, attributes that are not numbers."""
    for kind in ("link", "joint"):
        for k, el in enumerate(root.findall(kind)):
            name = el.get("name")
            where = f"{kind}[{name}]" if name else f"{kind}[{k}]"
            if not name:
                yield Problem(where, f"a <{kind}> without a name attribute")
            if kind == "joint":
                for role in ("parent", "child"):
                    sub = el.find(role)
                    if sub is None or not sub.get("link"):
                        yield Problem(f"{where}.{role}", f"missing <{role} link=\"...\"/>")
                if el.find("mimic") is not None and not el.find("mimic").get("joint"):
                    yield Problem(f"{where}.mimic", "a <mimic> without its joint attribute")
            for sub in el.iter():
                attrs = _NUMERIC.get(sub.tag, ())
                for a in attrs:
                    text = sub.get(a)
                    if text is None:
                        continue
                    try:
                        vals = [float(x) for x in text.split()]
                    except ValueError:
                        vals = None
                    if not vals or not all(math.isfinite(v) for v in vals):
                        path = where + "".join(f".{p.tag}" for p in _ancestors(sub, el)) + f".{sub.tag}.{a}"
                        yield Problem(path, f"expected finite number(s), found {ex.shown(text)}")


def _ancestors(sub, top):
    out, p = [], sub.getparent()
    while p is not None and p is not top:
        out.append(p)
        p = p.getparent()
    return reversed(out)


def mesh_resolver(path: Path):
    """package:// and relative mesh names as absolute file names (yourdfpy's search: the URDF's
    directory and its parents); a name that cannot be resolved is kept as written."""
    def resolve(name):
        import logging

        from yourdfpy.urdf import filename_handler_magic
        logging.getLogger("yourdfpy").setLevel(logging.ERROR)
        found_ = filename_handler_magic(name, dir=str(path.parent))
        return os.path.abspath(found_) if os.path.isfile(found_) else name
    return resolve

"""`dynamica convert robot.urdf -o robot.yaml` (or model.xml, MJCF): a robot description as a readable
model file (docs/urdf.md, docs/mjcf.md). The YAML holds exactly the mapping `dynamica.load` builds from the URDF, so
loading either gives the same module; mesh files are named relative to the YAML file."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from dynamica.errors import ModelError, Problem
from dynamica.files import write_atomic


class _Dumper(yaml.SafeDumper):
    """Block style for the structure, flow style for lists of numbers and for transforms."""


def _represent_list(dumper, data):
    flow = all(isinstance(x, (int, float, str)) for x in data) and len(data) <= 8
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_dict(dumper, data):
    small = len(data) <= 4 and all(isinstance(v, (int, float, str)) or
                                   (isinstance(v, list) and all(isinstance(x, (int, float, str)) for x in v))
                                   for v in data.values()) and "description" not in data
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=small or None)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(dict, _represent_dict)


def convert(source, out, **options) -> Path:
    """Write the model file of a robot description `source` to `out`; returns `out`."""
    from dynamica.generator.spec.loader import IMPORTERS, load
    source, out = Path(source), Path(out)
    importer = IMPORTERS.get(source.suffix.lower())
    if importer is None:
        raise ModelError(str(source), [Problem("", f"cannot convert a `{source.suffix}` file; convert reads "
                                                   f"{', '.join(IMPORTERS)} files")])
    model = importer(source, **options)
    load(model, file=str(source))                       # every check of a model file, before writing
    for body in model["bodies"]:
        for vis in body.get("visual", []):
            if vis.get("shape") == "mesh" and os.path.isabs(vis["file"]):
                vis["file"] = os.path.relpath(vis["file"], out.resolve().parent)
    part, parts = ("body", "bodies") if "MJCF" in model.get("description", "") else ("link", "links")
    head = (f"# {model['name']}: converted by `dynamica convert` from {source.name}\n"
            f"# parameters are named after the {parts} (<{part}>_mass, _com, _inertia) and joints\n")
    text = head + yaml.dump(model, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
    return write_atomic(out, text, parents=True)

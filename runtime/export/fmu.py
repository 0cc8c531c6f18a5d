"""A model's equations as an FMI 2.0 FMU for linux64 (docs/export.md): Model Exchange (the importer
integrates), Co-Simulation (the FMU integrates with dynamica's variable-step, variable-order
Adams method, the plain-C runtime/native/dynamica_adams.h that the Python integrator runs too,
the inputs held over a communication step, the loops projected after every step) or both in
one FMU.

The FMU is the standalone C library (c_library.py) plus `fmu.c` (templates/export/fmu.c.j2: the
model's sizes and functions) over the fixed FMI 2.0 functions (templates/export/dynamica_fmi2.h),
compiled into binaries/linux64/<name>.so with the C compiler Python was built with (as build.py
builds the modules; $CC overrides it); its sources are in sources/. The variables
(modelDescription.xml): the continuous states q, der(q) and the extra states with their
derivatives der(der(q)), der(s); the model's parameters as tunable parameters (units and
descriptions of the model file); its inputs as real inputs; its outputs (points, reactions,
energy, expressions) as real outputs.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
import uuid
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from dynamica.errors import BuildError
from dynamica.files import atomic_path
from dynamica.runtime.export import ExportError
from dynamica.runtime.export.c_library import DOPRI, build_library, library_context
from dynamica.version import __version__

KINDS = {"me": (True, False), "cs": (False, True), "both": (True, True)}
FMI_HEADERS = ("fmi2Functions.h", "fmi2FunctionTypes.h", "fmi2TypesPlatform.h")
#: the fixed part of fmu.c (templates/export): the FMI 2.0 functions over the model's hooks, over what
#: every interface shares (the instance, the value references, Co-Simulation's integration)
FMI_CORE = "dynamica_fmi2.h"
FMU_SHARED = "dynamica_fmu.h"
FMU_ME = "dynamica_fmu_me.h"                    # Model Exchange functions FMI 2.0 and 3.0 share
#: the Co-Simulation integrator (runtime/native): the Adams method of dynamica.simulate
ADAMS = "dynamica_adams.h"
#: the Co-Simulation integrator's default tolerances (a tolerance from fmi2SetupExperiment sets rtol)
CS_RTOL, CS_ATOL = 1e-10, 1e-12
#: the loops' projection tolerance in the FMU (position and velocity Newton steps)
PROJECT_TOL = 1e-12
#: Model Exchange: a step event (the state projected) when a loop's position residual exceeds this
DRIFT_TOL = 1e-9
COMPILE_ARGS = ("-std=c99", "-O2", "-fno-math-errno", "-fPIC", "-shared", "-fvisibility=hidden")


@dataclass(frozen=True)
class Variable:
    name: str
    vr: int
    causality: str
    variability: str
    start: float | None = None
    initial: str | None = None
    unit: str = ""
    description: str = ""
    derivative: str | None = None     # the name of the state it is the derivative of


def compiler() -> list:
    """The C compiler: $CC, else the one Python was built with, else cc or gcc on PATH."""
    cc = os.environ.get("CC") or (sysconfig.get_config_var("CC") or "")
    cmd = shlex.split(cc)
    if cmd and shutil.which(cmd[0]):
        return cmd
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    raise BuildError("exporting an FMU needs a C compiler (gcc or clang), none found on PATH", "")


def variables(lib) -> list:
    """The FMU's variables in order, value references as fmu.c.j2 lays them out."""
    from dynamica.runtime.results.units import variable_units
    model = lib.model
    n, ns = model.n, len(model.states)
    units = variable_units(model)
    spec_units = {p.name: (p.unit or "", p.description or "") for p in model.spec.parameters}
    state_units = {s.name: (getattr(s, "unit", None) or "", getattr(s, "description", None) or "")
                   for s in model.spec.states}
    out = []
    for j, c in enumerate(model.coordinates):
        out.append(Variable(c, j, "local", "continuous", lib.y0[j], "exact", units.get(c, ""),
                            f"coordinate {c}"))
    for j, c in enumerate(model.coordinates):
        out.append(Variable(f"der({c})", n + j, "local", "continuous", lib.y0[n + j], "exact",
                            units.get(f"der({c})", ""), f"rate of {c}", derivative=c))
    for j, s in enumerate(model.states):
        out.append(Variable(s, 2 * n + j, "local", "continuous", lib.y0[2 * n + j], "exact", state_units[s][0],
                            state_units[s][1] or f"extra state {s}"))
    vr_der, vr_p = lib.ny, lib.ny + n + ns
    for j, c in enumerate(model.coordinates):
        out.append(Variable(f"der(der({c}))", vr_der + j, "local", "continuous", unit=units.get(f"qdd[{j}]", ""),
                            description=f"acceleration of {c}", derivative=f"der({c})"))
    for j, s in enumerate(model.states):
        unit = state_units[s][0]
        out.append(Variable(f"der({s})", vr_der + n + j, "local", "continuous", unit=f"{unit}/s" if unit else "",
                            description=f"rate of {s}", derivative=s))
    declared = {p.name for p in model.spec.parameters}
    for k, name in enumerate(lib.p_names):
        base = name.split("[")[0]
        if base in declared:
            unit, desc = spec_units[base]
            out.append(Variable(name, vr_p + k, "parameter", "tunable", lib.p_default[k], "exact", unit,
                                desc or f"parameter {name}"))
    for j, u in enumerate(model.inputs):
        out.append(Variable(u, vr_p + model.slots["inputs"] + j, "input", "continuous", 0.0,
                            description=f"input {u} (held between communication points in Co-Simulation)"))
    vr_out = vr_p + len(lib.p_names)
    for j, name in enumerate(lib.output_names):
        key = name.split("[")[0]
        unit = units.get(name.replace(",", "]["), units.get(key, "")) if "," not in name else units.get(key, "")
        out.append(Variable(f"{name}", vr_out + j, "output", "continuous", unit=unit or "",
                            description=f"output {name}"))
    names = [v.name for v in out]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise ExportError(f"model {model.name!r}: the FMU's variables would share the name(s) {', '.join(dup)}")
    return out


def _fmt(x: float) -> str:
    return repr(float(x))


def _units_and_experiment(root, model, variables_: list) -> None:
    """The elements FMI 2.0 and 3.0 write alike: UnitDefinitions (when a variable has a unit)
    and DefaultExperiment (the model's simulate section)."""
    units = sorted({v.unit for v in variables_ if v.unit})
    if units:
        defs = ET.SubElement(root, "UnitDefinitions")
        for u in units:
            ET.SubElement(defs, "Unit", {"name": u})
    sim = model.spec.simulate
    exp = {"startTime": "0.0", "stopTime": _fmt(sim.t_end), "tolerance": _fmt(sim.rtol)}
    if sim.output_step:
        exp["stepSize"] = _fmt(sim.output_step)
    ET.SubElement(root, "DefaultExperiment", exp)


def _value_attributes(v, ref) -> dict:
    """A real variable's start, unit and the reference of the state it is the derivative of
    (FMI 2 <Real>, FMI 3 <Float64>)."""
    out = {}
    if v.start is not None:
        out["start"] = _fmt(v.start)
    if v.unit:
        out["unit"] = v.unit
    if v.derivative:
        out["derivative"] = str(ref[v.derivative])
    return out


def _variable_attributes(v) -> dict:
    """A model variable's attributes common to FMI 2.0 and 3.0."""
    attrs = {"name": v.name, "valueReference": str(v.vr), "description": v.description,
             "causality": v.causality, "variability": v.variability}
    if v.initial:
        attrs["initial"] = v.initial
    return attrs


def model_description(lib, me: bool, cs: bool, guid: str, variables_: list) -> str:
    model = lib.model
    root = ET.Element("fmiModelDescription", {
        "fmiVersion": "2.0", "modelName": model.name, "guid": guid,
        "description": (model.spec.description or f"model {model.name}").strip(),
        "generationTool": f"dynamica {__version__}", "variableNamingConvention": "flat",
        "numberOfEventIndicators": "0"})
    common = {"modelIdentifier": lib.name, "canNotUseMemoryManagementFunctions": "true",
              "canGetAndSetFMUstate": "false", "canSerializeFMUstate": "false"}
    kinds = ([("ModelExchange", common)] if me else []) + \
        ([("CoSimulation", {**common, "canHandleVariableCommunicationStepSize": "true"})] if cs else [])
    for tag, attrs in kinds:
        el = ET.SubElement(root, tag, attrs)
        files = ET.SubElement(el, "SourceFiles")       # sources/: an importer may compile them itself
        for fname in ("fmu.c", f"{lib.name}.c"):
            ET.SubElement(files, "File", {"name": fname})
    _units_and_experiment(root, model, variables_)
    mv = ET.SubElement(root, "ModelVariables")
    index = {v.name: k + 1 for k, v in enumerate(variables_)}
    for v in variables_:
        attrs = _variable_attributes(v)
        sv = ET.SubElement(mv, "ScalarVariable", attrs)
        ET.SubElement(sv, "Real", _value_attributes(v, index))
    ms = ET.SubElement(root, "ModelStructure")
    outputs = [index[v.name] for v in variables_ if v.causality == "output"]
    derivs = [index[v.name] for v in variables_ if v.derivative]
    # states in the order of y: der(q) (derivative of q), der(der(q)) (of der(q)), der(s) (of s)
    state_order = {name: k for k, name in enumerate(list(model.coordinates)
                                                    + [f"der({c})" for c in model.coordinates] + list(model.states))}
    derivs.sort(key=lambda k: state_order[variables_[k - 1].derivative])
    if outputs:
        el = ET.SubElement(ms, "Outputs")
        for k in outputs:
            ET.SubElement(el, "Unknown", {"index": str(k)})
    el = ET.SubElement(ms, "Derivatives")
    for k in derivs:
        ET.SubElement(el, "Unknown", {"index": str(k)})
    initial = sorted(set(outputs) | {k for k in derivs if variables_[k - 1].initial is None})
    if initial:
        el = ET.SubElement(ms, "InitialUnknowns")
        for k in initial:
            ET.SubElement(el, "Unknown", {"index": str(k)})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def model_description_3(lib, me: bool, cs: bool, token: str, variables_: list) -> str:
    """modelDescription.xml of FMI 3.0: the same variables as Float64 (plus the independent
    variable `time`), the derivatives referring to their states by value reference."""
    model = lib.model
    root = ET.Element("fmiModelDescription", {
        "fmiVersion": "3.0", "modelName": model.name, "instantiationToken": token,
        "description": (model.spec.description or f"model {model.name}").strip(),
        "generationTool": f"dynamica {__version__}", "variableNamingConvention": "flat"})
    common = {"modelIdentifier": lib.name, "canGetAndSetFMUState": "false", "canSerializeFMUState": "false"}
    if me:        # the loops' drift is checked in fmi3CompletedIntegratorStep (FMI 3.0's default: not called)
        ET.SubElement(root, "ModelExchange", {**common, "needsCompletedIntegratorStep": "true"})
    if cs:
        ET.SubElement(root, "CoSimulation", {**common, "canHandleVariableCommunicationStepSize": "true",
                                             "hasEventMode": "false"})
    _units_and_experiment(root, model, variables_)
    mv = ET.SubElement(root, "ModelVariables")
    vr_time = lib.ny + model.n + len(model.states) + len(lib.p_names) + len(lib.output_names)   # VR_END of fmu.c
    ET.SubElement(mv, "Float64", {"name": "time", "valueReference": str(vr_time), "causality": "independent",
                                  "variability": "continuous", "description": "time"})
    vr = {v.name: v.vr for v in variables_}
    for v in variables_:
        attrs = {**_variable_attributes(v), **_value_attributes(v, vr)}
        ET.SubElement(mv, "Float64", attrs)
    ms = ET.SubElement(root, "ModelStructure")
    state_order = {name: k for k, name in enumerate(list(model.coordinates)
                                                    + [f"der({c})" for c in model.coordinates] + list(model.states))}
    derivs = sorted((v for v in variables_ if v.derivative), key=lambda v: state_order[v.derivative])
    outputs = [v for v in variables_ if v.causality == "output"]
    for v in outputs:
        ET.SubElement(ms, "Output", {"valueReference": str(v.vr)})
    for v in derivs:
        ET.SubElement(ms, "ContinuousStateDerivative", {"valueReference": str(v.vr)})
    for v in sorted({*outputs, *(d for d in derivs if d.initial is None)}, key=lambda v: v.vr):
        ET.SubElement(ms, "InitialUnknown", {"valueReference": str(v.vr)})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def build_description_3(lib) -> str:
    """sources/buildDescription.xml of FMI 3.0: the C files an importer compiles."""
    root = ET.Element("fmiBuildDescription", {"fmiVersion": "3.0"})
    conf = ET.SubElement(root, "BuildConfiguration", {"modelIdentifier": lib.name})
    files = ET.SubElement(conf, "SourceFileSet", {"language": "C99"})
    for fname in ("fmu.c", f"{lib.name}.c"):
        ET.SubElement(files, "SourceFile", {"name": fname})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


@dataclass(frozen=True)
class FmiVersion:
    """How one version of the FMI standard packs the same FMU."""
    description: object             # (lib, me, cs, guid, variables) -> modelDescription.xml
    header: str                      # the fixed interface (templates/export) fmu.c includes
    api: str                         # the folder of the standard's headers (runtime/export/third_party)
    api_headers: tuple
    binaries: str                    # the folder of the binary for this platform
    extra_sources: object = None     # (lib) -> {file name: text} beside the C sources (sources/)
    salt: str = ""                   # in the GUID's hash (FMI 2.0: none, as before FMI 3.0 existed)


#: the FMI versions an FMU is written for (`fmi=`, `--fmi`)
VERSIONS = {
    "2": FmiVersion(model_description, FMI_CORE, "fmi2", FMI_HEADERS, "binaries/linux64"),
    "3": FmiVersion(model_description_3, "dynamica_fmi3.h", "fmi3",
                    ("fmi3Functions.h", "fmi3FunctionTypes.h", "fmi3PlatformTypes.h"), "binaries/x86_64-linux",
                    lambda lib: {"buildDescription.xml": build_description_3(lib)}, "fmi3"),
}


def export_fmu(model, path, kind="both", form=None, rtol=CS_RTOL, atol=CS_ATOL, fmi="2") -> Path:
    """Write the FMU of a model (file name or loaded model) to `path` (.fmu); kind "me", "cs" or
    "both"; rtol, atol: the Co-Simulation integrator's defaults; fmi: the FMI version, "2" (2.0)
    or "3" (3.0). Returns the path."""
    if kind not in KINDS:
        raise ExportError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if str(fmi) not in VERSIONS:
        raise ExportError(f"fmi must be one of {', '.join(VERSIONS)} (FMI 2.0, FMI 3.0), not {fmi!r}")
    version = VERSIONS[str(fmi)]
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise ExportError(f"the FMU's binary is built for linux64; this is {platform.system()} {platform.machine()}")
    if not (rtol > 0 and atol > 0):
        raise ExportError(f"rtol and atol must be positive, got {rtol!r}, {atol!r}")
    path = Path(path)
    if path.suffix != ".fmu":
        raise ExportError(f"an FMU's file name ends in .fmu: {path}")
    me, cs = KINDS[kind]
    if getattr(model, "backend", "c") != "c":
        raise ExportError(f"the FMU is built from the C backend's kernels; the model was loaded with backend "
                          f"{model.backend!r}: load it with backend='c' (or pass the file name)")
    lib = build_library(model, form)
    vars_ = variables(lib)
    digest = hashlib.sha256((lib.mod.signature + kind + version.salt
                             + version.description(lib, me, cs, "", vars_)).encode())
    guid = "{" + str(uuid.UUID(bytes=digest.digest()[:16])) + "}"
    xml = version.description(lib, me, cs, guid, vars_)
    from dynamica.generator.render.common import env
    ctx = library_context(lib, {}, [], set())
    ctx.update(guid=guid, me=me, cs=cs, rtol=_fmt(rtol), atol=_fmt(atol), project_tol=_fmt(PROJECT_TOL),
               drift_tol=_fmt(DRIFT_TOL), fmi_header=version.header)
    sources = dict(lib.files)
    for drop in ("main.c", "Makefile", "CMakeLists.txt", DOPRI, f"{lib.name}_inverse.c",
                 f"{lib.name}_inverse_kernels.h"):
        sources.pop(drop)
    sources["fmu.c"] = env().get_template("export/fmu.c.j2").render(**ctx)
    for fixed in (version.header, FMU_SHARED, FMU_ME):
        sources[fixed] = resources.files("dynamica.templates").joinpath("export", fixed).read_text()
    sources[ADAMS] = resources.files("dynamica.runtime.native").joinpath(ADAMS).read_text()
    api = resources.files("dynamica.runtime.export").joinpath("third_party", version.api)
    for h in version.api_headers:
        sources[h] = api.joinpath(h).read_text()
    extra = version.extra_sources(lib) if version.extra_sources else {}
    with tempfile.TemporaryDirectory(prefix="dynamica-fmu-") as tmp:
        work = Path(tmp)
        for fname, text in sources.items():
            (work / fname).write_text(text)
        so = f"{lib.name}.so"
        cmd = [*compiler(), *COMPILE_ARGS, "-I.", "fmu.c", f"{lib.name}.c", "-lm", "-o", so]
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"compiling the FMU of {lib.model.name!r} failed (exit code {proc.returncode})",
                             f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as partial, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("modelDescription.xml", xml)
            z.write(work / so, f"{version.binaries}/{so}")
            for fname, text in {**sources, **extra}.items():
                z.writestr(f"sources/{fname}", text)
    return path

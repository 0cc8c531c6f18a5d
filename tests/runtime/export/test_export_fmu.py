"""The FMI 2.0 FMU (runtime/export/fmu.py, docs/export.md), checked by an importer that shares no
code with dynamica: FMPy validates modelDescription.xml and the binary (`validate_fmu`) and
simulates the Model Exchange FMU with its CVode and the Co-Simulation FMU (dynamica's Adams core,
runtime/native/dynamica_adams.h); both against scipy's DOP853 on the Python module's rhs, from the
same initial state, outputs against the module's outputs along the reference."""

from __future__ import annotations

import shutil
import subprocess
import zipfile

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dynamica
from dynamica.runtime.export import ExportError, export_fmu
from dynamica.runtime.export.c_library import initial_state

from conftest import MODELS

fmpy = pytest.importorskip("fmpy")
from fmpy.validation import validate_fmu  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None and shutil.which("cc") is None,
                                reason="no C compiler")
#: FMPy's CVode at this relative tolerance (Model Exchange)
ME_RTOL = 1e-10
#: state agreement with the reference (|.|_inf): Model Exchange (CVode) and Co-Simulation (rtol 1e-10)
ME_TOL, CS_TOL = 1e-6, 1e-8


@pytest.fixture(scope="module")
def fmus(tmp_path_factory, bundled):
    folder = tmp_path_factory.mktemp("fmus")
    cache = {}

    def get(name, fmi="2"):
        if (name, fmi) not in cache:
            cache[name, fmi] = export_fmu(bundled(name), folder / f"{name}_fmi{fmi}.fmu", kind="both", fmi=fmi)
        return cache[name, fmi]
    return get


def _reference(model, t, params=None, inputs=None):
    y0 = initial_state(model) if not params else np.concatenate([*model.initial_state(params),
                                                                 model.initial_states(params)])
    f = model.rhs_function(params, inputs)
    sol = solve_ivp(f, (t[0], t[-1]), y0, method="DOP853", rtol=1e-13, atol=1e-13, dense_output=True)
    assert sol.success
    return sol.sol(t).T           # (dense output: Model Exchange repeats the time of an event)


def _states(model, result):
    names = list(model.coordinates) + [f"der({c})" for c in model.coordinates] + list(model.states)
    return np.column_stack([result[n] for n in names])


#: the FMI versions (`fmi=`): 2.0 and 3.0, the folder of the linux64 binary in each
FMI = {"2": "linux64", "3": "x86_64-linux"}


@pytest.mark.parametrize("fmi", list(FMI))
@pytest.mark.parametrize("name", ["double_pendulum", "fourbar", "dc_motor_joint",
                                  pytest.param("hydraulic_drive", marks=pytest.mark.slow), "thrust_launch"])
def test_fmpy_validates(tmp_path, fmus, name, fmi):
    path = fmus(name, fmi)
    assert validate_fmu(str(path)) == []
    md = fmpy.read_model_description(str(path), validate=True)
    assert md.fmiVersion == f"{fmi}.0"
    assert md.modelExchange is not None and md.coSimulation is not None
    assert len(md.derivatives) == 2 * len(md.derivatives) // 2
    with zipfile.ZipFile(path) as z:
        assert f"binaries/{FMI[fmi]}/{name}.so" in z.namelist()
        z.extractall(tmp_path)
    # Co-Simulation integrates with the Adams core dynamica.simulate runs (one implementation)
    from importlib import resources
    core = resources.files("dynamica.runtime.native").joinpath("dynamica_adams.h").read_text()
    assert (tmp_path / "sources" / "dynamica_adams.h").read_text() == core
    assert '#include "dynamica_adams.h"' in (tmp_path / "sources" / "dynamica_fmu.h").read_text()
    for cc in [c for c in ("gcc", "clang") if shutil.which(c)]:     # fmu.c too is warning-free C99
        proc = subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-fPIC", "-shared", "-I.", "fmu.c",
                               f"{name}.c", "-lm", "-o", f"check_{cc}.so"], cwd=tmp_path / "sources",
                              capture_output=True, text=True)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr


@pytest.mark.parametrize("fmi", list(FMI))
@pytest.mark.parametrize("fmi_type,tol", [("ModelExchange", ME_TOL), ("CoSimulation", CS_TOL)])
def test_double_pendulum_against_scipy(fmus, bundled, fmi_type, tol, fmi):
    model = bundled("double_pendulum")
    outs = ["potential_energy", "tip.position[2]"]
    names = list(model.coordinates) + [f"der({c})" for c in model.coordinates]
    res = fmpy.simulate_fmu(str(fmus("double_pendulum", fmi)), fmi_type=fmi_type, stop_time=5.0, output_interval=0.01,
                            relative_tolerance=ME_RTOL, output=names + outs)
    ref = _reference(model, res["time"])
    assert np.abs(_states(model, res) - ref).max() < tol
    n = model.n
    series = model.output_series(res["time"], ref[:, :n], ref[:, n:])
    np.testing.assert_allclose(res["potential_energy"], series["potential_energy"], rtol=0, atol=10 * tol)
    np.testing.assert_allclose(res["tip.position[2]"], series["tip.position"][:, 2], rtol=0, atol=10 * tol)
    # and dynamica.simulate (the Adams method) on the same output grid
    sim = dynamica.simulate(model, t_end=5.0, output_step=0.01, rtol=1e-11, atol=1e-12)
    assert np.array_equal(sim.t, res["time"])
    assert np.abs(_states(model, res) - np.column_stack([sim.q, sim.qd])).max() < tol


@pytest.mark.slow
@pytest.mark.parametrize("name", ["chain7", "puma560"])
@pytest.mark.parametrize("fmi_type,tol", [("ModelExchange", ME_TOL), ("CoSimulation", CS_TOL)])
def test_chains_against_scipy(fmus, bundled, name, fmi_type, tol):
    """|y_fmu - y_ref|_inf <= tol max(1, |y_ref|_inf) over 5 s."""
    model = bundled(name)
    names = list(model.coordinates) + [f"der({c})" for c in model.coordinates]
    res = fmpy.simulate_fmu(str(fmus(name)), fmi_type=fmi_type, stop_time=5.0, output_interval=0.01,
                            relative_tolerance=ME_RTOL, output=names)
    ref = _reference(model, res["time"])
    assert np.abs(_states(model, res) - ref).max() < tol * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("fmi", list(FMI))
@pytest.mark.parametrize("fmi_type,tol", [("ModelExchange", ME_TOL), ("CoSimulation", CS_TOL)])
def test_input_extra_state_and_parameter(fmus, bundled, fmi_type, tol, fmi):
    """dc_motor_joint: the armature voltage an input given through FMPy (a step from 0 to 6 V at
    t = 0.2), the current an extra state, the resistance changed through a start value."""
    model = bundled("dc_motor_joint")
    t_step, volts, params = 0.2, 6.0, {"R": 1.5}
    signal = np.array([(0.0, 0.0), (t_step, 0.0), (t_step, volts), (1.0, volts)],
                      dtype=[("time", float), ("u", float)])
    names = ["phi", "der(phi)", "i_m"]
    res = fmpy.simulate_fmu(str(fmus("dc_motor_joint", fmi)), fmi_type=fmi_type, stop_time=1.0, output_interval=0.01,
                            relative_tolerance=ME_RTOL, input=signal, start_values=params,
                            output=names + ["electrical_power", "torque"])
    t = res["time"]           # (Model Exchange: the event at t_step appears twice; the states are continuous)
    y0 = np.concatenate([*model.initial_state(params), model.initial_states(params)])
    opts = dict(method="DOP853", rtol=1e-13, atol=1e-13, dense_output=True)
    first = solve_ivp(model.rhs_function(params, {"u": 0.0}), (0.0, t_step), y0, **opts)
    rest = solve_ivp(model.rhs_function(params, {"u": volts}), (t_step, 1.0), first.y[:, -1], **opts)
    ref = np.array([first.sol(tk) if tk <= t_step else rest.sol(tk) for tk in t])
    got = np.column_stack([res[n] for n in names])
    assert np.abs(got - ref).max() < tol * max(1.0, np.abs(ref).max())
    u = np.where(t > t_step + 1e-12, volts, 0.0)
    np.testing.assert_allclose(res["electrical_power"][t > t_step + 0.02], (u * ref[:, 2])[t > t_step + 0.02],
                               rtol=0, atol=10 * tol * volts * np.abs(ref[:, 2]).max())


@pytest.mark.parametrize("fmi", list(FMI))
@pytest.mark.parametrize("fmi_type,tol", [("ModelExchange", ME_TOL), ("CoSimulation", CS_TOL)])
def test_loop_stays_on_its_constraints(fmus, bundled, fmi_type, tol, fmi):
    """The four-bar: Co-Simulation projects after every step (residual <= 1e-10), Model Exchange
    raises a step event when the residual passes 1e-9 and projects in it; both follow the
    reference (tol relative to the largest state)."""
    model = bundled("fourbar")
    names = list(model.coordinates) + [f"der({c})" for c in model.coordinates]
    res = fmpy.simulate_fmu(str(fmus("fourbar", fmi)), fmi_type=fmi_type, stop_time=1.0, output_interval=0.01,
                            relative_tolerance=ME_RTOL, output=names)
    got = _states(model, res)
    drift = max(np.abs(model.constraints(q)).max() for q in got[:, :model.n])
    assert drift < (1e-10 if fmi_type == "CoSimulation" else 1e-8)
    ref = _reference(model, res["time"])
    assert np.abs(got - ref).max() < tol * np.abs(ref).max()


@pytest.mark.parametrize("name,form", [("thrust_launch", "composite"), ("double_pendulum", "iterative-m"),
                                       pytest.param("hydraulic_drive", "composite", marks=pytest.mark.slow)])
@pytest.mark.parametrize("fmi_type,tol", [("ModelExchange", ME_TOL), ("CoSimulation", CS_TOL)])
def test_tables_iterative_and_states_against_scipy(tmp_path, bundled, name, form, fmi_type, tol):
    """A thrust curve (pchip table), the iterative form (its workspace in the FMU instance), the
    hydraulic drive (two pressure states of 1e6 Pa, the valve held at 0.2 through FMPy):
    |y_fmu - y_ref| <= tol (|y_ref| + 1) per component."""
    model = bundled(name, form)
    path = export_fmu(model, tmp_path / f"{name}.fmu")
    names = list(model.coordinates) + [f"der({c})" for c in model.coordinates] + list(model.states)
    inputs = {u: 0.2 for u in model.inputs}
    signal = None
    if inputs:
        signal = np.array([(0.0, *inputs.values()), (1.0, *inputs.values())],
                          dtype=[("time", float)] + [(u, float) for u in inputs])
    res = fmpy.simulate_fmu(str(path), fmi_type=fmi_type, stop_time=1.0, output_interval=0.01,
                            relative_tolerance=ME_RTOL, output=names, input=signal)
    ref = _reference(model, res["time"], inputs=inputs or None)
    got = np.column_stack([res[n] for n in names])
    assert np.all(np.abs(got - ref) <= tol * (np.abs(ref) + 1.0))


def test_me_only_fmu_and_bad_requests(tmp_path, bundled):
    path = export_fmu(bundled("double_pendulum"), tmp_path / "me.fmu", kind="me")
    md = fmpy.read_model_description(str(path), validate=True)
    assert md.coSimulation is None and md.modelExchange is not None
    with pytest.raises(ExportError, match="kind must be one of"):
        export_fmu(MODELS / "double_pendulum.yaml", tmp_path / "x.fmu", kind="fast")
    with pytest.raises(ExportError, match="ends in .fmu"):
        export_fmu(MODELS / "double_pendulum.yaml", tmp_path / "x.zip")
    with pytest.raises(ExportError, match="fmi must be one of 2, 3"):
        export_fmu(MODELS / "double_pendulum.yaml", tmp_path / "x.fmu", fmi="4")
    from dynamica.runtime.cli.main import main  # the command line's --fmi 3
    assert main(["export", str(MODELS / "double_pendulum.yaml"), "--fmu", str(tmp_path / "dp3.fmu"), "--fmi", "3",
                 "--kind", "cs", "-q"]) == 0
    md3 = fmpy.read_model_description(str(tmp_path / "dp3.fmu"), validate=True)
    assert md3.fmiVersion == "3.0" and md3.modelExchange is None and md3.coSimulation is not None
    if shutil.which("gfortran"):
        fortran = dynamica.load(MODELS / "double_pendulum.yaml", backend="fortran")
        with pytest.raises(ExportError, match="C backend's kernels"):
            export_fmu(fortran, tmp_path / "f.fmu")


class _Fmi2:
    """FMPy's low-level FMI 2.0 bindings, opened in continuous-time mode."""

    def __init__(self, md, unzipped, params, vr):
        from fmpy.fmi2 import FMU2Model, fmi2Real
        self.real = fmi2Real
        self.fmu = fmu = FMU2Model(guid=md.guid, unzipDirectory=unzipped,
                                   modelIdentifier=md.modelExchange.modelIdentifier, instanceName="check")
        fmu.instantiate()
        self.set([vr[k] for k in params], list(params.values()))
        fmu.setupExperiment(startTime=0.0)
        fmu.enterInitializationMode()
        fmu.exitInitializationMode()
        fmu.newDiscreteStates()
        fmu.enterContinuousTimeMode()

    def set(self, refs, values):
        self.fmu.setReal(refs, values)

    def get(self, refs):
        return self.fmu.getReal(refs)

    def _derivatives(self, dx, ny):
        self.fmu.getDerivatives(dx, ny)

    def derivatives(self, y):
        ny = len(y)
        self.fmu.setContinuousStates((self.real * ny)(*y), ny)
        dx = (self.real * ny)()
        self._derivatives(dx, ny)
        return np.array(dx[:])


class _Fmi3(_Fmi2):
    """FMPy's low-level FMI 3.0 bindings, opened in continuous-time mode."""

    def __init__(self, md, unzipped, params, vr):
        from fmpy.fmi3 import FMU3Model, fmi3Float64
        self.real = fmi3Float64
        self.fmu = fmu = FMU3Model(guid=md.instantiationToken, unzipDirectory=unzipped,
                                   modelIdentifier=md.modelExchange.modelIdentifier, instanceName="check")
        fmu.instantiate()
        self.set([vr[k] for k in params], list(params.values()))
        fmu.enterInitializationMode(startTime=0.0)
        fmu.exitInitializationMode()
        fmu.updateDiscreteStates()
        fmu.enterContinuousTimeMode()

    def set(self, refs, values):
        self.fmu.setFloat64(refs, values)

    def get(self, refs):
        return self.fmu.getFloat64(refs)

    def _derivatives(self, dx, ny):
        self.fmu.getContinuousStateDerivatives(dx, ny)


def _model_exchange_at_random_states(tmp_path, path, model, version, seed):
    """Parameter, time, states and inputs set by value reference; derivatives and outputs at
    random states against the Python module's rhs and outputs (1e-12 relative)."""
    md = fmpy.read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    unzipped = fmpy.extract(str(path), unzipdir=str(tmp_path / "unzipped"))
    params = {model.spec.parameters[0].name: model.spec.parameters[0].value * 1.25}
    fmu = version(md, unzipped, params, vr)
    rng = np.random.default_rng(seed)
    ny = model.state_size
    outputs = [v.name for v in md.modelVariables if v.causality == "output"]
    for _ in range(5):
        t = float(rng.uniform(0, 2))
        y = rng.uniform(-1.5, 1.5, ny)
        inputs = {u: float(rng.uniform(-5, 5)) for u in model.inputs}
        if inputs:
            fmu.set([vr[u] for u in inputs], list(inputs.values()))
        fmu.fmu.setTime(t)
        ref = model.rhs(t, y, params, inputs)
        np.testing.assert_allclose(fmu.derivatives(y), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
        got = np.array(fmu.get([vr[o] for o in outputs]))
        p = model.param_vector(params, inputs, y[2 * model.n:] if model.states else None)
        flat = np.empty(len(outputs))
        model.module.outputs(t, y[:model.n].copy(), y[model.n:2 * model.n].copy(), p, flat)
        np.testing.assert_allclose(got, flat, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(flat).max()))
        if version is _Fmi3:
            assert fmu.get([vr["time"]]) == [t]
    fmu.fmu.terminate()
    fmu.fmu.freeInstance()


@pytest.mark.parametrize("name", ["dc_motor_joint", "double_pendulum", "fourbar"])
def test_model_exchange_interface_at_random_states(tmp_path, fmus, bundled, name):
    """A second route into the FMU: FMPy's low-level FMI 2.0 bindings (no FMPy solver), states,
    time, a parameter and the inputs set by value reference from modelDescription.xml, the
    derivatives (fmi2GetDerivatives) and outputs (fmi2GetReal) at random states equal the Python
    module's rhs and outputs to 1e-12 relative."""
    _model_exchange_at_random_states(tmp_path, fmus(name), bundled(name), _Fmi2, 3)


@pytest.mark.parametrize("name", ["dc_motor_joint", "fourbar"])
def test_fmi3_model_exchange_interface_at_random_states(tmp_path, fmus, bundled, name):
    """The same second route for FMI 3.0 (FMPy's low-level fmi3 bindings): a parameter, time, states
    and the inputs set by value reference (fmi3SetFloat64), fmi3GetContinuousStateDerivatives and
    the outputs (fmi3GetFloat64) at random states equal the Python module's to 1e-12 relative; the
    independent variable `time` reads back the time set."""
    _model_exchange_at_random_states(tmp_path, fmus(name, "3"), bundled(name), _Fmi3, 5)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_fmpy_builds_the_binary_from_the_sources(tmp_path, fmus, bundled):
    """The sources in the FMU are complete: FMPy compiles them with its own CMake project
    (`fmpy.build.build_platform_binary`, from the SourceFiles of modelDescription.xml) into a
    binary that simulates like the exported one (1e-9) and the reference (CS_TOL)."""
    from fmpy.build import build_platform_binary
    model = bundled("fourbar")
    unzipped = str(fmpy.extract(str(fmus("fourbar")), unzipdir=str(tmp_path / "fmu")))
    shutil.rmtree(f"{unzipped}/binaries")
    (tmp_path / "build").mkdir()
    build_platform_binary(unzipped, build_dir=str(tmp_path / "build"))
    names = list(model.coordinates) + [f"der({c})" for c in model.coordinates]
    rebuilt = fmpy.simulate_fmu(unzipped, fmi_type="CoSimulation", stop_time=1.0, output_interval=0.01,
                                relative_tolerance=ME_RTOL, output=names)
    exported = fmpy.simulate_fmu(str(fmus("fourbar")), fmi_type="CoSimulation", stop_time=1.0, output_interval=0.01,
                                 relative_tolerance=ME_RTOL, output=names)
    assert np.abs(_states(model, rebuilt) - _states(model, exported)).max() < 1e-9
    ref = _reference(model, rebuilt["time"])
    assert np.abs(_states(model, rebuilt) - ref).max() < CS_TOL * np.abs(ref).max()


@pytest.mark.parametrize("fmi", list(FMI))
def test_co_simulation_reports_a_right_hand_side_that_is_not_finite(fmus, bundled, fmi):
    """Zero masses through start values: the Adams core meets a right-hand side that is not finite
    and fmi2DoStep / fmi3DoStep fail with one message naming the time (no NaN results, no hang)."""
    model = bundled("double_pendulum")
    messages = []
    with pytest.raises(Exception, match="DoStep failed"):
        fmpy.simulate_fmu(str(fmus("double_pendulum", fmi)), fmi_type="CoSimulation", stop_time=1.0,
                          output_interval=0.1, output=[model.coordinates[0]], start_values={"m1": 0.0, "m2": 0.0},
                          logger=lambda *args: messages.append(args[-1]))
    assert any(b"the integration failed at t = 0 (Adams status 3: the right-hand side is not finite)" in m
               for m in messages), messages

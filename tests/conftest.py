import os
from pathlib import Path

import pytest
import yaml

#: DYNAMICA_STRICT=1 (set by .ci/run): a skipped test fails. The oracles (Pinocchio, sympy's
#: KanesMethod, SUNDIALS) and gfortran are then requirements, not options: a missing one must
#: not turn a run green with its comparisons silently left out.
STRICT = os.environ.get("DYNAMICA_STRICT", "") not in ("", "0")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if STRICT and rep.skipped and not hasattr(rep, "wasxfail"):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome, rep.longrepr = "failed", f"skipped under DYNAMICA_STRICT=1: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if STRICT and report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome, report.longrepr = "failed", f"module skipped under DYNAMICA_STRICT=1: {reason}"

ROOT = Path(__file__).resolve().parent.parent
REPO_ROOT = ROOT        # the repository (the package `dynamica`), for tests in subfolders
MODELS = ROOT / "models"
#: the tests compile into a cache of this checkout (as .ci/run does), never into the user's default one
os.environ.setdefault("DYNAMICA_CACHE", str(ROOT / ".dynamica-cache"))
ALL_BUNDLED = sorted(p.stem for p in MODELS.glob("*.yaml"))
#: the bundled models with closed loops: their qdd is the constrained solution, which neither the
#: Hamiltonian forms nor the numeric reference (a tree) compute; tests/runtime/test_loops.py checks them
LOOP_MODELS = sorted(n for n in ALL_BUNDLED if "loops" in yaml.safe_load((MODELS / f"{n}.yaml").read_text()))
#: the tree models: every form, mode and oracle takes them
BUNDLED = [n for n in ALL_BUNDLED if n not in LOOP_MODELS]
#: the models with inputs or extra states: their state is [q, qd, s] (or [q, pm, s]) and a run needs
#: its inputs; tests that build states [q, qd] by hand take PLAIN_MODELS
#: (tests/generator/mechanics/test_states_inputs.py covers these in every form, mode and backend)
SIGNAL_MODELS = sorted(
    n for n in BUNDLED if {"inputs", "states"} & set(yaml.safe_load((MODELS / f"{n}.yaml").read_text()))
)
PLAIN_MODELS = [n for n in BUNDLED if n not in SIGNAL_MODELS]


@pytest.fixture(scope="session")
def models_dir():
    return MODELS


def write_model(tmp_path, data: dict, name="model.yaml") -> Path:
    path = Path(tmp_path) / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


_LOADED = {}


@pytest.fixture(scope="session")
def bundled():
    """Load (compile once per session, cached on disk across sessions) a bundled model."""
    import dynamica

    def get(name, form="composite"):
        key = (name, form)
        if key not in _LOADED:
            _LOADED[key] = dynamica.load(MODELS / f"{name}.yaml", form=form)
        return _LOADED[key]
    return get

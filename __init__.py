"""dynamica: equations of motion of rigid-body trees as compiled extensions (after Dynamica90).

    import dynamica
    model = dynamica.load("models/double_pendulum.yaml")
    model.qdd(q, qd)
    result = dynamica.simulate(model, t_end=10.0)
"""

from dynamica.errors import BuildError, DynamicaError, IntegrationError, ModelError
from dynamica.version import __version__

__all__ = ["load", "simulate", "generate", "equilibrium", "statics", "linearize", "prony", "identify",
           "sweep", "sobol", "local_derivatives", "export_c", "export_fmu", "DynamicaError", "ModelError",
           "BuildError", "IntegrationError", "__version__"]

#: analysis functions (docs/linear.md, docs/sweep.md) -> the runtime module that defines them
_ANALYSIS = {"equilibrium": "analysis.statics", "statics": "analysis.statics", "linearize": "analysis.linear",
             "prony": "analysis.identify", "identify": "analysis.identify", "sweep": "studies.sweep",
             "sobol": "studies.sensitivity", "local_derivatives": "studies.sensitivity"}


def _run_stages(model, **options):
    """How `simulate` runs a model with stages: its cyclogram (imported when one is run)."""
    from dynamica.runtime.stages.cyclogram import run
    return run(model, **options)


def _measured_form(path, spec):
    """load(form="auto", select_by="measured"): every compiled form timed (imported when asked)."""
    from dynamica.runtime.analysis.selection import select
    return select(path, measure=True).recommended


def _register_upper_layers():
    """The load order: the layers above the integrators and the loader hand them what only they can
    do (runtime/integrators/simulate.py STAGED_RUNNER, runtime/api.py FORM_CHOOSERS), lazily, so
    that loading and simulating a cached model imports neither sympy nor the generator."""
    from dynamica.runtime.api import FORM_CHOOSERS
    from dynamica.runtime.integrators.simulate import STAGED_RUNNER
    STAGED_RUNNER.setdefault("cyclogram", _run_stages)
    FORM_CHOOSERS.setdefault("measured", _measured_form)


def __getattr__(name):
    # imported lazily so that `import dynamica` stays cheap (no sympy, no compiler)
    if name == "load":
        _register_upper_layers()
        from dynamica.runtime.api import load
        return load
    if name == "simulate":
        _register_upper_layers()
        from dynamica.runtime.integrators.simulate import simulate
        return simulate
    if name in _ANALYSIS:
        import importlib
        _register_upper_layers()
        return getattr(importlib.import_module(f"dynamica.runtime.{_ANALYSIS[name]}"), name)
    if name in ("export_c", "export_fmu"):
        from dynamica.runtime import export
        return getattr(export, name)
    if name == "generate":
        from dynamica.generator.pipeline import generate
        return generate
    raise AttributeError(f"module 'dynamica' has no attribute {name!r}")

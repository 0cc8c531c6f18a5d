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


def __getattr__(name):
    # imported lazily so that `import dynamica` stays cheap (no sympy, no compiler)
    # the load order: the layers that register themselves with a lower one come in with the API
    # (the measured form selection with `load`, the cyclogram of models with stages with `simulate`)
    if name == "load":
        import dynamica.runtime.analysis.selection
        from dynamica.runtime.api import load
        return load
    if name == "simulate":
        import dynamica.runtime.stages.cyclogram
        from dynamica.runtime.integrators.simulate import simulate
        return simulate
    if name in _ANALYSIS:
        import importlib

        import dynamica.runtime.stages.cyclogram  # noqa: F401
        return getattr(importlib.import_module(f"dynamica.runtime.{_ANALYSIS[name]}"), name)
    if name in ("export_c", "export_fmu"):
        from dynamica.runtime import export
        return getattr(export, name)
    if name == "generate":
        from dynamica.generator.pipeline import generate
        return generate
    raise AttributeError(f"module 'dynamica' has no attribute {name!r}")

"""dynamica: equations of motion of rigid-body trees as compiled extensions (after Dynamica90).

    import dynamica
    model = dynamica.load("models/double_pendulum.yaml")
    model.qdd(q, qd)
    result = dynamica.simulate(model, t_end=10.0)
"""

__version__ = "0.2.0"    # the version of pyproject.toml (tests/test_repo_hygiene.py checks that they agree)

from dynamica.errors import BuildError, DynamicaError, IntegrationError, ModelError

__all__ = ["load", "simulate", "generate", "equilibrium", "statics", "linearize", "prony", "identify",
           "sweep", "sobol", "local_derivatives", "export_c", "export_fmu", "DynamicaError", "ModelError",
           "BuildError", "IntegrationError", "__version__"]

#: analysis functions (docs/linear.md, docs/sweep.md) -> the runtime module that defines them
_ANALYSIS = {"equilibrium": "statics", "statics": "statics", "linearize": "linear", "prony": "identify",
             "identify": "identify", "sweep": "sweep", "sobol": "sensitivity", "local_derivatives": "sensitivity"}


def __getattr__(name):
    # imported lazily so that `import dynamica` stays cheap (no sympy, no compiler)
    if name in ("load", "simulate"):
        from dynamica.runtime import api
        return getattr(api, name)
    if name in _ANALYSIS:
        import importlib
        return getattr(importlib.import_module(f"dynamica.runtime.{_ANALYSIS[name]}"), name)
    if name in ("export_c", "export_fmu"):
        from dynamica.runtime import export
        return getattr(export, name)
    if name == "generate":
        from dynamica.generator.pipeline import generate
        return generate
    raise AttributeError(f"module 'dynamica' has no attribute {name!r}")

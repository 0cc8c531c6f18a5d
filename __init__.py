"""dynamica: equations of motion of rigid-body trees as compiled extensions (after Dynamica90).

    import dynamica
    model = dynamica.load("models/double_pendulum.yaml")
    model.qdd(q, qd)
    result = dynamica.simulate(model, t_end=10.0)
"""

__version__ = "0.1.0"

from dynamica.errors import BuildError, DynamicaError, IntegrationError, ModelError  # noqa: E402

__all__ = ["load", "simulate", "generate", "sweep", "sobol", "local_derivatives", "DynamicaError", "ModelError", "BuildError",
           "IntegrationError", "__version__"]


def __getattr__(name):
    # imported lazily so that `import dynamica` stays cheap (no sympy, no compiler)
    if name in ("load", "simulate"):
        from dynamica.runtime import api
        return getattr(api, name)
    if name == "sweep":
        from dynamica.runtime.sweep import sweep
        return sweep
    if name in ("sobol", "local_derivatives"):
        from dynamica.runtime import sensitivity
        return getattr(sensitivity, name)
    if name == "generate":
        from dynamica.generator.pipeline import generate
        return generate
    raise AttributeError(f"module 'dynamica' has no attribute {name!r}")

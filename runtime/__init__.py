"""Runtime: loading compiled modules, simulation, integrators, the numeric reference and the CLI.

`dynamica.runtime.Adams` is the Adams-Bashforth-Moulton PECE solver (variable step, orders
1-12) as a `scipy.integrate.OdeSolver`: `solve_ivp(f, t_span, y0, method=Adams, ...)`.
"""


def __getattr__(name):
    # lazy, so that `import dynamica.runtime` does not pull in scipy
    if name in ("Adams", "StiffnessError", "StiffnessWarning"):
        from dynamica.runtime.integrators import adams
        return getattr(adams, name)
    raise AttributeError(f"module 'dynamica.runtime' has no attribute {name!r}")

"""dynamica's fixed compiled parts, built at install time (setup.py) or on first use into the cache
(build.compiled_helper): the Adams integrator core (the plain-C step dynamica_adams.h, which the
exported Co-Simulation FMU includes too, wrapped for Python by adams_core.pyx), the C-level timing
loop (ctiming.pyx) and the outputs of a trajectory's rows (series_core.pyx).
"""

"""dynamica's fixed compiled parts, built at install time (setup.py) or on first use into the cache
(build.compiled_helper): the Adams integrator core (adams_core.pyx) and the C-level timing loop
(ctiming.pyx).
"""

"""Analyses of a model (dissertation 5.2): statics, linearisation, modes and frequency response,
identification by Prony's method, the matrix-exponential propagator of linear chains.

May import: the runtime core, kinds, integrators, results.
"""

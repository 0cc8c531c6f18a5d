"""Studies over many runs: parameter sweeps on a Dask cluster (sweep, cases, store, worker) and
sensitivity.

May import: the runtime core, integrators, stages, analysis, results.
"""

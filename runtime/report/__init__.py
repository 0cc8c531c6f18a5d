"""The self-contained HTML report of a run (page), its template and viewer, and the 3-D scene it
animates (scene).

May import: the runtime core, results.
"""

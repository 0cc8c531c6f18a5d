"""Stages (the cyclogram of D90, dissertation 5.2.2-5.2.4): running a model's stages in order
(cyclogram), the stages of a result (rows) and their summary tables (summary).

May import: the runtime core, integrators, analysis (statics), results.
"""

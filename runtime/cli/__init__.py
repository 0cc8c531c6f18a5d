"""The `dynamica` command line (main) and its parts: robot-description options (models), statics,
linear analysis and identification (linear), sweeps (sweep), conversion to a model file (convert)
and what the terminal shows (terminal).

May import: everything else of dynamica; nothing imports it.
"""

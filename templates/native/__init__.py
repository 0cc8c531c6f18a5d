"""Generated-code support: the fixed C headers that every generated module includes (the tree-sparse
linear algebra, the closed-loop solve of (1.38)-(1.46) with QR, the iterative forms' controls,
the numeric mode's recursions) and the Python text of the iterative forms' controls that runs
inside a module. Copied next to the generated sources at build time; part of the tool fingerprint.

Imports nothing of dynamica.
"""

"""The kernel IR: plain frozen nodes (nodes), the straight-line program the forms build (program),
lowering from sympy with CSE (lower; the only place CSE and ordering happen), forward-mode
differentiation over the IR (tangent). No sympy object passes lower's boundary.

May import: dynamica.errors. Never the runtime.
"""

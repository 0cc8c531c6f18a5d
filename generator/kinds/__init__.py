"""Module kinds beside the equations of motion: the derivatives module (residual and Jacobian,
by the tape or by recursive derivatives of inverse dynamics) and inverse dynamics.

May import: the rest of dynamica.generator. Never the runtime.
"""

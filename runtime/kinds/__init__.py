"""The run-time companions of the generator's module kinds: the derivatives of a model's equations
and its inverse dynamics, each a compiled module of its own.

May import: the runtime core (dynamica.runtime.api, compiled, assembly, inputs) and the generator.
"""

"""Importers: robot descriptions in other formats (URDF) read into the mapping a model file gives.

May import: dynamica.errors, dynamica.generator.spec. Never the runtime.
"""

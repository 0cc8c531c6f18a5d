"""The model as data (ModelSpec) and its loading: the YAML reader, the validating loader and its
sections, the expression parser, the visual shapes.

May import: dynamica.errors, dynamica.generator.mechanics (registries of joints, forces, loops that
the loader consults), dynamica.generator.importers. Never the runtime.
"""

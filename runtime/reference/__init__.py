"""The independent numeric reference: the composite-body algorithm evaluated with numpy from the
model's data (numeric), how it reads names and tabulated functions (names, tables), and the
regression check of a compiled module against it (check). It shares no code with the generated
equations' derivation.

May import: dynamica.errors, dynamica.generator.spec (the model as data), the runtime core.
"""

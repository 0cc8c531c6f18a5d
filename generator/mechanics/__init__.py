"""The mechanics of a model, symbolically: topology of the tree (dissertation 1.3), joint kinematics,
force elements, energy, tabulated functions, extra states and inputs, outputs, closed loops and
their constraint equations, stages.

May import: dynamica.errors, dynamica.generator.spec, dynamica.generator.ir (the program builder),
dynamica.generator.forms.parts (the spatial algebra). Never the runtime.
"""

"""Flop counts of the equation forms (dissertation, chapter 4): the formulas (flops) and the
component tables 4.1-4.7 and appendix B (tables).

May import: dynamica.generator.forms (the registry). Never the runtime.
"""

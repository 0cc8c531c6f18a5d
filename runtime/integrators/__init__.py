"""Integration: `simulate` and its methods (the variable-order Adams method, compiled and in Python;
Stoermer; scipy's methods stepped one by one; IDA for models with loops).

May import: the runtime core, dynamica.runtime.kinds, dynamica.runtime.results.
"""

"""What the registered equation forms share: the kinematic recursion and active forces (common),
spatial algebra (spatial), the tree-sparse L^T D L factorisation (cholesky), the passes over the
extended system (passes). Nothing here is registered.
"""

"""What a run reports: the result, its files (CSV, NPZ), named series and plot pages (result), and
the units of its variables (units).

May import: the runtime core.
"""

"""Helpers shared by the tests: relative errors and the random trees several suites compile."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from oracles.pin_trees import random_tree, write_yaml


def rel_err(a, b) -> float:
    """||a - b|| / max(1, ||b||) (Euclidean norms of the flattened arrays)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def max_rel_err(a, b) -> float:
    """max_k |a_k - b_k| / max(1, |b_k|): every entry on its own scale."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)))) if a.size else 0.0


#: random trees of oracles/pin_trees.py compiled by the backend and mode suites: name -> (kind, bodies,
#: joint tokens, seed, keywords); 1-, 2-, 3-DOF, custom and welded joints, a free base
TREES = {"chain6_123": ("chain", 6, (1, 2, 3), 201, {}),
         "mixed8_custom_welded": ("mixed", 8, (1, 2, 3, "custom", "welded"), 202, {}),
         "star9_free": ("star", 9, (1, 2, 3), 203, {"base_joint": "free"})}


def tree_path(name: str, folder) -> Path:
    """The YAML file of random tree `name` (TREES) in `folder`, written on first use."""
    kind, n, tokens, seed, kw = TREES[name]
    path = Path(folder) / f"{name}.yaml"
    if not path.exists():
        write_yaml(random_tree(kind, n, tokens, np.random.default_rng(seed), name=name, **kw), path)
    return path

"""Topology of the tree: regular numbering and the index sets of the dissertation (section 1.3).

Symbols (dissertation 1.3, docs/design.md):
  0        ground (the root); bodies are 1..N in regular numbering, kappa[i] < i
  kappa    parent of each body (kappa[0] = -1)
  children S_i, path P_i (bodies from 1 to i, i included), subtree D_i (i and its descendants)
"""

from __future__ import annotations

from dataclasses import dataclass

from dynamica.errors import ModelError, Problem


@dataclass(frozen=True)
class Topology:
    names: tuple            # names[i] of body i; names[0] == "ground"
    kappa: tuple            # kappa[i] < i for i >= 1
    children: tuple         # children[i]: tuple of bodies
    paths: tuple            # paths[i]: bodies on the path from ground to i, ascending, i included
    subtrees: tuple         # subtrees[i]: i and its descendants, ascending
    file_index: tuple       # file_index[i]: position of body i in the model file's list (-1 for ground)

    @property
    def n_bodies(self) -> int:
        return len(self.names) - 1

    def index(self, name: str) -> int:
        return self.names.index(name)


def _parent_problems(spec, names, parent) -> list:
    """Missing parents and cycles of the parent relation, each cycle reported once."""
    problems = []
    for b in spec.bodies:
        if b.parent != "ground" and b.parent not in parent:
            problems.append(Problem(f"{b.path}.parent", f"missing parent body `{b.parent}`"))
    # cycle detection: follow parents from every body
    # grounded / stranded: bodies known to reach ground / not to (each body is walked once)
    reported, grounded, stranded = set(), {"ground"}, set()
    for name in names:
        seen, on_walk, cur = [], set(), name
        while cur not in grounded and cur not in stranded and cur in parent and cur not in on_walk:
            seen.append(cur)
            on_walk.add(cur)
            cur = parent[cur]
        if cur in grounded:
            grounded.update(seen)
            continue
        stranded.update(seen)
        if cur in on_walk:
            cycle = tuple(seen[seen.index(cur):])
            key = frozenset(cycle)
            if key not in reported:
                reported.add(key)
                problems.append(Problem("bodies", "the bodies " + " -> ".join(f"`{c}`" for c in cycle + (cur,))
                                        + " form a cycle, so they are not connected to ground"))
    return problems


def build_topology(spec) -> Topology:
    """Regular numbering by depth-first preorder from ground, children in file order.

    Cycles, missing parents and bodies not connected to ground are `ModelError`s naming the
    bodies involved.
    """
    names = [b.name for b in spec.bodies]
    parent = {b.name: b.parent for b in spec.bodies}
    problems = _parent_problems(spec, names, parent)
    if problems:
        raise ModelError(spec.file, problems)
    kids = {n: [] for n in ["ground"] + names}
    for n in names:
        kids[parent[n]].append(n)
    order = ["ground"]
    stack = list(reversed(kids["ground"]))
    while stack:
        n = stack.pop()
        order.append(n)
        stack.extend(reversed(kids[n]))
    reached = set(order)
    unreached = [n for n in names if n not in reached]
    if unreached:
        raise ModelError(
            spec.file, [Problem("bodies", "not connected to ground: " + ", ".join(f"`{n}`" for n in unreached))]
        )
    idx = {n: i for i, n in enumerate(order)}
    kappa = tuple([-1] + [idx[parent[n]] for n in order[1:]])
    N = len(order) - 1
    children = [[] for _ in range(N + 1)]
    for i in range(1, N + 1):
        children[kappa[i]].append(i)
    paths = [()]
    for i in range(1, N + 1):
        paths.append(paths[kappa[i]] + (i,))
    subtrees = [[] for _ in range(N + 1)]
    for i in range(N, -1, -1):
        subtrees[i] = sorted([i] + [d for c in children[i] for d in subtrees[c]])
    fidx = {b.name: k for k, b in enumerate(spec.bodies)}
    return Topology(names=tuple(order), kappa=kappa, children=tuple(tuple(c) for c in children),
                    paths=tuple(paths), subtrees=tuple(tuple(s) for s in subtrees),
                    file_index=tuple([-1] + [fidx[n] for n in order[1:]]))

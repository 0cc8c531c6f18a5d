"""Topology invariants: regular numbering, index sets, S T = E (1.25)."""

import numpy as np
import pytest

from dynamica.generator.mechanics.topology import build_topology
from dynamica.generator.spec.model import load_model
from dynamica.runtime.reference.numeric import NumericReference

from conftest import BUNDLED, MODELS


@pytest.mark.parametrize("name", BUNDLED)
def test_regular_numbering(name):
    spec = load_model(MODELS / f"{name}.yaml")
    topo = build_topology(spec)
    N = topo.n_bodies
    assert N == len(spec.bodies)
    assert sorted(topo.names[1:]) == sorted(b.name for b in spec.bodies)
    parent = {b.name: b.parent for b in spec.bodies}
    for i in range(1, N + 1):
        assert topo.kappa[i] < i
        assert topo.names[topo.kappa[i]] == parent[topo.names[i]]
        assert topo.paths[i][-1] == i and topo.paths[i][:-1] == topo.paths[topo.kappa[i]]
        for j in topo.subtrees[i]:
            assert i in topo.paths[j]
        assert set(topo.children[i]) == {j for j in range(1, N + 1) if topo.kappa[j] == i}


@pytest.mark.parametrize("name", ["star", "chain7", "spherical_chain"])
def test_S_times_T_is_identity(name):
    """S (1.15) and T (1.24) built from the numeric C_i at a random state are inverses (1.25)."""
    ref = NumericReference(load_model(MODELS / f"{name}.yaml"))
    n = len(ref.coordinates)
    rng = np.random.default_rng(1)
    st = ref._state(rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), 0.3, ref.defaults)
    N, kappa = ref.N, ref.topo.kappa
    S = np.eye(6 * N)
    T = np.zeros((6 * N, 6 * N))
    for i in range(1, N + 1):
        if kappa[i] > 0:
            S[6 * (i - 1):6 * i, 6 * (kappa[i] - 1):6 * kappa[i]] = -st["C"][i]
        for j in ref.topo.paths[i]:
            Tij = np.eye(6)
            k = i
            while k != j:
                Tij = Tij @ st["C"][k]
                k = kappa[k]
            T[6 * (i - 1):6 * i, 6 * (j - 1):6 * j] = Tij
    assert np.allclose(S @ T, np.eye(6 * N), atol=1e-12)
    assert np.allclose(T @ S, np.eye(6 * N), atol=1e-12)


def test_shuffled_order_gives_same_tree(tmp_path):
    import yaml
    d = yaml.safe_load((MODELS / "star.yaml").read_text())
    d["bodies"] = list(reversed(d["bodies"]))
    p = tmp_path / "star.yaml"
    p.write_text(yaml.safe_dump(d))
    t1 = build_topology(load_model(MODELS / "star.yaml"))
    t2 = build_topology(load_model(p))
    edges = lambda t: {(t.names[t.kappa[i]], t.names[i]) for i in range(1, t.n_bodies + 1)}  # noqa: E731
    assert edges(t1) == edges(t2)

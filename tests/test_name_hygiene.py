"""Names the user writes can never meet the generator's names.

A parameter called like a generated intermediate (`m3`, the mass of body 3) used to be the same
sympy symbol as that intermediate: the kernel read an uninitialised local instead of p[k] and M
was silently wrong. Every model name now lives in a namespace of its own (expr.py: "p:", "q:",
"qd:", "local:" symbols; Program.let accepts identifiers only).

The test takes its names from generated source text: identifiers harvested from the generated
modules of bundled models and of the random tree itself (intermediates `m3`, `Th2_01`, CSE
temporaries `z0`, the kernels' own `in_p`, `dyn_w`, C keywords, case pairs `M1`/`m1` for
Fortran), renames the tree's parameters, coordinates and bodies to them, and compares with
Pinocchio (tests/oracles/pin_trees.py builds its model from the same tree, independently of
dynamica) in every backend and mode.
"""

from __future__ import annotations

import dataclasses
import keyword
import re

import numpy as np
import pytest

from oracles.pin_trees import random_tree, write_yaml

pin = pytest.importorskip("pinocchio")

import dynamica  # noqa: E402
from dynamica.generator.spec import expr as ex  # noqa: E402

RTOL = 1e-10
TOKEN = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
#: names every run uses first: the reported case (m3), CSE temporaries, the kernels' argument
#: and workspace names, C keywords and library functions, and case pairs (Fortran ignores case)
MUST = ["m3", "m2", "m1", "M1", "z0", "z1", "Z1", "in_p", "in_q", "out_qdd", "out_M", "dyn_w", "double",
        "int", "return", "static", "void", "memset", "NAN", "pow", "fabs", "h1_0", "H1_0", "Th1_00",
        "Fa1_0", "p", "q", "qd", "y", "ydot", "out", "work", "v0", "V0"]


def harvest(texts) -> list:
    """Identifiers of generated source that a model may use as names, in first-seen order."""
    seen = dict.fromkeys(MUST)
    for text in texts:
        for tok in TOKEN.findall(text):
            seen.setdefault(tok)
    return [n for n in seen if not keyword.iskeyword(n) and n not in ex.RESERVED and n != "ground"]


def _rename(obj, mapping):
    """`obj` (the tree: dataclasses, dicts, lists, expression strings) with names replaced."""
    if isinstance(obj, str):
        return TOKEN.sub(lambda m: mapping.get(m.group(0), m.group(0)), obj)
    if isinstance(obj, list):
        return [_rename(x, mapping) for x in obj]
    if isinstance(obj, tuple):
        return tuple(_rename(x, mapping) for x in obj)
    if isinstance(obj, dict):
        return {_rename(k, mapping): _rename(v, mapping) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj):
        return dataclasses.replace(obj, **{f.name: _rename(getattr(obj, f.name), mapping)
                                           for f in dataclasses.fields(obj)})
    return obj


def hostile_tree(names):
    """A random 7-body tree whose parameters, coordinates and bodies take the given names."""
    tree = random_tree("mixed", 7, (1, 2, 3, "custom", "welded"), np.random.default_rng(1207),
                       name="hostile")
    old = list(tree.defaults) + tree.coordinates + [b.name for b in tree.bodies]
    assert len(names) >= len(old)
    return _rename(tree, dict(zip(old, names)))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, models_dir):
    """The renamed tree and its YAML file; names from the generated source of two bundled
    models and of the tree itself (same size, so `m3` is body 3's mass), in all backends."""
    texts = []
    plain = random_tree("mixed", 7, (1, 2, 3, "custom", "welded"), np.random.default_rng(1207), name="plain")
    path = tmp_path_factory.mktemp("names") / "plain.yaml"
    write_yaml(plain, path)
    for src, form, backend, mode in [(path, "composite", "c", "symbolic"),
                                     (path, "articulated", "fortran", "symbolic"),
                                     (path, "composite", "c", "numeric"),
                                     (models_dir / "governor.yaml", "hamilton-composite", "c", "symbolic")]:
        g = dynamica.generate(str(src), form=form, backend=backend, mode=mode)
        texts += [text for _, text in g.bundle.files]
    names = harvest(texts)
    tree = hostile_tree(names)
    path = tmp_path_factory.mktemp("names") / "hostile.yaml"
    write_yaml(tree, path)
    return tree, path


def test_harvested_names_are_hostile(hostile):
    """The renamed model really uses generated names (else the comparison below proves little)."""
    tree, _ = hostile
    used = set(tree.defaults) | set(tree.coordinates) | {b.name for b in tree.bodies}
    assert {"m3", "M1", "m1", "z0", "in_p", "dyn_w", "double"} <= used


def _compare(model, tree, seed, check_qdd=True):
    rng = np.random.default_rng(seed)
    order = list(model.coordinates)
    for k in range(4):
        q, qd = tree.random_state(rng)
        ov = {} if k == 0 else tree.random_overrides(rng, fraction=1.0)
        pmodel, names = tree.to_pinocchio(tree.param_values(ov))
        data = pmodel.createData()
        qv = np.array([q[c] for c in names])
        vv = np.array([qd[c] for c in names])
        idx = [names.index(c) for c in order]
        M = pin.crba(pmodel, data, qv)
        M = (np.triu(M) + np.triu(M, 1).T)[np.ix_(idx, idx)]
        dyn_M = model.mass_matrix([q[c] for c in order], params=ov or None)
        assert np.linalg.norm(dyn_M - M) <= RTOL * max(1.0, np.linalg.norm(M)), (model.form, k, ov)
        if check_qdd:
            a = pin.aba(pmodel, data, qv, vv, np.zeros(pmodel.nv))[idx]
            dyn = model.qdd([q[c] for c in order], [qd[c] for c in order], params=ov or None)
            assert np.linalg.norm(dyn - a) <= RTOL * max(1.0, np.linalg.norm(a)), (model.form, k, ov)


@pytest.mark.parametrize("form,backend,mode", [
    ("composite", "c", "symbolic"),
    ("articulated", "c", "symbolic"),
    ("composite", "fortran", "symbolic"),
    ("composite", "c", "numeric"),
    ("articulated", "c", "numeric"),
])
def test_hostile_names_match_pinocchio(hostile, form, backend, mode):
    if backend == "fortran":
        import shutil
        if shutil.which("gfortran") is None:
            pytest.skip("gfortran is not installed")
    tree, path = hostile
    model = dynamica.load(str(path), form=form, backend=backend, mode=mode)
    assert set(model.parameters) == set(tree.defaults)
    _compare(model, tree, seed=31)


def test_hostile_names_hamiltonian_mass_matrix(hostile):
    tree, path = hostile
    model = dynamica.load(str(path), form="hamilton-composite")
    _compare(model, tree, seed=32, check_qdd=False)


def test_reported_case_hub_with_m3(tmp_path):
    """The issue's smallest case: M changes with the parameter `m3` and equals the closed form."""
    from conftest import write_model
    child = lambda name, x, mass: {  # noqa: E731
        "name": name, "parent": "hub", "joint": [{"translate": [x, 0, 0]}, {"rotate": "y", "q": f"q_{name}"}],
        "mass": mass, "com": [0.3 if x > 0 else -0.3, 0, 0], "inertia": [0.01, 0.02, 0.03]}
    path = write_model(tmp_path, {
        "name": "hub", "parameters": {"m3": 1.0, "mb": 0.7},
        "bodies": [{"name": "hub", "parent": "ground", "joint": [{"rotate": "z", "q": "a"}], "mass": 2.0,
                    "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]},
                   child("c1", 0.5, "m3"), child("c2", -0.5, "2*mb")]})
    model = dynamica.load(str(path))
    for m3 in (1.0, 2.5):
        M = model.mass_matrix([0.1, 0.0, 0.0], params={"m3": m3})
        # about the child's joint axis (y): I_yy + m r^2 with r = 0.3
        assert M[1, 1] == pytest.approx(0.02 + m3 * 0.09, rel=1e-12)
        assert M[2, 2] == pytest.approx(0.02 + 1.4 * 0.09, rel=1e-12)


@pytest.mark.parametrize("name", ["lambda", "class", "None", "True", "import"])
def test_python_keyword_is_a_model_error(tmp_path, name):
    """A name no expression could refer to is rejected where it is declared."""
    from conftest import write_model
    path = write_model(tmp_path, {
        "name": "kw", "parameters": {name: 1.0},
        "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "z", "q": "a"}], "mass": 1.0,
                    "com": [0, 0, 0], "inertia": [1, 1, 1]}]})
    with pytest.raises(dynamica.ModelError, match=rf"parameters\.{name}.*keyword"):
        dynamica.load(str(path))


def test_expression_output_cannot_shadow_qdd(tmp_path):
    from conftest import write_model
    path = write_model(tmp_path, {
        "name": "out", "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "z", "q": "a"}],
                                   "mass": 1.0, "com": [0, 0, 0], "inertia": [1, 1, 1]}],
        "outputs": {"expressions": {"qdd": "2*a"}}})
    with pytest.raises(dynamica.ModelError, match=r"outputs\.expressions\.qdd"):
        dynamica.load(str(path))

"""What a mutated model file that loads computes (tests/test_fuzz_models.py only asks that it loads or
names the file in a ModelError): the seeded structural mutants of a small bundled model that load
are compiled, and their accelerations at random states equal those of sympy.physics.mechanics'
KanesMethod built from the mutated file by tests/oracles/spm.py (relative 1e-9), and those that do
not load name the section that was changed in their ModelError's entry paths; where the oracle
finds no finite accelerations (a mass or inertia made singular), dynamica gives no finite numbers
either (an error, or NaN). A mutant the oracle does not read (OracleModelError: a key it does not
know) is skipped, and at least a few mutants must be compared."""

from __future__ import annotations

import copy
import random
import re
import warnings

import numpy as np
import pytest
import yaml
from test_fuzz_models import STRUCTURAL, _pick, locations

import dynamica
from dynamica.errors import DynamicaError, ModelError

from conftest import MODELS, write_model

MODEL = "double_pendulum"
KINDS = ("drop_key", "swap_type", "rename_key", "swap_value")
SEEDS = range(12)


def swap_value(data, rng):
    """One number or expression of the bodies or parameters replaced by another of the file's (a
    model that usually loads and means something else: the case the loader's checks cannot see)."""
    skip = ("name", "parent", "unit", "description")
    slots = [(c, k) for c, k in locations({"bodies": data["bodies"], "parameters": data["parameters"]})
             if isinstance(c[k], (str, int, float)) and not isinstance(c[k], bool) and k not in skip]
    where, other = _pick(rng, slots), _pick(rng, slots)
    where[0][where[1]] = other[0][other[1]]


MUTATE = {**STRUCTURAL, "swap_value": swap_value}


def _mutants():
    base = yaml.safe_load((MODELS / f"{MODEL}.yaml").read_text())
    for kind in KINDS:
        for seed in SEEDS:
            data = copy.deepcopy(base)
            MUTATE[kind](data, random.Random(f"{MODEL}/{kind}/{seed}"))
            yield f"{kind}/{seed}", data


def test_loaded_mutants_compute_what_their_file_says(tmp_path):
    from oracles.spm import OracleModelError, kane_qdd_function
    rng = np.random.default_rng(7)
    base = yaml.safe_load((MODELS / f"{MODEL}.yaml").read_text())
    compared, refused = [], []
    for k, (label, data) in enumerate(_mutants()):
        try:
            text = yaml.safe_dump(data, sort_keys=False)
        except yaml.YAMLError:                                     # pragma: no cover
            continue
        path = write_model(tmp_path, yaml.safe_load(text), f"mutant{k}.yaml")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = dynamica.load(str(path), check_mass_matrix=False)
        except ModelError as exc:
            assert str(path) in str(exc), (label, str(exc))        # the file named (tests/test_fuzz_models.py)
            # and the entry: a problem's path starts at the top-level section that was changed
            changed = {str(key) for key in set(base) | set(data) if base.get(key) != data.get(key)}
            tops = {re.split(r"[.\[]", p.path)[0] for p in exc.problems}
            assert tops & changed, (label, changed, [str(p) for p in exc.problems])
            refused.append(label)
            continue
        try:
            oracle = kane_qdd_function(yaml.safe_load(path.read_text()))
        except (OracleModelError, KeyError, TypeError, ValueError):
            continue                                               # the oracle cannot read it: not compared
        assert tuple(oracle.coordinates) == tuple(model.coordinates), label
        for _ in range(2):
            q, qd = rng.uniform(-1.0, 1.0, model.n), rng.uniform(-1.0, 1.0, model.n)
            with np.errstate(all="ignore"):
                want = np.asarray(oracle(q, qd), dtype=float)
            if not np.all(np.isfinite(want)):
                try:
                    got = model.qdd(q, qd)
                except DynamicaError:
                    continue
                assert not np.all(np.isfinite(got)), (label, got, want)
                continue
            got = model.qdd(q, qd)
            assert np.max(np.abs(got - want)) <= 1e-9 * max(1.0, np.max(np.abs(want))), (label, got, want)
        compared.append(label)
    assert len(compared) >= 10 and len(refused) >= 5, (compared, refused)
    # a swapped value either computes what the file says or is refused naming its entry (the
    # dimension checks of declared units refuse some since units are read): most are examined
    swapped = [label for label in compared + refused if label.startswith("swap_value")]
    assert sum(label.startswith("swap_value") for label in compared) >= 3 and len(swapped) >= 8, (compared, refused)


@pytest.mark.parametrize("kind", KINDS)
def test_the_mutants_are_mutations(kind):
    """Every mutant differs from the file (the comparison above is not of the original only)."""
    base = yaml.safe_load((MODELS / f"{MODEL}.yaml").read_text())
    assert sum(data != base for label, data in _mutants() if label.startswith(kind)) >= len(SEEDS) - 2

"""`dynamica select`, form="auto" and the fig. 4.8 diagram."""

from __future__ import annotations

import numpy as np
import pytest

import dynamica
from dynamica.generator.cost import flops as cost
from dynamica.generator.forms import EQUATION_FORMS
from dynamica.runtime.analysis.selection import diagram, predicted_best, select
from dynamica.runtime.cli.main import main


def test_report_lists_every_form_with_its_numbers(models_dir):
    rep = select(models_dir / "chain7.yaml")
    assert {r.form for r in rep.rows} == set(EQUATION_FORMS)
    # chain7: seven revolute joints in a chain, so the predictions are the closed forms of table 4.3
    row = {r.form: r for r in rep.rows}
    assert row["composite"].predicted == float(cost.count(cost.chain(7, 1), form="CBM"))
    for r in rep.rows:
        assert r.generated > 0
        if r.form in cost.FORMS:
            assert r.predicted > 0
    assert rep.recommended in cost.SELECTION
    assert "recommended:" in rep.text()


def test_generated_ops_are_the_compiled_modules(models_dir):
    rep = select(models_dir / "star.yaml", forms=["CBM", "ABM"], measure=True)
    rows = {(x.form, x.mode): x for x in rep.rows}
    assert set(rows) == {(f, m) for f in ("composite", "articulated") for m in ("symbolic", "numeric")}
    r, rn = rows[("composite", "symbolic")], rows[("composite", "numeric")]
    m = dynamica.load(str(models_dir / "star.yaml"), form="composite")
    assert r.generated == m.module.OPERATION_COUNTS["dynamics"]["total"]
    mn = dynamica.load(str(models_dir / "star.yaml"), form="composite", mode="numeric")
    assert rn.generated == mn.module.OPERATION_COUNTS["numeric_terms"]["total"]
    assert all(0 < x.seconds < 1e-3 for x in rep.rows) and rep.basis == "measured"
    # a choice among four measured candidates: the fastest of the table's own timings
    fastest = min(rep.rows, key=lambda x: x.seconds)
    assert (rep.recommended, rep.recommended_mode) == (fastest.form, fastest.mode)
    assert "fastest measured" in rep.text()


def test_modes(models_dir, monkeypatch):
    from dynamica.generator.forms import NUMERIC_FORMS as SUPPORTED_FORMS
    from dynamica.runtime.analysis import selection
    rep = select(models_dir / "chain7.yaml")
    assert {r.form for r in rep.rows if r.mode == "numeric"} == set(SUPPORTED_FORMS)
    assert rep.recommended_mode == "symbolic"          # a small program: symbolic mode
    assert "mode symbolic" in rep.text()
    monkeypatch.setattr(selection, "NUMERIC_ABOVE", 0)   # as if the symbolic program were too large
    rep = select(models_dir / "chain7.yaml", forms=["CBM", "DEC", "LGR", "ITR-G"])
    assert rep.recommended in SUPPORTED_FORMS and rep.recommended_mode == "numeric"
    # a spherical chain predicts LGR, which numeric mode does not have: the cheapest form it has
    spec = dynamica.generator.spec.model.load_model(models_dir / "spherical_chain.yaml")
    assert predicted_best(spec) == "lagrange1"
    rep = select(models_dir / "spherical_chain.yaml", generate_code=False)
    want = predicted_best(spec, available=SUPPORTED_FORMS)
    assert (rep.recommended, rep.recommended_mode) == (want, "numeric") and "operations >" in rep.text()
    assert {r.mode for r in select(models_dir / "chain7.yaml", forms=["ABM"], modes=("symbolic",)).rows} \
        == {"symbolic"}
    with pytest.raises(ValueError, match="unknown mode"):
        select(models_dir / "chain7.yaml", modes=("fast",))


def test_auto_uses_the_prediction(models_dir, tmp_path):
    path = models_dir / "chain7.yaml"
    want = predicted_best(dynamica.generator.spec.model.load_model(path))
    m = dynamica.load(str(path), form="auto")
    assert m.form == want


def test_diagram_matches_the_dissertations_findings(tmp_path):
    """Fig. 4.8 / section 4.2: CBM wins on stars of short chains (linear in N there), while on a
    single long chain CBM (cubic) loses to a linear form."""
    grids = diagram(tmp_path / "d.png", max_chains=12, max_length=25, dofs=(1, 3))
    cands = [cost.form_name(f) for f in cost.SELECTION]
    for nJ, g in grids.items():
        assert cands[g[11, 0]] == "composite", nJ                 # 12 chains of one body: a star
        assert cands[g[0, 24]] != "composite", nJ                 # one chain of 25 bodies
    assert (tmp_path / "d.png").stat().st_size > 10000
    assert np.unique(grids[3]).size >= 2


def test_cli(models_dir, tmp_path, capsys):
    assert main(["select", str(models_dir / "double_pendulum.yaml"), "--forms", "DEC,ABM,CBM", "-q"]) == 0
    out = capsys.readouterr().out
    # three candidates; table 4.3's counts for a chain of two revolute joints put CBM first
    counts = {f: cost.count(cost.chain(2, 1), form=f) for f in ("CBM", "DEC", "ABM")}
    assert min(counts, key=counts.get) == "CBM"
    assert "predicted flops" in out and "recommended: composite" in out
    assert main(["select", "--diagram", str(tmp_path / "f.png"), "--max-chains", "4", "--max-length", "4"]) == 0
    assert (tmp_path / "f.png").exists()
    assert main(["select"]) == 2


def test_auto_never_picks_lgr_for_a_massless_body(models_dir):
    """PUMA's link1 is massless at the default parameters: LGR (which inverts every M_i) is out."""
    from dynamica.generator.spec.model import load_model
    from dynamica.runtime.analysis.selection import _inverts_body_inertias
    spec = load_model(models_dir / "puma560.yaml")
    assert not _inverts_body_inertias(spec)
    assert _inverts_body_inertias(load_model(models_dir / "chain7.yaml"))
    assert predicted_best(spec, available=["lagrange1", "composite"]) == "composite"


def test_a_form_that_cannot_take_the_model_is_a_row_not_an_abort(models_dir):
    """PUMA 560 (a massless link1): HLGR cannot be generated at all and LGR gives no finite q''.
    `select` reports both as not applicable in their rows and shows the whole table; the
    recommendation is the cheapest predicted applicable candidate and says what was left out."""
    rep = select(models_dir / "puma560.yaml", modes=("symbolic",))
    row = {r.form: r for r in rep.rows}
    assert set(row) == set(EQUATION_FORMS)
    assert not row["hamilton-lagrange1"].applicable and row["hamilton-lagrange1"].generated is None
    assert "not applicable" in row["hamilton-lagrange1"].note and "link1" in row["hamilton-lagrange1"].note
    assert not row["lagrange1"].applicable
    ok = [f for f in cost.SELECTION if row[f].applicable]
    assert rep.recommended == min(ok, key=lambda f: row[f].predicted)
    text = rep.text()
    assert "not applicable: LGR, HLGR" in text and f"recommended: {rep.recommended}" in text

"""Flop-count formulas (4.1)-(4.7) (generator/cost/flops.py) against the dissertation's printed tables.

Every printed entry of tables 4.3, 4.5, 4.8, 4.11, 5.2 and 5.3 is transcribed below as data
(with its line in the dissertation text) and compared with the formulas
evaluated on the concrete trees. The entries that do not follow from the formulas are listed in
KNOWN_DEVIATIONS with the printed value, the computed value and the explanation, and the test
asserts that exactly those deviate. See docs/cost.md.

The printed entries are polynomials of degree <= 3 in N and <= 1 in K; so are the computed
counts of each family, so agreement at N = 1..6 and at several K is agreement as polynomials.
"""

from fractions import Fraction as F

import pytest

from dynamica.generator.cost import flops as cost
from dynamica.generator.cost.flops import chain, coefficients, count, star, star_of_chains, tree
from dynamica.generator.cost.tables import TABLE_VS_FORMULA, breakdown, fit_polynomial

NS = range(1, 7)
KS = (0, 1, 2, 3, F(7, 10))


# ---------------------------------------------------------------- the families of trees
def d90_initial(N):
    """Table 5.2 (lines 2211-2213): base (3 DOF) on ground, rotating part (1) on the base,
    swinging part (1) on it, N mock-ups (3 each) on the swinging part. The text gives no
    picture in words, but n_i and eta_i (line 2213) determine the parents uniquely."""
    return tree([0, 1, 2] + [3] * N, [3, 1, 1] + [3] * N)


def d90_detailed(N):
    """Table 5.3 (lines 2226-2228): rear base (3) on ground; front base (spherical, 3) and lower
    carriage (cardan, 2) on the rear base; rotating part (2) on the carriage; swinging part (1)
    on it; N mock-ups (3) on the swinging part. Parents follow uniquely from eta_i = eta_k + n_i
    (eta = 3, 6, 5, 7, 8, 11), and mu_i (line 2228) confirms them."""
    return tree([0, 1, 1, 3, 4] + [5] * N, [3, 3, 2, 2, 1] + [3] * N)


FAMILIES = {
    "star": star,            # body 1 on ground, 2..N on body 1 (line 1818)
    "chain": chain,
    # another structure with N bodies, for the structure-independent entries: body i on i // 2
    "binary": lambda N, nJ: tree([0] + [i // 2 for i in range(2, N + 1)], nJ),
}


# ---------------------------------------------------------------- the printed entries
# key: (table, form, column, n_J) -> (line, printed value as a function of N and K)
# Table 4.3 (lines 1824-1832): rows DRT/CBM x n_J, columns "star" / "chain".
# Table 4.5 (lines 1868-1873): LGR. Table 4.8 (lines 1921-1929): ITR-M per column, ITR-G one
# entry spanning both columns (structure-independent). Table 4.11 (lines 1979-1984): ABM ("метод
# прогонки"), DEC ("метод разложения"), equal n_j in all joints, any structure.
# Tables 5.2 (line 2222) and 5.3 (line 2235): CBM, LGR, ITR (K = 2, by (4.5): line 2215), DEC.
PRINTED = {
    ("4.3", "DRT", "star", 1): (1827, lambda N, K: 406 * N),
    ("4.3", "DRT", "star", 2): (1828, lambda N, K: 667 * N),
    ("4.3", "DRT", "star", 3): (1829, lambda N, K: 1019 * N),
    ("4.3", "DRT", "chain", 1): (1827, lambda N, K: F(7, 3) * N**3 + F(107, 2) * N**2 + F(1375, 6) * N),
    ("4.3", "DRT", "chain", 2): (1828, lambda N, K: F(32, 3) * N**3 + 118 * N**2 + F(715, 3) * N),
    ("4.3", "DRT", "chain", 3): (1829, lambda N, K: 27 * N**3 + F(387, 2) * N**2 + F(499, 2) * N),
    ("4.3", "CBM", "star", 1): (1830, lambda N, K: 557 * N - 205),
    ("4.3", "CBM", "star", 2): (1831, lambda N, K: 752 * N - 205),
    ("4.3", "CBM", "star", 3): (1832, lambda N, K: 1026 * N - 205),
    ("4.3", "CBM", "chain", 1): (1830, lambda N, K: F(1, 3) * N**3 + F(59, 2) * N**2 + F(2797, 6) * N - 205),
    ("4.3", "CBM", "chain", 2): (1831, lambda N, K: F(8, 3) * N**3 + 76 * N**2 + F(1516, 3) * N - 205),
    ("4.3", "CBM", "chain", 3): (1832, lambda N, K: 9 * N**3 + F(279, 2) * N**2 + F(1089, 2) * N - 205),

    ("4.5", "LGR", "star", 1): (1871, lambda N, K: F(125, 3) * N**3 + F(425, 2) * N**2 + F(7025, 6) * N - 498),
    ("4.5", "LGR", "star", 2): (1872, lambda N, K: F(64, 3) * N**3 + 136 * N**2 + F(2990, 3) * N - 384),
    ("4.5", "LGR", "star", 3): (1873, lambda N, K: 9 * N**3 + F(153, 2) * N**2 + F(1669, 2) * N - 282),
    ("4.5", "LGR", "chain", 1): (1871, lambda N, K: 2100 * N + 57),
    ("4.5", "LGR", "chain", 2): (1872, lambda N, K: 1554 * N + 14),
    ("4.5", "LGR", "chain", 3): (1873, lambda N, K: 1127 * N - 16),

    ("4.8", "ITR-M", "star", 1): (1924, lambda N, K: (4 * K + 2) * N**2 + (15 * K + 548) * N - 206),
    ("4.8", "ITR-M", "star", 2): (1925, lambda N, K: (16 * K + 8) * N**2 + (42 * K + 705) * N - 206),
    ("4.8", "ITR-M", "star", 3): (1926, lambda N, K: (36 * K + 18) * N**2 + (81 * K + 898) * N - 206),
    ("4.8", "ITR-M", "chain", 1): (1924, lambda N, K: (6 * K + 29) * N**2 + (9 * K + 467) * N - 206),
    ("4.8", "ITR-M", "chain", 2): (1925, lambda N, K: (24 * K + 74) * N**2 + (18 * K + 507) * N - 206),
    ("4.8", "ITR-M", "chain", 3): (1926, lambda N, K: (54 * K + 135) * N**2 + (27 * K + 547) * N - 206),
    ("4.8", "ITR-G", "any", 1): (1927, lambda N, K: (4 * K + 2) * N**2 + (168 * K + 442) * N - (96 * K + 145)),
    ("4.8", "ITR-G", "any", 2): (1928, lambda N, K: (16 * K + 8) * N**2 + (201 * K + 479) * N - (96 * K + 145)),
    ("4.8", "ITR-G", "any", 3): (1929, lambda N, K: (36 * K + 18) * N**2 + (234 * K + 516) * N - (96 * K + 145)),

    ("4.11", "ABM", "any", 1): (1982, lambda N, K: 1421 * N - 1194),
    ("4.11", "ABM", "any", 2): (1983, lambda N, K: 1637 * N - 1266),
    ("4.11", "ABM", "any", 3): (1984, lambda N, K: 1892 * N - 1338),
    ("4.11", "DEC", "any", 1): (1982, lambda N, K: 1068 * N - 744),
    ("4.11", "DEC", "any", 2): (1983, lambda N, K: 1313 * N - 828),
    ("4.11", "DEC", "any", 3): (1984, lambda N, K: 1601 * N - 912),

    # N = number of mock-ups; the tree has 3 + N (5.2) or 5 + N (5.3) bodies
    ("5.2", "CBM", "d90-initial", None): (2222, lambda N, K: 1757 + 1446 * N),
    ("5.2", "LGR", "d90-initial", None): (2222, lambda N, K: 4538 + F(2329, 2) * N + F(243, 2) * N**2 + 9 * N**3),
    ("5.2", "ITR", "d90-initial", None): (2222, lambda N, K: 1943 + 1004 * N + 45 * N**2),
    ("5.2", "DEC", "d90-initial", None): (2222, lambda N, K: 2825 + 1601 * N),
    ("5.3", "CBM", "d90-detailed", None): (2235, lambda N, K: 4103 + 1869 * N),
    ("5.3", "LGR", "d90-detailed", None): (2235, lambda N, K: 7066 + F(2329, 2) * N + F(243, 2) * N**2 + 9 * N**3),
    ("5.3", "ITR", "d90-detailed", None): (2235, lambda N, K: 4131 + 1184 * N + 45 * N**2),
    ("5.3", "DEC", "d90-detailed", None): (2235, lambda N, K: 5984 + 1601 * N),
}

D90 = {"d90-initial": d90_initial, "d90-detailed": d90_detailed}
D90_K = 2            # "будем считать, что среднее число итераций на шаге интегрирования K = 2" (line 2217)


def trees_for(key):
    """The trees (as functions of N) on which the entry is checked."""
    table, form, column, nJ = key
    if column in D90:
        return [D90[column]]
    if column == "any":
        return [lambda N, f=f: f(N, nJ) for f in FAMILIES.values()]
    return [lambda N: FAMILIES[column](N, nJ)]


def computed(key, make_tree, N, K):
    table, form, column, nJ = key
    if form == "ITR":                              # (4.5), line 2215
        return count(make_tree(N), form="ITR-G", K=D90_K)
    return count(make_tree(N), form=form, K=K if form.startswith("ITR") else None)


def deviates(key):
    line, printed = PRINTED[key]
    ks = KS if key[1] in ("ITR-M", "ITR-G") else (0,)
    return any(printed(N, K) != computed(key, t, N, K) for t in trees_for(key) for N in NS for K in ks)


# ---------------------------------------------------------------- the known deviations
# key -> (printed, computed by the formulas, computed as a function of N and K, explanation)
_STAR_WHY = ("the star column gives body 1 (the base) the eta/tau terms of a satellite: eta_1 = tau_1 = "
             "2 n_J with a parent term eta_k1 = n_J, although line 1818 states eta_1 = tau_1 = n_J; the "
             "205-flop constant per non-root body (F^* + M^*, table 4.2) is still counted N - 1 times. "
             "The N-coefficients are right, the constant is not.")
_LGR_WHY = ("the chain column uses mu_N = 2 (6 - n_J) for the last body too, although line 1866 states "
            "mu_N = 6 - n_J (the last body has no child). Slopes right, constant off by "
            "G(2m) - G(m), G the per-body bracket of (4.3), m = 6 - n_J.")
_ITR_WHY = ("not (4.5) with K = 2 as line 2215-2217 say: both printed ITR entries equal "
            "5 n^2 + 103 n + 545 N_b - 332 (n DOFs, N_b bodies), while (4.5) at K = 2 is "
            "10 n^2 + 103 n + 675 N_b - 337; nor (4.4) at any K, nor (4.5) at any one K. Probably an "
            "earlier version of (4.5); the n^2 coefficient 5 cannot come from the rows of tables 4.6/4.7 "
            "(all have even n^2 coefficients) with whole multiplicities.")
KNOWN_DEVIATIONS = {
    ("4.3", "DRT", "star", 1): ("406N", "406N - 121", lambda N, K: 406 * N - 121, _STAR_WHY),
    ("4.3", "DRT", "star", 2): ("667N", "667N - 300", lambda N, K: 667 * N - 300, _STAR_WHY),
    ("4.3", "DRT", "star", 3): ("1019N", "1019N - 549", lambda N, K: 1019 * N - 549, _STAR_WHY),
    ("4.3", "CBM", "star", 1): ("557N - 205", "557N - 266", lambda N, K: 557 * N - 266, _STAR_WHY),
    ("4.3", "CBM", "star", 2): ("752N - 205", "752N - 373", lambda N, K: 752 * N - 373, _STAR_WHY),
    ("4.3", "CBM", "star", 3): ("1026N - 205", "1026N - 538", lambda N, K: 1026 * N - 538, _STAR_WHY),
    ("4.5", "LGR", "chain", 1): ("2100N + 57", "2100N - 1173", lambda N, K: 2100 * N - 1173, _LGR_WHY),
    ("4.5", "LGR", "chain", 2): ("1554N + 14", "1554N - 784", lambda N, K: 1554 * N - 784, _LGR_WHY),
    ("4.5", "LGR", "chain", 3): ("1127N - 16", "1127N - 489", lambda N, K: 1127 * N - 489, _LGR_WHY),
    ("4.8", "ITR-M", "star", 1): ("(4K+2)N^2 + (15K+548)N - 206", "(4K+2)N^2 + (15K+548)N - (4K+260)",
                                  lambda N, K: (4 * K + 2) * N**2 + (15 * K + 548) * N - (4 * K + 260), _STAR_WHY),
    ("4.8", "ITR-M", "star", 2): ("(16K+8)N^2 + (42K+705)N - 206", "(16K+8)N^2 + (42K+705)N - (16K+338)",
                                  lambda N, K: (16 * K + 8) * N**2 + (42 * K + 705) * N - (16 * K + 338), _STAR_WHY),
    ("4.8", "ITR-M", "star", 3): ("(36K+18)N^2 + (81K+898)N - 206", "(36K+18)N^2 + (81K+898)N - (36K+440)",
                                  lambda N, K: (36 * K + 18) * N**2 + (81 * K + 898) * N - (36 * K + 440), _STAR_WHY),
    ("5.2", "ITR", "d90-initial", None): ("1943 + 1004N + 45N^2", "2453 + 1284N + 90N^2",
                                          lambda N, K: 2453 + 1284 * N + 90 * N**2, _ITR_WHY),
    ("5.3", "ITR", "d90-detailed", None): ("4131 + 1184N + 45N^2", "5381 + 1644N + 90N^2",
                                           lambda N, K: 5381 + 1644 * N + 90 * N**2, _ITR_WHY),
}


def test_exactly_the_known_entries_deviate():
    assert set(KNOWN_DEVIATIONS) <= set(PRINTED)
    deviating = {key for key in PRINTED if deviates(key)}
    assert deviating == set(KNOWN_DEVIATIONS), (
        f"unexpected: {sorted(deviating - set(KNOWN_DEVIATIONS), key=str)}; "
        f"no longer deviating: {sorted(set(KNOWN_DEVIATIONS) - deviating, key=str)}")
    assert len(PRINTED) - len(deviating) == 27


@pytest.mark.parametrize("key", sorted(set(PRINTED) - set(KNOWN_DEVIATIONS), key=str))
def test_printed_entry_follows_from_formulas(key):
    assert not deviates(key), f"table {key[0]}, line {PRINTED[key][0]}: {key}"


@pytest.mark.parametrize("key", sorted(KNOWN_DEVIATIONS, key=str))
def test_known_deviation_computed_value(key):
    """The 'computed' column of KNOWN_DEVIATIONS (and of docs/cost.md) is what the formulas give."""
    printed_text, computed_text, computed_fn, why = KNOWN_DEVIATIONS[key]
    ks = KS if key[1] in ("ITR-M", "ITR-G") else (0,)
    for make_tree in trees_for(key):
        for N in NS:
            for K in ks:
                assert computed(key, make_tree, N, K) == computed_fn(N, K)
                assert PRINTED[key][1](N, K) != computed_fn(N, K)       # they differ everywhere


# ---------------------------------------------------------------- the explanations
@pytest.mark.parametrize("form", ["DRT", "CBM", "ITR-M"])
@pytest.mark.parametrize("nJ", [1, 2, 3])
def test_star_rows_treat_body_1_as_a_satellite(form, nJ):
    """Printed star entries = the formula with eta_1 = tau_1 = 2 n_J and eta_{kappa_1} = n_J, the
    205 per non-root body (CBM, ITR-M: F^* + M^* of table 4.2) kept for N - 1 bodies."""
    table = "4.8" if form == "ITR-M" else "4.3"
    printed = PRINTED[(table, form, "star", nJ)][1]
    for N in NS:
        c = coefficients(star(N, nJ))
        assert c.eta[0] == c.tau[0] == nJ and c.eta_parent[0] is None       # line 1818
        assert all(e == t == 2 * nJ and ek == nJ for e, t, ek in zip(c.eta[1:], c.tau[1:], c.eta_parent[1:]))
        sat = c.replace(eta={0: 2 * nJ}, tau={0: 2 * nJ}, eta_parent={0: nJ})
        for K in (KS if form == "ITR-M" else (None,)):
            extra = 0 if form == "DRT" else 205
            assert count(sat, form, K=K) - extra == printed(N, K or 0)


@pytest.mark.parametrize("nJ", [1, 2, 3])
def test_lgr_chain_row_uses_mu_N_equal_to_the_others(nJ):
    printed = PRINTED[("4.5", "LGR", "chain", nJ)][1]
    for N in NS:
        c = coefficients(chain(N, nJ))
        m = 6 - nJ
        assert c.mu == (2 * m,) * (N - 1) + (m,)                               # line 1866
        assert count(c.replace(mu={N - 1: 2 * m}), "LGR") == printed(N, 0)


def test_d90_itr_entries_are_not_4_4_or_4_5():
    for column, key in (("d90-initial", ("5.2", "ITR", "d90-initial", None)),
                        ("d90-detailed", ("5.3", "ITR", "d90-detailed", None))):
        printed = PRINTED[key][1]
        make = D90[column]
        # the description in _ITR_WHY
        for N in NS:
            t = make(N)
            assert printed(N, 0) == 5 * t.n**2 + 103 * t.n + 545 * t.N - 332
            assert count(t, "ITR-G", K=2) == 10 * t.n**2 + 103 * t.n + 675 * t.N - 337
        # no single K reproduces the entry with (4.5), nor with (4.4)
        for form in ("ITR-G", "ITR-M"):
            c0 = fit_polynomial(lambda N: count(make(N), form, K=0), 3)
            c1 = fit_polynomial(lambda N: count(make(N), form, K=1), 3)
            target = fit_polynomial(lambda N: printed(N, 0), 3)
            # K from the N^2 coefficient, then the other coefficients must agree
            K = (target[2] - c0[2]) / (c1[2] - c0[2])
            assert [a + (b - a) * K for a, b in zip(c0, c1)] != list(target)


def test_d90_coefficients_of_the_text():
    """Lines 2211-2213 and 2226-2228: n, eta_i, mu_i of the two D90 models."""
    for N in NS:
        t = d90_initial(N)
        assert t.n == 5 + 3 * N and t.N == 3 + N
        assert t.eta[1:] == (3, 4, 5) + (8,) * N
        # printed mu = 8, 10, 8, 3...: mu_3 = m_3 + N m_mockup = 5 + 3N, which is 8 only for N = 1;
        # the printed LGR entry (9 N^3 term) follows from 5 + 3N, so "mu_3 = 8" is a typo.
        assert t.mu[1:] == (8, 10, 5 + 3 * N) + (3,) * N
        t = d90_detailed(N)
        assert t.n == 11 + 3 * N and t.N == 5 + N
        assert t.eta[1:] == (3, 6, 5, 7, 8) + (11,) * N
        assert t.mu[1:] == (10, 3, 8, 9, 5 + 3 * N) + (3,) * N


def test_tau_is_n_i_times_depth():
    """tau_i = sum_{j in P_i} n_i (line 1780) = n_i |P_i|, not eta_i: in chains and stars with equal
    n_J the two coincide, in the D90 trees they do not, and the printed CBM entries of tables 5.2
    and 5.3 follow only from n_i |P_i|."""
    for key, make in ((("5.2", "CBM", "d90-initial", None), d90_initial),
                      (("5.3", "CBM", "d90-detailed", None), d90_detailed)):
        for N in NS:
            c = coefficients(make(N))
            assert c.tau != c.eta
            assert count(c, "CBM") == PRINTED[key][1](N, 0)
            if N > 1:      # (initial model, N = 1: sum tau = sum eta = 20 by coincidence)
                assert count(c.replace(tau=dict(enumerate(c.eta))), "CBM") != PRINTED[key][1](N, 0)


def test_itr_m_vs_itr_g_thresholds_of_the_text():
    """Line 1931: for stars ITR-M is cheaper than ITR-G when K > 0.7 (n_j=1), 1.4 (2), 2.5 (3):
    the K at which the N-slopes (large N) are equal; the N^2 coefficients coincide."""
    for nJ, printed in ((1, 0.7), (2, 1.4), (3, 2.5)):
        slope = {}
        for K in (0, 1):
            d = fit_polynomial(lambda N: count(star(N, nJ), "ITR-M", K=K) - count(star(N, nJ), "ITR-G", K=K), 3)
            assert d[2] == d[3] == 0
            slope[K] = d[1]
        k_star = slope[0] / (slope[0] - slope[1])
        assert round(float(k_star), 1) == printed


# ---------------------------------------------------------------- formulas vs component tables
def _random_trees(count_=25, seed=3):
    import random
    rng = random.Random(seed)
    out = []
    for _ in range(count_):
        N = rng.randint(1, 14)
        parents = [rng.randrange(0, i) if rng.random() < 0.85 else 0 for i in range(1, N + 1)]
        parents[0] = 0
        out.append(tree(parents, [rng.randint(0, 6) for _ in range(N)]))
    return out


RANDOM = _random_trees()


@pytest.mark.parametrize("form", cost.FORMS)
def test_formula_is_the_sum_of_its_tables(form):
    """(4.1)-(4.7) = sum of the rows of tables 4.1/4.2 (+ B.8), 4.4, 4.6/4.7, 4.9, 4.10, except
    for ABM and DEC where the printed formulas differ from their tables (TABLE_VS_FORMULA)."""
    diff = TABLE_VS_FORMULA.get(form, lambda t: 0)
    for t in RANDOM + [chain(5, 2), star(6, 3), d90_detailed(4)]:
        for K in (0, 2, F(7, 10)):
            rows = breakdown(t, form=form, K=K)
            assert sum(r.flops for r in rows) - count(t, form=form, K=K) == diff(t)
            for r in rows:
                if r.muls is not None:
                    assert r.total == r.muls + r.adds


def test_abm_dec_table_vs_formula_deviation():
    """(4.6) lacks table 4.9's first row (84N + 72N); table 4.10 sums to 1111/6 n_i, (4.7) has 1105/6."""
    t = chain(4, 3)
    rows = breakdown(t, form="ABM")
    assert rows[0].obj.startswith("v, w', F'") and rows[0].flops == 156 * t.N
    assert sum(r.flops for r in rows[1:]) == count(t, "ABM")
    rows = breakdown(t, form="DEC")
    assert sum(r.flops for r in rows) - count(t, "DEC") == t.n == 12


def _b8_cost(pattern):
    """(B.8) for a symmetric pattern factored A = L^T L from the last row up (B.2)-(B.3);
    returns (flops, number of fill-ins)."""
    n = len(pattern)
    rows = [{j for j in range(k) if pattern[k][j]} for k in range(n)]
    fill = 0
    for k in range(n - 1, -1, -1):
        for a in rows[k]:
            for b in rows[k]:
                if b < a and b not in rows[a]:
                    rows[a].add(b)
                    fill += 1
    eta = [1 + len(r) for r in rows]
    return sum(e * e for e in eta) + 4 * sum(eta) - 2 * n, fill


def _regular(t):
    return all(t.kappa[i] < i for i in t.bodies)


def test_solve_terms_are_b8_on_the_sparsity_patterns():
    """The Cholesky terms of (4.1)/(4.2) and (4.3) are (B.8) on the patterns of M (M_ij != 0 iff
    one of i, j is on the other's path) and of H (2.24), with no fill-in (theorem 2.6); this
    also holds with several bodies on the ground (the generalisation of "sum_{i=2}^N")."""
    for t in [x for x in RANDOM if _regular(x)] + [star(5, 2), chain(4, 1), d90_initial(3)]:
        P = [set() for _ in range(t.N + 1)]
        for i in t.bodies:
            P[i] = P[t.kappa[i]] | {i}
        owner = [i for i in t.bodies for _ in range(t.dofs[i])]
        M = [[a in P[b] or b in P[a] for b in owner] for a in owner]
        flops, fill = _b8_cost(M)
        solve = [r for r in breakdown(t, form="DRT") if r.equation == "(B.8)"][0]
        assert fill == 0 and flops == solve.total
        m = t.m
        kap = t.kappa
        cowner = [i for i in t.bodies for _ in range(m[i])]

        def hblock(i, j):
            return i == j or (kap[i] == j != 0) or (kap[j] == i != 0) or (kap[i] == kap[j] != 0)
        H = [[hblock(a, b) for b in cowner] for a in cowner]
        flops, fill = _b8_cost(H)
        solve = [r for r in breakdown(t, form="LGR") if r.equation == "(B.8)"][0]
        assert fill == 0 and flops == solve.total


@pytest.mark.parametrize("form", ["DRT", "CBM", "LGR", "ABM", "DEC"])
def test_additive_over_subtrees_on_the_ground(form):
    """With R bodies on the ground the subsystems are independent: these counts add up."""
    a, b = star(4, 2), chain(3, 1)
    # forest: a's bodies 1..4, then b's bodies shifted by 4
    parents = list(a.kappa[1:]) + [0 if k == 0 else k + a.N for k in b.kappa[1:]]
    forest = tree(parents, list(a.dofs[1:]) + list(b.dofs[1:]))
    assert forest.roots == (1, 5)
    assert count(forest, form) == count(a, form) + count(b, form)


# ---------------------------------------------------------------- API
def test_coefficients_and_numbering():
    t = tree([0, 1, 1, 3], [3, 1, 2, 6])
    assert t.eta == (0, 3, 4, 5, 11)
    assert t.tau == (0, 3, 2, 4, 18)                   # n_i |P_i|
    assert t.m == (0, 3, 5, 4, 0)
    assert t.mu == (0, 12, 5, 4, 0)
    assert tree([-1, 0, 1, 1, 3], [0, 3, 1, 2, 6]) == t == tree(t.kappa, t.dofs)
    # any numbering: body 4 -> 1 etc. gives the same counts
    u = tree([2, 4, 4, 0], [6, 2, 1, 3])              # old bodies 4, 3, 2, 1 -> new 1, 2, 3, 4
    assert u.roots == (4,) and u.eta[1] == 11
    assert sorted(u.eta[1:]) == sorted(t.eta[1:])
    for f in cost.FORMS:
        assert count(u, f, K=2) == count(t, f, K=2)


def test_invalid_trees():
    with pytest.raises(ValueError, match="cycle"):
        tree([2, 1], [1, 1])
    with pytest.raises(ValueError, match="0..6"):
        tree([0], [7])
    with pytest.raises(ValueError, match="bodies"):
        tree([0, 1], [1])


def test_form_names_and_kwargs():
    t = chain(3, 1)
    for f, a in cost.ACRONYMS.items():
        assert cost.form_name(a) == cost.form_name(a.lower()) == cost.form_name(f) == f
    with pytest.raises(ValueError, match="ambiguous"):
        count(t, "iterative", K=2)
    with pytest.raises(ValueError, match="needs K"):
        count(t, "ITR-G")
    with pytest.raises(ValueError, match="unknown form"):
        count(t, "RNEA")
    assert count([0, 1, 2], [1, 1, 1], "composite") == count(t, "CBM") == count(t, form="CBM")
    assert cost.predict([0, 1, 2], 1, "ITR-G", K=1.5) == float(count(t, "ITR-G", K=F(3, 2)))
    assert set(cost.predict_all(t)) == {"direct", "composite", "lagrange1", "articulated", "ltdl"}
    allk = cost.predict_all(t, K=2)
    assert list(allk) == list(cost.FORMS) and allk["iterative-g"] == float(count(t, "ITR-G", K=2))


def test_from_spec_and_topology(models_dir):
    from dynamica.generator.mechanics.topology import build_topology
    from dynamica.generator.spec.model import load_model
    spec = load_model(models_dir / "star.yaml")           # a disk with three 2-link arms
    t = cost.from_spec(spec)
    assert t == star_of_chains(3, 2, 1)
    topo = build_topology(spec)
    assert cost.from_topology(topo, spec) == t
    assert cost.from_topology(topo, {name: 1 for name in topo.names[1:]}) == t
    assert cost.from_topology(topo, [1] * topo.n_bodies) == t
    assert cost.from_spec(load_model(models_dir / "spherical_chain.yaml")) == chain(3, 3)


def test_best_form_for_the_d90_models():
    """docs/cost.md: with (4.2), (4.3), (4.5) (K = 2), (4.7) the initial model is cheapest with CBM
    for every N; the detailed one with CBM up to N = 7 mock-ups, DEC from N = 8."""
    assert all(cost.best(d90_initial(N), K=2) == "composite" for N in range(1, 51))
    assert [cost.best(d90_detailed(N), K=2) for N in range(1, 11)] == ["composite"] * 7 + ["ltdl"] * 3
    assert cost.best(d90_detailed(30), K=2) == "ltdl"

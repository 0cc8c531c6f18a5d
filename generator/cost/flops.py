"""Flop counts of the equation forms per right-hand-side evaluation (dissertation, chapter 4).

Exact arithmetic (``fractions.Fraction``), no model loading. Each form registers its formula with
itself (`@register(..., cost=Formula(...))`, generator/forms/<form>.py, written with the helpers
here); `FORMS`, `ACRONYMS`, `ITERATIVE` and `SELECTION` are read from that registry.

Symbols (dissertation 4.1.1-4.1.2, docs/design.md); bodies 1..N, ground = 0:

  kappa_i   parent of body i (0 = ground); a *root* body is one with kappa_i = 0
  n_i       degrees of freedom of joint i (0..6);  n = sum n_i
  P_i       joints on the path from ground to i (i included); |P_i| = depth of i
  S_i       children of i
  eta_i   = sum_{j in P_i} n_j      ("depth" of the tree in DOFs; eta_0 = 0, eta_i - n_i = eta_{kappa_i})
  tau_i   = sum_{j in P_i} n_i  = n_i |P_i|   (as printed: the summand is n_i, not n_j)
  m_i     = 6 - n_i                 (number of constraint reactions of joint i)
  mu_i    = m_i + sum_{j in S_i} m_j   ("branching" of node i)

Formulas (printed for one root body, body 1; R = number of root bodies, generalisation below):

  (4.1) DRT   = sum_i [eta^3/3 + 17 eta^2/2 + 325 eta/6 + 222]
                - sum_{kappa_i != 0} [eta_k^3/3 + 5 eta_k^2/2 - 251 eta_k/6]          (eta_k = eta_{kappa_i})
  (4.2) CBM   = sum_i [eta^3/3 + 17 eta^2/2 + 109 eta/6 + 222 + 42 tau]
                - sum_{kappa_i != 0} [eta_k^3/3 + 17 eta_k^2/2 + 109 eta_k/6 - 205]
  (4.3) LGR   = sum_i [mu^3/3 + 17 mu^2/2 + 361 mu/6 + 420]
                - sum_{kappa_i != 0} [m^3/3 + 5 m^2/2 + m/6] - 48 R
  (4.4) ITR-M = sum_i [(2K+6)(eta^2 - eta_k^2) + 42 tau] + (4K+2) n^2 + (9K+19) n + 427 N - 205 R - 1
  (4.5) ITR-G = 2 n^2 + 37 n + 405 N - 144 R - 1 + (4 n^2 + 33 n + 135 N - 96 R) K
  (4.6) ABM   = sum_i (n^3/3 + 35 n^2/2 + 967 n/6 + 1242) - sum_{roots} (72 n_r + 1122)
  (4.7) DEC   = sum_i (n^3/3 + 39 n^2/2 + 1105 n/6 + 864) - sum_{roots} (84 n_r + 660)

With R = 1 (only body 1 on the ground) these are (4.1)-(4.7) verbatim: "sum_{i=2}^N" is the sum
over non-root bodies and "-(72 n_1 + 1122)" etc. the correction for the root body. For R > 1
the per-root constants are split the way the component tables (4.2, 4.4, 4.6, 4.9, 4.10) split
them: the (N-1) factors there are counts of non-root bodies (recursions that skip the ground).
With this reading DRT, CBM, LGR, ABM and DEC are additive over independent subtrees, and the
LGR solve term is exactly (B.8) applied to the block pattern (2.24) (see docs/cost.md).

`breakdown` lists the rows of the component tables (4.1, 4.2, 4.4, 4.6, 4.7, 4.9, 4.10 and the
(B.8) solves) that the formulas are the sums of; they agree with the formulas except for ABM and
DEC, where the printed (4.6)/(4.7) differ from the sum of their own tables (see `TABLE_VS_FORMULA`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

__all__ = [   # FORMS, ACRONYMS, ITERATIVE, SELECTION: read from the registry of forms (module __getattr__)
    "FORMS", "ACRONYMS", "Formula", "NO_FORMULA", "Tree", "Coefficients", "tree", "coefficients",  # noqa: F822
    "chain", "star", "star_of_chains", "from_topology", "from_spec", "form_name", "count", "predict", "count_all",
    "predict_all", "best", "ITERATIVE", "SELECTION",  # noqa: F822
]


@dataclass(frozen=True)
class Formula:
    """A form's flop count per right-hand-side evaluation, registered with the form itself
    (`@register(..., cost=Formula(...))` in generator/forms/<form>.py).

    equation: its number in chapter 4, e.g. "(4.1)"; the forms are listed in this order (`FORMS`).
    flops: `Coefficients -> Fraction`, or `(Coefficients, K) -> Fraction` when `iterative` (K the
      number of iterations per call).
    candidate: one of the forms the selection of section 4.2 compares (`SELECTION`).
    """

    equation: str | None
    flops: object
    iterative: bool = False
    candidate: bool = False

    @property
    def order(self) -> tuple:
        return tuple(int(x) for x in self.equation.strip("()").split("."))


#: the explicit "no formula" of a form the dissertation gives no flop count for (the Hamiltonian ones)
NO_FORMULA = Formula(None, None)


def _counted() -> dict:
    """{form: Formula} of the registered forms that have a formula, in the order of chapter 4."""
    from dynamica.generator.forms import FORM_INFO
    have = [(f, i.cost) for f, i in FORM_INFO.items() if i.cost is not NO_FORMULA]
    return dict(sorted(have, key=lambda x: x[1].order))


def __getattr__(name):
    # read from the registry of forms, where each form registers its formula (generator/forms/__init__.py)
    if name == "FORMS":                  # the form names of the code, in the order of chapter 4
        return tuple(_counted())
    if name == "ACRONYMS":               # the dissertation's acronyms
        from dynamica.generator.forms import FORM_INFO
        return {f: FORM_INFO[f].acronym for f in _counted()}
    if name == "ITERATIVE":              # the forms whose count depends on K
        return tuple(f for f, c in _counted().items() if c.iterative)
    if name == "SELECTION":              # the forms compared in section 4.2 / 5.2.3 (DRT and ABM are
        return tuple(f for f, c in _counted().items() if c.candidate)     # dominated by CBM and DEC)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _by_name() -> dict:
    """Spellings of the forms with a formula: code name (also with `_`), each acronym in lower
    case (also with `_` or nothing for `-`)."""
    from dynamica.generator.forms import FORM_INFO
    out = {}
    for f in _counted():
        out.update({f: f, f.replace("-", "_"): f})
        for a in FORM_INFO[f].acronyms:
            a = a.lower()
            out.update({a: f, a.replace("-", "_"): f, a.replace("-", ""): f})
    return out


def form_name(form: str) -> str:
    """Canonical code name of a form given by code name or acronym (case-insensitive)."""
    key = str(form).strip().lower()
    if key in ("iterative", "itr"):
        raise ValueError(f"form `{form}` is ambiguous: use `iterative-m` (ITR-M, residual with the mass "
                         f"matrix (2.53)) or `iterative-g` (ITR-G, recursive residual (2.54)-(2.55))")
    by_name = _by_name()
    if key in by_name:
        return by_name[key]
    raise ValueError(f"unknown form `{form}`; known: "
                     + ", ".join(f"{f} ({a})" for f, a in __getattr__("ACRONYMS").items()))


# ---------------------------------------------------------------- the tree and its coefficients
@dataclass(frozen=True)
class Tree:
    """A tree of N bodies: kappa[i] parent of body i (kappa[0] = -1, 0 = ground), dofs[i] = n_i
    (dofs[0] = 0). Any numbering in which the parent array is acyclic is accepted."""

    kappa: tuple
    dofs: tuple

    def __post_init__(self):
        kappa, dofs = self.kappa, self.dofs
        if len(kappa) != len(dofs):
            raise ValueError(f"kappa has {len(kappa) - 1} bodies but dofs has {len(dofs) - 1}")
        N = len(kappa) - 1
        if N < 1:
            raise ValueError("the tree has no bodies")
        if kappa[0] != -1 or dofs[0] != 0:
            raise ValueError("index 0 is the ground: kappa[0] must be -1 and dofs[0] must be 0")
        for i in range(1, N + 1):
            k = kappa[i]
            if not isinstance(k, int) or not 0 <= k <= N or k == i:
                raise ValueError(f"body {i}: parent {k!r} is not the ground (0) or another body 1..{N}")
            n = dofs[i]
            if not isinstance(n, int) or not 0 <= n <= 6:
                raise ValueError(f"body {i}: joint DOF count {n!r} is not an integer 0..6")
        for i in range(1, N + 1):          # every body reaches the ground
            seen, j = set(), i
            while j != 0:
                if j in seen:
                    raise ValueError(f"body {i}: the parent array has a cycle through body {j}")
                seen.add(j)
                j = kappa[j]

    # -- sizes
    @property
    def N(self) -> int:
        return len(self.kappa) - 1

    @property
    def n(self) -> int:
        return sum(self.dofs)

    @property
    def bodies(self) -> range:
        return range(1, self.N + 1)

    @property
    def roots(self) -> tuple:
        """Bodies attached to the ground (kappa_i = 0)."""
        return tuple(i for i in self.bodies if self.kappa[i] == 0)

    @property
    def children(self) -> tuple:
        ch = [[] for _ in range(self.N + 1)]
        for i in self.bodies:
            ch[self.kappa[i]].append(i)
        return tuple(tuple(c) for c in ch)

    # -- the coefficients of chapter 4 (index 0 = ground, value 0)
    @property
    def depth(self) -> tuple:
        """|P_i|: number of joints from the ground to body i."""
        return tuple(self._walk(lambda i: 1))

    @property
    def eta(self) -> tuple:
        """eta_i = sum_{j in P_i} n_j (4.1.1)."""
        return tuple(self._walk(lambda i: self.dofs[i]))

    @property
    def tau(self) -> tuple:
        """tau_i = sum_{j in P_i} n_i = n_i |P_i| (4.1.1)."""
        d = self.depth
        return tuple(self.dofs[i] * d[i] for i in range(self.N + 1))

    @property
    def m(self) -> tuple:
        """m_i = 6 - n_i (4.1.2); m_0 = 0."""
        return (0,) + tuple(6 - self.dofs[i] for i in self.bodies)

    @property
    def mu(self) -> tuple:
        """mu_i = m_i + sum_{j in S_i} m_j (4.1.2); mu_0 = 0."""
        m, ch = self.m, self.children
        return (0,) + tuple(m[i] + sum(m[j] for j in ch[i]) for i in self.bodies)

    def _walk(self, f):
        out = [None] * (self.N + 1)
        out[0] = 0

        def get(i):
            stack = []
            while out[i] is None:
                stack.append(i)
                i = self.kappa[i]
            for j in reversed(stack):
                out[j] = out[self.kappa[j]] + f(j)
            return out[stack[0]] if stack else out[i]
        for i in self.bodies:
            get(i)
        return out


def tree(parents, dofs=None) -> Tree:
    """Build a `Tree`.

    parents: either kappa_1..kappa_N (length N, 0 = ground), or the full kappa with the ground
      first (length N+1, parents[0] = -1, as `Topology.kappa`), or a `Tree` (returned as is), or
      anything with a `.kappa` attribute (a `Topology`).
    dofs: n_1..n_N (length N), or length N+1 with dofs[0] = 0 when parents has the ground first;
      an int means every joint has that many DOFs.
    """
    if isinstance(parents, Tree):
        if dofs is not None:
            raise ValueError("dofs given together with a Tree")
        return parents
    kappa = tuple(getattr(parents, "kappa", parents))
    if kappa and kappa[0] in (-1, None):
        kappa = (-1,) + tuple(kappa[1:])
    else:
        kappa = (-1,) + kappa
    N = len(kappa) - 1
    if dofs is None:
        raise ValueError("the joint DOFs n_i are needed")
    if isinstance(dofs, int):
        dofs = (dofs,) * N
    dofs = tuple(dofs)
    if len(dofs) == N + 1:
        if dofs[0] not in (0, None):
            raise ValueError(f"dofs has {N + 1} entries for {N} bodies and dofs[0] (the ground) is not 0")
        dofs = dofs[1:]
    if len(dofs) != N:
        raise ValueError(f"{N} bodies but {len(dofs)} joint DOF counts")
    return Tree(kappa=tuple(int(k) for k in kappa), dofs=(0,) + tuple(int(n) for n in dofs))


def chain(N: int, nJ: int) -> Tree:
    """"Chain" (4.1.1): body i on body i-1, body 1 on the ground, n_J DOFs per joint."""
    return tree(range(N), nJ)


def star(N: int, nJ: int) -> Tree:
    """"Star" (4.1.1): body 1 on the ground, bodies 2..N on body 1 (eta_{kappa_i} = eta_1 = n_J)."""
    return tree([0] + [1] * (N - 1), nJ)


def star_of_chains(chains: int, length: int, nJ: int, base_dofs: int | None = None) -> Tree:
    """Base body 1 on the ground (n_1 = base_dofs, default n_J) carrying `chains` chains of
    `length` bodies each (fig. 4.8). star(N) = star_of_chains(N - 1, 1)."""
    parents, dofs = [0], [nJ if base_dofs is None else base_dofs]
    for _ in range(chains):
        prev = 1
        for _ in range(length):
            parents.append(prev)
            dofs.append(nJ)
            prev = len(parents)
    return tree(parents, dofs)


def from_topology(topo, source) -> Tree:
    """Inputs of the formulas from dynamica's `Topology` (regular numbering, body 0 = ground) and
    the joint DOFs, taken from `source`:

      - a `Kinematics` (derive_kinematics): len(kin.joints[i].coordinates);
      - a `ModelSpec` (load_model): the body's joint coordinates (bodies matched by name);
      - a mapping body name -> n_i, or a sequence n_1..n_N in regular numbering.
    """
    N = topo.n_bodies
    joints = getattr(source, "joints", None)
    bodies = getattr(source, "bodies", None)
    if joints is not None:
        dofs = [len(joints[i].coordinates) for i in range(1, N + 1)]
    elif bodies is not None:
        by_name = {b.name: b for b in bodies}
        dofs = [len(by_name[topo.names[i]].coordinates) for i in range(1, N + 1)]
    elif isinstance(source, dict):
        dofs = [source[topo.names[i]] for i in range(1, N + 1)]
    else:
        dofs = list(source)
    return tree(topo.kappa, dofs)


def from_spec(spec) -> Tree:
    """`from_topology(build_topology(spec), spec)`."""
    from dynamica.generator.mechanics.topology import build_topology
    return from_topology(build_topology(spec), spec)


# ---------------------------------------------------------------- the formulas
F = Fraction


@dataclass(frozen=True)
class Coefficients:
    """What the formulas read, per body 1..N (0-based tuples of length N): the formulas are
    functions of these alone, so a table's own assumptions (e.g. "eta_i = 2 n_J for all i")
    can be evaluated too. eta_parent[i] = eta_{kappa_i}, None for a root body (kappa_i = 0)."""

    eta: tuple
    eta_parent: tuple
    tau: tuple
    dofs: tuple
    mu: tuple

    @property
    def N(self) -> int:
        return len(self.eta)

    @property
    def n(self) -> int:
        return sum(self.dofs)

    @property
    def R(self) -> int:
        """Number of root bodies."""
        return sum(1 for e in self.eta_parent if e is None)

    @property
    def m(self) -> tuple:
        return tuple(6 - x for x in self.dofs)

    def replace(self, **kw) -> "Coefficients":
        """A copy with some entries changed: replace(eta={0: 2}) sets eta of body 1 to 2."""
        fields = {k: list(getattr(self, k)) for k in ("eta", "eta_parent", "tau", "dofs", "mu")}
        for k, changes in kw.items():
            for i, v in changes.items():
                fields[k][i] = v
        return Coefficients(**{k: tuple(v) for k, v in fields.items()})


def coefficients(t: Tree) -> Coefficients:
    eta, kap = t.eta, t.kappa
    return Coefficients(eta=eta[1:], eta_parent=tuple(None if kap[i] == 0 else eta[kap[i]] for i in t.bodies),
                        tau=t.tau[1:], dofs=t.dofs[1:], mu=t.mu[1:])


def cube_sq_lin(x, a, b, c):
    """x^3/3 + a x^2 + b x + c with fractions."""
    return F(x ** 3, 3) + a * x * x + b * x + c


def nonroot(c: Coefficients):
    """Indices of the non-root bodies (kappa_i != 0)."""
    return [i for i in range(c.N) if c.eta_parent[i] is not None]


def iterations_of(K, form):
    if K is None:
        raise ValueError(f"form `{form}` ({__getattr__('ACRONYMS')[form]}) needs K, the number of iterations per call")
    if isinstance(K, (int, Fraction)):
        return F(K)
    return F(float(K))


def count_arguments(parents, dofs, form):
    """Accept count(tree, form), count(tree, form=...), count(parents, dofs, form)."""
    if isinstance(parents, (Tree, Coefficients)) and isinstance(dofs, str) and form is None:
        return parents, dofs
    if isinstance(parents, Coefficients):
        if form is None or dofs is not None:
            raise ValueError("count(coefficients, form, K=...)")
        return parents, form
    if form is None:
        raise ValueError("form is required")
    return tree(parents, dofs), form


def count(parents, dofs=None, form=None, K=None) -> Fraction:
    """Exact flop count of `form` (code name or acronym) for the tree; K = iterations (ITR only).
    The first argument may also be a `Tree` or `Coefficients` (then no dofs).

    count(tree, "ltdl"), count(tree, form="ITR-G", K=2), count([0, 1, 1], [3, 1, 1], "composite").
    """
    t, form = count_arguments(parents, dofs, form)
    c = t if isinstance(t, Coefficients) else coefficients(t)
    f = form_name(form)
    formula = _counted()[f]
    return formula.flops(c, iterations_of(K, f)) if formula.iterative else formula.flops(c)


def predict(parents, dofs=None, form=None, K=None) -> float:
    """`count` as a float (flops per right-hand-side evaluation)."""
    return float(count(parents, dofs, form, K))


def count_all(parents, dofs=None, K=None, forms=None) -> dict:
    """{form: exact count} of `forms` (default `FORMS`); the iterative forms are included only when K is given."""
    t = parents if isinstance(parents, Coefficients) and dofs is None else tree(parents, dofs)
    out = {}
    iterative = __getattr__("ITERATIVE")
    for f in __getattr__("FORMS") if forms is None else forms:
        f = form_name(f)
        if f in iterative and K is None:
            continue
        out[f] = count(t, form=f, K=K)
    return out


def predict_all(parents, dofs=None, K=None, forms=None) -> dict:
    """{form: float flops}; the iterative forms are included only when K is given."""
    return {f: float(v) for f, v in count_all(parents, dofs, K, forms).items()}


def best(parents, dofs=None, K=None, forms=None) -> str:
    """The form with the fewest flops (section 4.2, step 4 of the selection algorithm); ties go to
    the earlier form in `forms`. Default candidates (`SELECTION`): CBM, LGR, ITR-G, DEC (section 4.2)."""
    costs = count_all(parents, dofs, K, __getattr__("SELECTION") if forms is None else forms)
    if not costs:
        raise ValueError("no candidate form (the iterative forms need K)")
    return min(costs, key=lambda f: (costs[f], list(costs).index(f)))


#: the iteration count the dissertation assumes when it predicts ITR (tables 5.2, 5.3: K = 2)
DEFAULT_K = 2


def inverts_body_inertias(spec, form="lagrange1") -> bool:
    """LGR applies M_i^-1 of every body (2.24), and so does every form registered with
    `inverts_body_inertias`: false when a body is massless or its inertia singular at the default
    parameters (a negative mass or inertia, a cut-out, is invertible); the check of
    generator/mechanics/body_inertias.py."""
    from dynamica.generator.mechanics.body_inertias import BodyInertiaCheck
    check = BodyInertiaCheck(spec, form)
    defaults = spec.defaults()
    return not check.bad_bodies([defaults[x] for x in check.symbols])


def cheapest_form(spec, K=DEFAULT_K, available=None) -> str:
    """The section 4.2 choice by the formulas, among the candidates that are registered (LGR, and
    any form that inverts the body inertias, only when every body inertia can be inverted)."""
    from dynamica.generator.forms import EQUATION_FORMS, FORM_INFO
    available = set(EQUATION_FORMS if available is None else available)
    for f in sorted(available):
        if f in _counted() and FORM_INFO[f].inverts_body_inertias and not inverts_body_inertias(spec, f):
            available.discard(f)
    from dynamica.generator.mechanics.forces import ARMATURE_FORMS, ARMATURE_TYPES
    if any(f.type in ARMATURE_TYPES for f in spec.forces):      # only these forms take M's armature terms
        available &= set(ARMATURE_FORMS)
    selection, forms = __getattr__("SELECTION"), __getattr__("FORMS")
    cands = [f for f in selection if f in available] or [f for f in forms if f in available]
    return best(from_spec(spec), K=K, forms=cands)


#: the default form (`load` without a form, and no `simulate.form` in the file): composite, unless
#: the formulas predict it at least DEFAULT_SWITCH times the flops of ltdl (section 4.2's DEC, the
#: O(n) sweep without state or inverted body inertias); then ltdl. Chosen from the measured time
#: per RHS call of benchmarks/results/forms.txt (chains and stars of 1-3 DOF joints, N = 5-100):
#: every point with a predicted ratio CBM/DEC of 0.8 or more has composite 1.5x to 25x slower than
#: ltdl (chain N = 20: ratio 1.14, 4.18 vs 1.96 us; chain N = 40: 2.07, 12.2 vs 3.93 us); below 0.8
#: the two are within 0.8-1.2x of each other (chain N = 10: 0.78, 0.945 vs 0.873 us; N = 5: 0.63,
#: 0.24 vs 0.30 us) but for large stars (ratio 0.52-0.65: up to 1.6x), which keep composite. The
#: bundled models with 5 or more coordinates all have ratios below 0.8 (at most 0.75,
#: spherical_chain) and keep composite.
DEFAULT_SWITCH = 0.8
#: ... for models of at least this many coordinates, the smallest measured there (a model of one
#: coordinate, e.g. models/hydraulic_drive.yaml, has a ratio of 0.9 out of that range: composite)
DEFAULT_MIN_COORDINATES = 5


def default_form(spec, mode: str = "symbolic") -> str:
    """The form `load` takes when none is asked for (DEFAULT_SWITCH); numeric mode keeps composite
    (its recursions are compiled loops, which the flop formulas and that measurement do not cover)."""
    if mode != "symbolic" or len(spec.coordinates) < DEFAULT_MIN_COORDINATES:
        return "composite"
    costs = count_all(from_spec(spec), None, None, ("composite", "ltdl"))
    return "ltdl" if costs["composite"] >= DEFAULT_SWITCH * costs["ltdl"] else "composite"

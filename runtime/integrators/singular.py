"""Passing the singular configurations of closed loops with the implicit integrators (`radau`,
`ida`): the step across (docs/loops.md, "The implicit route: stepping across").

Where the loops' Jacobian J loses rank for an instant (the N four-bar with all rods horizontal, a
change-point four-bar folding flat) the branches of motion cross, and the equations off the
constraint manifold are ill-conditioned within a window around the crossing whose size grows as
the integrator's defects shrink: an implicit method's Newton iteration on its stages then either
turns onto the crossed branch or gives up (scipy's Radau at rtol 1e-12 and IDA at every rtol
stopped at the first passage of the N four-bar). Here the integrator is stopped before it enters
that window and the crossing is stepped over:

1. after each step the measure s = sigma_r(J) / sigma_1(J) is taken on J with its rows scaled by
   their lengths at the start (radau and ida started next to a crossing: their median lengths nearby,
   DEGENERATE_ROW; r the rank at the start, so that redundant rows do not count), and
   near a crossing the time to it, delta = s / |ds/dt| (ds/dt by a difference along q');
2. within APPROACH gaps the steps are cut so as to end just outside the gap (`max_step`), and
   leaving a crossing they grow with the distance from it;
3. once s < gap heading in (or the integrator crawls nearby, CRAWL), q'' at up to PAST past states
   (radau: RADAU_PAST) spaced about delta apart (`spread`, from a history thinned by `remember`), each projected onto
   the constraints and solved in full (`Crossings.qdd`), gives a polynomial q''(t), integrated twice
   from the last state to t_b = t + 2 delta, symmetric about the crossing; that state is projected
   onto the constraints: the branch nearest it, i.e. the one the motion continues on (the crossed
   branch is at an angle, about 2 delta w away);
4. the integrator starts anew at t_b; output rows inside the jump come from the same polynomial,
   projected.

A model whose J keeps its rank along the run is integrated as before (s stays above the gap).
radau runs on the module's right-hand side and projection without the weak rows' treatment where
s >= STRICT_FROM (`strict_functions`), and leaving a crossing once it crawls on it (LEAVE_CRAWL).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.polynomial.polynomial as npp

#: s = sigma_r(J) / sigma_1(J) below which radau steps across (ida: its own, ida.py). Measured on the
#: N four-bar (N = 1, radau, one passage): after it B0 within 2.5e-9 / 1.7e-11 / 2.0e-13 m at rtol
#: 1e-8 / 1e-10 / 1e-12 with 1e-3 (the same as before it), 8.7e-13 at rtol 1e-12 with 3e-3, 8.5e-10 with
#: 1e-2; nearer the crossing the accelerations themselves lose accuracy (docs/loops.md)
SINGULAR_GAP = 1e-3
#: within APPROACH gaps of the crossing the steps are limited so as to end just outside the gap
APPROACH = 10.0
#: leaving a crossing (s < APPROACH gap) a step is at most DEPART times the time in which s doubles
DEPART = 0.5
#: heading into a crossing with s < CRAWL_S, a step shorter than CRAWL delta (the integrator
#: struggles with the equations there: scipy's Radau on a change-point four-bar took steps of 1.2e-6 s
#: at s = 8.7e-3, delta = 2e-3, 50 000 of them) starts the step across from where it is
CRAWL, CRAWL_S = 1e-2, 1e-2
#: the accelerations at the last PAST accepted states give the polynomial of the step across
PAST = 5
#: ... for radau: RADAU_PAST of them. Five (a quartic q'', extrapolated 2 delta past points about delta
#: apart) leave a truncation error that grows like delta^6: fed exact states of the N four-bar (N = 2),
#: the landing velocity was off by 7.4e-13 / 8.4e-12 / 4.6e-11 rad/s at delta = 1 / 1.5 / 2 ms, with
#: seven 1e-14 / 4e-15 / 1e-15 and nine 2.5e-14 / 3.7e-14 / 3.2e-14 (rounding). In radau's runs at
#: rtol 1e-12 that error was the energy lost at the passages (up to 4e-12 relative at one, none between
#: them), which then grew as a drift of phase: over 20 s B0 off by 2.2e-10 m (N = 1) and 2.1e-9 m
#: (N = 2) with five, 1.7e-11 and 5.4e-11 with seven, 9.2e-12 and 1.5e-11 with nine (the reduced
#: equation's own 3.4e-11 and 1.9e-11; docs/loops.md, "The implicit route")
RADAU_PAST = 9
#: ... spaced at least SPACING times the step across apart (`spread`)
SPACING = 0.5
#: radau's right-hand side and projection leave out the weak rows' treatment (`strict_functions`) while
#: s >= STRICT_FROM. Measured on the change-point four-bar (2.5 s, rtol 1e-8 / 1e-10: RHS calls) and the
#: N four-bar (N = 1, 8 s, rtol 1e-12: B0's error): with the treatment everywhere 601 858 / not finished
#: in 250 s, 2.7e-12 m; without it everywhere 3143 / 8932, but 4.4e-11 m (radau's stages off the
#: constraints near the gap, ill-conditioned there); without it from s = 1e-2 6867 / not finished in
#: 300 s, 2.0e-12 m; from 3e-3 93 770 at 1e-10, 3.3e-12 m; from 1.5e-3 127 120, 1.8e-11 m
STRICT_FROM = 3.0 * SINGULAR_GAP
#: ... and leaving a crossing once a step on the treatment shrank below LEAVE_CRAWL |delta| (radau crawls:
#: it then stays strict until s >= STRICT_FROM). Measured leaving a crossing on the treatment: the
#: change-point four-bar (rtol 1e-10) shrank its steps to 1.3e-9 |delta|, 6907 steps and 112 897 RHS
#: calls; the N four-bar (N = 1, 2, 20 s, rtol 1e-8 ... 1e-12) never below 1.8e-5 |delta|, and strict
#: there it lost accuracy (B0 1.5e-10 m against 4.5e-11 over 20 s at rtol 1e-12, N = 1)
LEAVE_CRAWL = 1e-6
#: ... or once more than LEAVE_STEPS steps were taken on it leaving one: the isosceles slider-crank
#: (L = 0.05 m, from 1e-4 and 1e-6 rad of its dead centre, rtol 1e-10) crawled there at 1.3e-6 ... 1e-5
#: |delta|, 849 to 8118 steps (309 126 RHS calls in 0.3 s against 11 102 from 0.3 rad); the N four-bar
#: (N = 1, 2, rtol 1e-8 ... 1e-12) and the slider-crank otherwise leave in at most 18 steps (35 with s in
#: consistent units, from 0.3 rad at rtol 1e-12); 100 let the crawl from 1e-4 rad at rtol 1e-12 cost
#: accuracy (3.0e-11 rad against 8.2e-13 with 50)
LEAVE_STEPS = 50
#: the guard of a step across: a projection of its landing that moves the extrapolated positions by
#: more than LANDING times the jump (max |w (q_onto - q_poly)| over max |w q'| (t_b - t_2), w the
#: columns' units) or the velocities by more than LANDING max |w q'| is reported (SingularPassageWarning):
#: the crossed branch lies at an angle, a sizeable part of the jump away. Measured on the branch (radau,
#: ida, adams; rtol 1e-8 ... 1e-12): at most 1.7e-7 (isosceles slider-crank, L = 0.05 ... 500 m), 1.6e-8
#: (N four-bar, N = 1, 2), 1.3e-8 (change-point four-bar); off it (s in mixed units, the slider-crank at
#: L = 500 m) 5.7e-2 ... 3.9e3
LANDING = 1e-2
#: a row of J shorter than this at the start and nearby (relative to the longest) is left out (structurally zero)
_ZERO_ROW = 1e-14
#: a row of J is scaled by its length at the start, but at least ROW_FLOOR times its median length at
#: NEARBY configurations (every coordinate moved by up to NEARBY_SPAN from the start, a fixed draw):
#: a run started 1e-4 rad from the N four-bar's horizontal has the closure's x row 1e-4 long there,
#: and scaled by that the crossing vanished from s (6e-3 at 1.2e-6 rad) and fake ones appeared
#: beyond it (the x row ten times the y row 1e-3 rad past it): three steps across onto the wrong branch
ROW_FLOOR, NEARBY, NEARBY_SPAN = 0.1, 8, 0.3
#: radau and ida (`nearby`) scale every row by its median length nearby instead when one at the start is
#: shorter than DEGENERATE_ROW times that (a start next to a singular configuration). Measured on the N
#: four-bar (N = 2) started phi rad from the horizontal: the shortest row over its median 0.99 / 0.55 /
#: 0.28 / 0.07 / 0.036 at phi = pi/2 / 0.3 / 0.1 / 0.02 / 0.01, and s with the start's scales at most
#: 0.07 / 0.1 / 3.3e-2 / 8.2e-3 / 8.1e-3 between -0.35 and -2.8 rad (no crossing there): below CRAWL_S,
#: where radau and ida stepped across a crossing that was not there, 9.7 rad off after 3 s, no warning
DEGENERATE_ROW = 0.5
#: a start is a singular configuration when J's rank there is below its rank at a state projected onto
#: the constraints from one START_STEP away (every coordinate moved by up to it); measured on the N
#: four-bar started within 1e-6 rad of the horizontal: adams at rtol 1e-10 ended 0.95 rad off the
#: parallelogram branch (N = 1), at 1e-12 "step size too small"; exactly there (rank 1 of 2) 2.97 rad
#: off at 1e-12, and within 1e-4 rad (s = 2e-3) on the branch. adams, radau and ida leave such a start by
#: the start across (singular_start.py, with the rank nearby)
START_STEP = 1e-3


def column_weights(model, assembly, Js) -> np.ndarray:
    """w: 1 for a coordinate that is an angle (or not a joint's), 1 / ell for a length (prismatic,
    screw), ell the loops' lever arm: the longest column of the 'point' rows of J (m/rad) over the
    angles, the median over `Js` (J at configurations near the start). Without lengths and angles
    both in loops w = 1. Measured on the isosceles slider-crank (tests/data/isosceles.yaml) at L =
    500 m: with J in its own units (w = 1) the x row, 1 m/m against 1e3 m/rad, was scaled by its
    length at the start (1.5e2) and fell to 7e-3 of it where the crank passes theta = 0: s = 6.5e-3
    there, no crossing, and radau stepped across it (0.1 s, the crank 14.5 rad off at rtol 1e-8)."""
    length, rows = weighted_lengths(model, assembly), _point_rows(model, assembly)
    w = np.ones(model.n)
    if not length.any():
        return w
    ell = float(np.median([np.linalg.norm(J[rows], axis=0) for J in Js], axis=0)[~length].max())
    w[length] = 1.0 / ell if ell > 0.0 else 1.0
    return w


def weighted_lengths(model, assembly) -> np.ndarray:
    """The coordinates `column_weights` weighs (a mask): the lengths (prismatic, screw) of a model whose
    loops have angles too and point rows; none otherwise (w = 1 throughout)."""
    kinds = {tr.q: tr.kind for b in model.spec.bodies for tr in b.joint if tr.q is not None}
    length = np.array([kinds.get(c) in ("translate", "screw") for c in model.coordinates], dtype=bool)
    if not length.any() or length.all() or not _point_rows(model, assembly).any():
        return np.zeros(model.n, dtype=bool)
    return length


def _point_rows(model, assembly) -> np.ndarray:
    """Which rows of J are a point's (m, m/rad), not an orientation's."""
    return np.array([what.startswith("point") for _, what in assembly.layout(model)], dtype=bool)


def nearby_jacobians(model, params, t0, q0) -> list:
    """J at the NEARBY configurations around q0 (every coordinate moved by up to NEARBY_SPAN, a fixed draw)."""
    from dynamica.runtime import assembly
    draw = np.random.default_rng(0).uniform(-NEARBY_SPAN, NEARBY_SPAN, (NEARBY, model.n))
    return [assembly.jacobian(model, q0 + dq, t0, params)[0] for dq in draw]


class Crossings:
    """The singular measure of a model's loops and the step across (module docstring)."""

    def __init__(self, model, params, t0, q0, gap=SINGULAR_GAP, warn=True, nearby=False, units=True):
        from dynamica.runtime import assembly
        from dynamica.runtime.assembly import PROJECT_ITERATIONS, PROJECT_TOL
        self.model, self.params, self.assembly, self.gap = model, params, assembly, float(gap)
        self.n = model.n
        self.p = model.param_vector(params)
        self.opts = np.array([PROJECT_TOL, PROJECT_ITERATIONS], dtype=float)
        #: J's columns over w (`column_weights`: a length over the loops' lever arm) with `units`; adams
        #: keeps w = 1 here (its watch is compiled; its gap has the units, adams_across.gap_units)
        self.w = column_weights(model, assembly, self.nearby_jacobians(t0, q0)) if units else np.ones(self.n)
        self.lengths = weighted_lengths(model, assembly) if units else np.zeros(self.n, dtype=bool)   # (w's lengths)
        J = self._jacobian(q0, t0)
        lengths, median = np.linalg.norm(J, axis=1), self._nearby_lengths(t0, q0)
        norms = np.maximum(lengths, ROW_FLOOR * median)
        self.keep = norms > _ZERO_ROW * max(float(norms.max(initial=0.0)), 1e-300)
        if nearby and np.any(lengths[self.keep] < DEGENERATE_ROW * median[self.keep]):
            norms = median                              # (a start next to a singular configuration)
        self.scale = 1.0 / norms[self.keep]
        sv = self._singular_values(q0, t0)
        self.rank = int(np.sum(sv > 1e-8 * sv[0])) if len(sv) else 0
        #: (where, rank nearby) when the run starts at a singular configuration or within the gap of one
        self.start = self._start_gap(t0, q0, sv)
        if warn:
            self.warn_at_start(t0, q0)
        self.passages = []                      # (t_2, t_b, s at t_2) of each step across
        self.landings = []                      # the guard's measure of each (check_landing)

    def _start_gap(self, t0, q0, sv):
        """(where, rank_near) when q0 is a singular configuration (J's rank there below rank_near, its
        rank at a state projected onto the constraints from START_STEP away) or within the gap of one;
        None otherwise. (That state's projection fails at times near a crossing: the N four-bar, N = 2,
        1e-4 rad from the horizontal, s = 1.5e-4; before, that start counted as a regular one and radau
        and ida left it by their own step across from two points.)"""
        if not len(sv):
            return None
        rank_near = self.rank           # (no state nearby projects: the gap alone decides, blind to a start
        for step in (START_STEP, 0.1 * START_STEP):     # exactly at one, whose J has its own rank there)
            y = np.concatenate([q0 + np.random.default_rng(1).uniform(-step, step, self.n), np.zeros(self.n)])
            if self.model.module.project(float(t0), y, self.p, self.opts) == 0:
                near = self._singular_values(y[:self.n], t0)
                rank_near = int(np.sum(near > 1e-8 * near[0])) if np.all(np.isfinite(near)) else self.rank
                break
        s = float(sv[self.rank - 1] / sv[0]) if self.rank else 1.0
        if rank_near <= self.rank and s >= self.gap:
            return None
        where = "at" if rank_near > self.rank else f"within the gap (sigma_r / sigma_1 = {s:.1e} < {self.gap:g}) of"
        return where, max(rank_near, self.rank)

    def warn_at_start(self, t0, q0, why=""):
        """SingularStartWarning when the run starts at or within the gap of a singular configuration
        (`start`), naming the loops; `why`: what left the branch unresolved."""
        if self.start is None:
            return
        import warnings

        from dynamica.errors import SingularStartWarning, user_stacklevel
        where, rank_near = self.start
        warnings.warn(f"{self.model.spec.file}: the run starts {where} a singular configuration of the closed "
                      f"loops {', '.join(self._weak_loops(t0, q0, rank_near))}, where which branch "
                      f"the motion continues on is not resolved{why}: check the result, or start further from it",
                      SingularStartWarning, stacklevel=user_stacklevel())

    def _weak_loops(self, t0, q0, r):
        """The loops whose equations carry J's r-th left singular vector at q0 (its weakest direction)."""
        J = self._jacobian(q0, t0)
        U = np.linalg.svd(J[self.keep] * self.scale[:, None])[0]
        u = np.abs(U[:, min(r, U.shape[1]) - 1])
        rows = np.nonzero(self.keep)[0][u > 0.3 * u.max()]
        names = [self.assembly.layout(self.model)[a][0] for a in rows]
        return [repr(name) for name in dict.fromkeys(names)]

    def scale_nearby(self, t0, q0):
        """Scale J's rows by their median lengths at the NEARBY configurations around q0 alone (a start
        inside the gap, where some are near zero: singular_start.resolve)."""
        self.scale = 1.0 / self._nearby_lengths(t0, q0)[self.keep]

    def nearby_jacobians(self, t0, q0) -> list:
        """J at the NEARBY configurations around q0 (every coordinate moved by up to NEARBY_SPAN, a
        fixed draw): what the rows' typical lengths are taken from (ROW_FLOOR; adams_across.gap_units)."""
        return nearby_jacobians(self.model, self.params, t0, q0)

    def _nearby_lengths(self, t0, q0) -> np.ndarray:
        """The median length of each row of J at NEARBY configurations around q0 (ROW_FLOOR)."""
        return np.median([np.linalg.norm(J / self.w, axis=1) for J in self.nearby_jacobians(t0, q0)], axis=0)

    def _jacobian(self, q, t):
        """J with its columns over w: every column in the units of an angle's (m/rad for point rows)."""
        return self.assembly.jacobian(self.model, q, t, self.params)[0] / self.w

    def _singular_values(self, q, t):
        if not self.keep.any():
            return np.zeros(0)
        J = self._jacobian(q, t)
        return np.linalg.svd(J[self.keep] * self.scale[:, None], compute_uv=False)

    def measure(self, t, q) -> float:
        """s = sigma_r / sigma_1 of the unit-row J at q (1 without loops' rank)."""
        if self.rank == 0:
            return 1.0
        sv = self._singular_values(q, t)
        return float(sv[self.rank - 1] / sv[0]) if len(sv) >= self.rank else 0.0

    def approaching(self, t, y, within=None):
        """(s, delta): the measure at the state and the time to the estimated crossing (inf if the
        state is not heading into one, or s is at least `within`, default APPROACH gaps; negative
        when leaving one)."""
        if self.rank == 0:
            return 1.0, math.inf
        q, v = y[:self.n], y[self.n:2 * self.n]
        s = self.measure(t, q)
        speed = float(np.abs(self.w * v).max())
        if s >= (APPROACH * self.gap if within is None else within) or speed == 0.0:
            return s, math.inf
        eps = 1e-7 / speed
        rate = (self.measure(t + eps, q + eps * v) - s) / eps
        return s, (s / -rate if rate != 0.0 else math.inf)

    def crossing(self, s, delta, step):
        """Whether to step across now: within the gap and heading in, or crawling (CRAWL) nearby."""
        if not 0.0 < delta < math.inf:
            return False
        return s < self.gap or (s < CRAWL_S and step < CRAWL * delta)

    def max_step(self, s, delta):
        """The longest next step near a crossing (s < APPROACH gap; delta < 0: leaving it). Heading
        in, one that ends at about s = 0.75 gap, so that the step across starts from a state outside
        the window where the equations are ill-conditioned (a step that ends deep inside it carries
        their error); leaving, DEPART times the time in which s doubles."""
        if not math.isfinite(delta) or s >= APPROACH * self.gap:
            return math.inf
        if delta < 0.0:
            return -DEPART * delta
        return max(delta * (1.0 - 0.75 * self.gap / s), 1e-3 * delta)

    def onto(self, t, y):
        """A copy of the state [q, q'] projected onto the constraints: positions by the module's
        projection, then the velocities onto J q' + phi_t = 0 with every row, the M-weighted
        minimum-norm correction (near a crossing the module's velocity projection leaves the weak
        rows alone, and q'' read at such a state is off by the defect times 1/d^2: measured 0.3 m/s^2
        at a defect of 1e-10 and d = 7e-4 rad on the N four-bar)."""
        import scipy.linalg as sl
        n, model, params = self.n, self.model, self.params
        y = np.ascontiguousarray(np.array(y[:2 * n], dtype=float))
        model.module.project(float(t), y, self.p, self.opts)
        q, v = y[:n], y[n:]
        J, phit = self.assembly.jacobian(model, q, t, params)
        L = sl.cholesky(model.mass_matrix(q, t, params), lower=True)
        A = sl.solve_triangular(L, J.T, lower=True).T                       # J L^-T
        x = np.linalg.lstsq(A, J @ v + phit, rcond=1e-12)[0]
        y[n:] = v - sl.solve_triangular(L.T, x, lower=False)
        return y

    def qdd(self, t, q, v):
        """q'' of the constrained equations solved in full (every row of J kept to its rank), in
        numpy: M q'' - Q + J^T lambda = 0, J q'' = gamma, the M-weighted minimum-norm solution. Near a
        crossing the module's solve scales the weak rows' gamma by the state's defects (docs/loops.md),
        which even at rounding-level defects moves q'' (measured on the N four-bar, a state projected
        after a defect of 1e-13: 3.7e-7 at 2.6e-3 rad from the crossing, 1.4e-5 at 1e-3)."""
        import scipy.linalg as sl
        model, params = self.model, self.params
        J, _ = self.assembly.jacobian(model, q, t, params)
        gamma = np.empty(J.shape[0])
        model.module.con_bias(float(t), np.ascontiguousarray(q, dtype=float), np.ascontiguousarray(v, dtype=float),
                              self.p, gamma)
        Q = -model.inverse_dynamics(q, v, np.zeros(self.n), t, params)
        L = sl.cholesky(model.mass_matrix(q, t, params), lower=True)
        A = sl.solve_triangular(L, J.T, lower=True).T                       # J L^-T
        z = sl.solve_triangular(L, Q, lower=True)
        z = z + np.linalg.lstsq(A, gamma - A @ z, rcond=1e-12)[0]
        return sl.solve_triangular(L.T, z, lower=False)

    def across(self, past, t_b, points=PAST):
        """The step across from the last of `past` (the integrator's last accepted states (t, y), in
        order; module docstring) to t_b: a function of t giving the projected [q, q'] there. The
        polynomial goes through the accelerations at up to `points` of them (PAST; RADAU_PAST for radau)."""
        n = self.n
        pts = [(float(t), self.onto(t, y)) for t, y in spread(past, t_b, points)]
        t2, y2 = pts[-1]
        acc = np.array([self.qdd(t, y[:n], y[n:]) for t, y in pts])
        scale = max(t_b - t2, 1e-300)
        x = np.array([t for t, _ in pts]) - t2
        P = npp.polyfit(x / scale, acc, len(pts) - 1)               # q'' through the past points
        V = npp.polyint(P) * scale                                   # its integrals from t2, in x
        Q = npp.polyint(V) * scale
        self.passages.append((t2, float(t_b), self.measure(t2, y2[:n]), x))

        def extrapolated(t):
            xi = (t - t2) / scale
            return np.concatenate([y2[:n] + (t - t2) * y2[n:] + npp.polyval(xi, Q), y2[n:] + npp.polyval(xi, V)])
        self.check_landing(t2, float(t_b), y2, extrapolated(t_b))
        return lambda t: self.onto(t, extrapolated(t))

    def check_landing(self, t2, t_b, y2, y_poly):
        """The guard of a step across (LANDING): how far the projection onto the constraints moved the
        extrapolated landing y_poly, over the jump from y2; recorded in `landings`, and a
        SingularPassageWarning naming the loops and t when beyond LANDING (another branch)."""
        n = self.n
        speed = float(np.abs(self.w * y2[n:2 * n]).max(initial=0.0))
        moved = np.abs(np.tile(self.w, 2) * (self.onto(t_b, y_poly) - y_poly[:2 * n]))
        jump = abs(t_b - t2)
        off = max(float(moved[:n].max()) / jump, float(moved[n:].max())) / speed if speed > 0.0 and jump > 0.0 else 0.0
        self.landings.append(off)
        if off > LANDING:
            import warnings

            from dynamica.errors import SingularPassageWarning, user_stacklevel
            warnings.warn(f"{self.model.spec.file}: the step across the singular configuration of the closed loops "
                          f"{', '.join(self._weak_loops(t2, y2[:n], self.rank))} from t = {t2:.9g} to {t_b:.9g} "
                          f"landed {off:.1e} of its jump off the state it extrapolated: the motion may have turned "
                          "onto another branch there; check the result (a tighter tolerance, or output_step)",
                          SingularPassageWarning, stacklevel=user_stacklevel())


def strict_functions(model, params):
    """(f, project) for radau without the weak rows' treatment: the module's `rhs_strict_capsule` as
    scipy's f(t, y), and `project_strict_capsule` with the signature of the module's `project`
    (t, y, p, opts; opts[0] the tolerance); None for a model they do not cover (extra states, inputs).
    The treatment (docs/loops.md, "Singular configurations") let an integrator pass through a
    crossing; with the step across it is not needed, and on the change-point four-bar, whose normals
    turn, it made radau's steps fall to 1e-6 s before the gap: 601 858 RHS calls in 2.5 s at rtol 1e-8
    (163 s), against 3143 (2.5 s) without it, the crank within 1.4e-9 rad of its branch either way."""
    import ctypes
    mod = model.module
    if model.state_size != 2 * model.n or model.spec.inputs or not hasattr(mod, "rhs_strict_capsule"):
        return None
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    dp = ctypes.POINTER(ctypes.c_double)
    rhs = ctypes.CFUNCTYPE(None, ctypes.c_double, dp, dp, dp)(get(mod.rhs_strict_capsule, b"dynamica.rhs"))
    proj = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_double, dp, dp, ctypes.c_double)(
        get(mod.project_strict_capsule, b"dynamica.project"))
    p = np.ascontiguousarray(model.param_vector(params), dtype=float)
    pp, n2 = p.ctypes.data_as(dp), 2 * model.n

    def f(t, y):
        y = np.ascontiguousarray(y, dtype=float)
        out = np.empty(n2)
        rhs(float(t), y.ctypes.data_as(dp), pp, out.ctypes.data_as(dp))
        return out

    def project(t, y, p_, opts):                # (y in place, contiguous float64: the module's `project`)
        return proj(float(t), y.ctypes.data_as(dp), pp, float(opts[0]))
    f.keep = project.keep = (p, rhs, proj)      # (the buffers and function pointers live with them)
    return f, project


def remember(past, t, y):
    """Append the accepted state (t, y) to the list `past`, thinned so that its points lie about
    geometrically back in time (a point goes when its neighbours are closer together than a quarter
    of their distance from t): the polynomial of the step across then finds points SPACING apart even
    after thousands of short steps."""
    past.append((float(t), np.array(y, dtype=float)))
    i = len(past) - 3
    while i >= 1:
        if past[i + 1][0] - past[i - 1][0] < 0.25 * (t - past[i + 1][0]):
            del past[i]
        i -= 1


def spread(past, t_b, points=PAST):
    """The points of `past` for the polynomial: the last one, then going back each at least
    SPACING (t_b - t2) before the one kept after it, at most `points` (points a few microseconds apart,
    where the integrator struggled, made the fit extrapolate their noise: measured 3.5e-7 m lost
    in one passage of the N four-bar, N = 2, rtol 1e-12)."""
    past = list(past)
    kept = [past[-1]]
    gap = SPACING * (t_b - float(past[-1][0]))
    for t, y in reversed(past[:-1]):
        if len(kept) == points:
            break
        if float(kept[-1][0]) - float(t) >= gap:
            kept.append((t, y))
    return kept[::-1]


def step_across(crossings, past, delta, t_end, points=PAST):
    """(t_b, state) of the step across from the last of `past` (module docstring): t_b = t2 + 2 delta
    (at most t_end), the polynomial through up to `points` past states."""
    if not (math.isfinite(delta) and delta > 0.0) or len(past) < 2:
        return None
    t_b = min(float(past[-1][0]) + 2.0 * delta, t_end)
    if t_b <= past[-1][0]:                      # no jump left (t_end reached): no polynomial over a zero span
        return None
    return t_b, crossings.across(past, t_b, points)

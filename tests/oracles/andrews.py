"""Andrews' squeezing mechanism as published: Hairer and Wanner, Solving Ordinary Differential
Equations II, section VII.7 (equations (7.4)-(7.7)), problem "andrews" of the Test Set for IVP
Solvers (Mazzia and Magherini, University of Bari), problem A03 of the IFToMM library of
computational benchmark problems. The seven coordinates in the published order

    q = (beta, Theta, gamma, Phi, delta, Omega, epsilon),

the mass matrix M(q), the forces f(q, q') (the motor torque, the spring on body 3, and the
velocity terms of M), the six loop equations g(q) = 0 and their Jacobian G = dg/dq written out
as published, independently of the model file tests/data/andrews.yaml (a tree of bodies and
cut joints from which dynamica derives its own equations). The index-1 form

    M q'' + G^T lambda = f,   G q'' = -(d/dt G) q'

is integrated here with scipy's DOP853. REFERENCE is the published solution at t = 0.03 (PSIDE at
rtol = atol = 1e-14; the test set's values, 16 digits).
"""

from __future__ import annotations

import math

import numpy as np

P = dict(m1=.04325, m2=.00365, m3=.02373, m4=.00706, m5=.07050, m6=.00706, m7=.05498,
         xa=-.06934, ya=-.00227, xb=-.03635, yb=.03273, xc=.014, yc=.072, c0=4530.0,
         i1=2.194e-6, i2=4.410e-7, i3=5.255e-6, i4=5.667e-7, i5=1.169e-5, i6=5.667e-7, i7=1.912e-5,
         d=28e-3, da=115e-4, e=2e-2, ea=1421e-5, rr=7e-3, ra=92e-5, l0=7785e-5, ss=35e-3, sa=1874e-5,
         sb=1043e-5, sc=18e-3, sd=2e-2, ta=2308e-5, tb=916e-5, u=4e-2, ua=1228e-5, ub=449e-5,
         zf=2e-2, zt=4e-2, fa=1421e-5, mom=33e-3)

#: the published order of the coordinates (the names of tests/data/andrews.yaml)
NAMES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")

#: the published initial values (at rest)
Q0 = np.array([-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
               0.222668390165885884674473185609, 0.487364979543842550225598953530,
               -0.222668390165885884674473185609, 1.23054744454982119249735015568])

T_END = 0.03

#: the published reference solution q(0.03) and q'(0.03)
REFERENCE = np.array([0.1581077119629904e+2, -0.1575637105984298e+2, 0.4082224013073101e-1,
                      -0.5347301163226948e+0, 0.5244099658805304e+0, 0.5347301163226948e+0,
                      0.1048080741042263e+1])
REFERENCE_RATES = np.array([0.1139920302151208e+4, -0.1424379294994111e+4, 0.1103291221937134e+2,
                            0.1929337464421385e+2, 0.5735699284790808e+0, -0.1929337464421385e+2,
                            0.3231791658026955e+0])


def scd(q) -> float:
    """The test set's number of significant correct digits: -log10 of the largest relative
    error of the seven coordinates."""
    return float(-np.log10(np.max(np.abs(np.asarray(q) - REFERENCE) / np.abs(REFERENCE))))


def mass_matrix(q) -> np.ndarray:
    p = P
    _, th, _, ph, _, om, _ = q
    a4, a6 = p["e"] - p["ea"], p["zf"] - p["fa"]
    M = np.zeros((7, 7))
    M[0, 0] = p["m1"] * p["ra"] ** 2 + p["m2"] * (p["rr"] ** 2 - 2 * p["da"] * p["rr"] * math.cos(th)
                                                 + p["da"] ** 2) + p["i1"] + p["i2"]
    M[1, 0] = M[0, 1] = p["m2"] * (p["da"] ** 2 - p["da"] * p["rr"] * math.cos(th)) + p["i2"]
    M[1, 1] = p["m2"] * p["da"] ** 2 + p["i2"]
    M[2, 2] = p["m3"] * (p["sa"] ** 2 + p["sb"] ** 2) + p["i3"]
    M[3, 3] = p["m4"] * a4 ** 2 + p["i4"]
    M[4, 3] = M[3, 4] = p["m4"] * (a4 ** 2 + p["zt"] * a4 * math.sin(ph)) + p["i4"]
    M[4, 4] = (p["m4"] * (p["zt"] ** 2 + 2 * p["zt"] * a4 * math.sin(ph) + a4 ** 2)
               + p["m5"] * (p["ta"] ** 2 + p["tb"] ** 2) + p["i4"] + p["i5"])
    M[5, 5] = p["m6"] * a6 ** 2 + p["i6"]
    M[6, 5] = M[5, 6] = p["m6"] * (a6 ** 2 - p["u"] * a6 * math.sin(om)) + p["i6"]
    M[6, 6] = (p["m6"] * (a6 ** 2 - 2 * p["u"] * a6 * math.sin(om) + p["u"] ** 2)
               + p["m7"] * (p["ua"] ** 2 + p["ub"] ** 2) + p["i6"] + p["i7"])
    return M


def forces(q, v) -> np.ndarray:
    p = P
    _, th, ga, ph, _, om, _ = q
    bp, tp, _, pp, dp, op, ep = v
    a4, a6 = p["e"] - p["ea"], p["zf"] - p["fa"]
    xd = p["sd"] * math.cos(ga) + p["sc"] * math.sin(ga) + p["xb"]
    yd = p["sd"] * math.sin(ga) - p["sc"] * math.cos(ga) + p["yb"]
    length = math.hypot(xd - p["xc"], yd - p["yc"])
    tension = -p["c0"] * (length - p["l0"]) / length
    fx, fy = tension * (xd - p["xc"]), tension * (yd - p["yc"])
    return np.array([
        p["mom"] - p["m2"] * p["da"] * p["rr"] * tp * (tp + 2 * bp) * math.sin(th),
        p["m2"] * p["da"] * p["rr"] * bp ** 2 * math.sin(th),
        fx * (p["sc"] * math.cos(ga) - p["sd"] * math.sin(ga))
        + fy * (p["sd"] * math.cos(ga) + p["sc"] * math.sin(ga)),
        p["m4"] * p["zt"] * a4 * dp ** 2 * math.cos(ph),
        -p["m4"] * p["zt"] * a4 * pp * (pp + 2 * dp) * math.cos(ph),
        -p["m6"] * p["u"] * a6 * ep ** 2 * math.cos(om),
        p["m6"] * p["u"] * a6 * op * (op + 2 * ep) * math.cos(om),
    ])


def spring_energy(q) -> float:
    """c0 (L - l0)^2 / 2 of the spring from D on body 3 to C."""
    p = P
    ga = q[2]
    xd = p["sd"] * math.cos(ga) + p["sc"] * math.sin(ga) + p["xb"]
    yd = p["sd"] * math.sin(ga) - p["sc"] * math.cos(ga) + p["yb"]
    return 0.5 * p["c0"] * (math.hypot(xd - p["xc"], yd - p["yc"]) - p["l0"]) ** 2


def _points(q):
    """E reached along the four branches: through bodies 1-2 (from O), body 3 (from B), bodies
    5-4 (from A) and bodies 7-6 (from A); g = the first minus each of the others."""
    p = P
    be, th, ga, ph, de, om, ep = q
    e12 = np.array([p["rr"] * math.cos(be) - p["d"] * math.cos(be + th),
                    p["rr"] * math.sin(be) - p["d"] * math.sin(be + th)])
    e3 = np.array([p["xb"] + p["ss"] * math.sin(ga), p["yb"] - p["ss"] * math.cos(ga)])
    e54 = np.array([p["xa"] + p["e"] * math.sin(ph + de) + p["zt"] * math.cos(de),
                    p["ya"] - p["e"] * math.cos(ph + de) + p["zt"] * math.sin(de)])
    e76 = np.array([p["xa"] + p["zf"] * math.cos(om + ep) + p["u"] * math.sin(ep),
                    p["ya"] + p["zf"] * math.sin(om + ep) - p["u"] * math.cos(ep)])
    return e12, e3, e54, e76


def constraints(q) -> np.ndarray:
    e12, e3, e54, e76 = _points(q)
    return np.concatenate([e12 - e3, e12 - e54, e12 - e76])


def jacobian(q) -> np.ndarray:
    p = P
    be, th, ga, ph, de, om, ep = q
    G = np.zeros((6, 7))
    for r in (0, 2, 4):             # the x rows: d/dq of x(E) through bodies 1-2
        G[r, 0] = -p["rr"] * math.sin(be) + p["d"] * math.sin(be + th)
        G[r, 1] = p["d"] * math.sin(be + th)
        G[r + 1, 0] = p["rr"] * math.cos(be) - p["d"] * math.cos(be + th)
        G[r + 1, 1] = -p["d"] * math.cos(be + th)
    G[0, 2], G[1, 2] = -p["ss"] * math.cos(ga), -p["ss"] * math.sin(ga)
    G[2, 3] = -p["e"] * math.cos(ph + de)
    G[2, 4] = -p["e"] * math.cos(ph + de) + p["zt"] * math.sin(de)
    G[3, 3] = -p["e"] * math.sin(ph + de)
    G[3, 4] = -p["e"] * math.sin(ph + de) - p["zt"] * math.cos(de)
    G[4, 5] = p["zf"] * math.sin(om + ep)
    G[4, 6] = p["zf"] * math.sin(om + ep) - p["u"] * math.cos(ep)
    G[5, 5] = -p["zf"] * math.cos(om + ep)
    G[5, 6] = -p["zf"] * math.cos(om + ep) - p["u"] * math.sin(ep)
    return G


def _quadratic(q, v) -> np.ndarray:
    """(d/dt G) q': the second derivative of g at q'' = 0 (each point's centripetal terms)."""
    p = P
    be, th, ga, ph, de, om, ep = q
    bp, tp, gp, pp, dp, op, epp = v
    a12 = np.array([-p["rr"] * math.cos(be) * bp ** 2 + p["d"] * math.cos(be + th) * (bp + tp) ** 2,
                    -p["rr"] * math.sin(be) * bp ** 2 + p["d"] * math.sin(be + th) * (bp + tp) ** 2])
    a3 = np.array([-p["ss"] * math.sin(ga) * gp ** 2, p["ss"] * math.cos(ga) * gp ** 2])
    a54 = np.array([-p["e"] * math.sin(ph + de) * (pp + dp) ** 2 - p["zt"] * math.cos(de) * dp ** 2,
                    p["e"] * math.cos(ph + de) * (pp + dp) ** 2 - p["zt"] * math.sin(de) * dp ** 2])
    a76 = np.array([-p["zf"] * math.cos(om + ep) * (op + epp) ** 2 - p["u"] * math.sin(ep) * epp ** 2,
                    -p["zf"] * math.sin(om + ep) * (op + epp) ** 2 + p["u"] * math.cos(ep) * epp ** 2])
    return np.concatenate([a12 - a3, a12 - a54, a12 - a76])


def qdd(q, v) -> np.ndarray:
    """The published index-1 system solved for q'' (the KKT matrix is regular: G has full rank)."""
    G = jacobian(q)
    K = np.block([[mass_matrix(q), G.T], [G, np.zeros((6, 6))]])
    rhs = np.concatenate([forces(q, v), -_quadratic(q, v)])
    return np.linalg.solve(K, rhs)[:7]


def solve(t_end: float = T_END, rtol: float = 1e-13, atol: float = 1e-13):
    """q(t_end), q'(t_end) of the published equations from the published initial state (DOP853)."""
    from scipy.integrate import solve_ivp
    res = solve_ivp(lambda t, y: np.concatenate([y[7:], qdd(y[:7], y[7:])]), (0.0, t_end),
                    np.concatenate([Q0, np.zeros(7)]), method="DOP853", rtol=rtol, atol=atol)
    return res.y[:7, -1], res.y[7:, -1]

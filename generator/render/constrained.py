"""The module file's layer for closed loops (generator/mechanics/constraints.py, docs/loops.md).

Over the backend's entry points (the form's own q'' as `qdd_free`, the mass matrix, the loops'
kernels con_phi, con_jac, con_bias, con_outputs), the module file binds the hand-written solve of
templates/native/dynamica_constraints.h and makes it what Python and compiled integrators call:

  qdd, rhs, outputs    constrained (M q'' + J^T lambda = Q, J q'' = gamma); NaN where the loops'
                       equations are inconsistent (con_qdd says which)
  qdd_free             the tree's q'' without the loops
  con_qdd              q'', lambda and a report (status, equation, rank, residual); returns the status
  project              (q, q') onto the constraint manifolds; returns the status
  con_watch            how near J is to losing rank (dyn_con_measure), for the step across
  rhs_capsule          the constrained rhs;  project_capsule ("dynamica.project"):
                       int project(double t, double *y, const double *p, double tol);
                       watch_capsule ("dynamica.watch"): the same measure after each step of adams,
                       double watch(double t, const double *y, const double *p, const double *w);
                       rhs_strict_capsule, project_strict_capsule: the same without the weak rows'
                       treatment (dyn_con_weak), for adams, which steps across singular configurations
"""

from __future__ import annotations

from dynamica.generator.ir import nodes as ir
from dynamica.generator.render.common import kernel_output_size
from dynamica.generator.render.module import LAYERS, Entry, Layer

#: Newton steps of the position projection after a step
PROJECT_ITERATIONS = 8


def constrained_layer(mod: ir.ModuleIR, symbol):
    if not mod.constrained:
        return None
    info = dict(mod.info)
    n, m, np_ = len(mod.coordinates), len(info["constraints"]), len(mod.parameter_defaults)
    c, ents = _functions(n, m, info, symbol), _entries(n, m, np_)
    if any(k.name == "con_outputs" for k in mod.kernels):
        c, ents = c + _outputs_function(n, m, symbol), ents + [_outputs_entry(mod, n, np_)]
    return Layer(functions=tuple(c), entries=tuple(ents),
                 capsules=(("rhs_capsule", "dynamica.rhs", "dyn_loop_rhs"),
                           ("project_capsule", "dynamica.project", "dyn_loop_project_c"),
                           ("watch_capsule", "dynamica.watch", "dyn_loop_watch"),
                           ("rhs_strict_capsule", "dynamica.rhs", "dyn_loop_rhs_strict"),
                           ("project_strict_capsule", "dynamica.project", "dyn_loop_project_strict_c")))


def _functions(n, m, info, symbol) -> list:
    """The C of the constrained solve: the tree's predecessors, the spec of the loops'
    kernels, q'' (with its report), the RHS and the projections (dynamica_constraints.h)."""
    pred = ", ".join(str(int(k)) for k in info["tree_predecessors"])
    fn = {name: symbol(name) for name in ("qdd", "mass_matrix", "con_phi", "con_jac", "con_bias")}
    return [
        '#include "dynamica_constraints.h"',
        f"static const int dyn_loop_pred[{max(n, 1)}] = {{{pred or '-1'}}};",
        f"static const dyn_con_spec dyn_loop_spec = {{{n}, {m}, dyn_loop_pred, (dyn_con_qdd_fn){fn['qdd']}, "
        f"(dyn_con_mass_fn){fn['mass_matrix']}, (dyn_con_phi_fn){fn['con_phi']}, (dyn_con_jac_fn){fn['con_jac']}, "
        f"(dyn_con_bias_fn){fn['con_bias']}}};",
        "",
        "static int dyn_loop_qdd_report(double t, const double *q, const double *qd, const double *p, double *qdd,",
        "                              double *lam, double *report)",
        "{",
        "    dyn_con_report r;",
        "    int status = dyn_con_qdd(&dyn_loop_spec, t, q, qd, p, qdd, lam, &r, 1);",
        "    report[0] = r.status; report[1] = r.row; report[2] = r.rank; report[3] = r.residual;",
        "    return status;",
        "}",
        "",
        "static void dyn_loop_qdd_rows(double t, const double *q, const double *qd, const double *p, double *qdd,",
        "                              int weak_rows)",
        "{",
        f"    double lam[{m}];",
        "    dyn_con_report r;",
        "    if (dyn_con_qdd(&dyn_loop_spec, t, q, qd, p, qdd, lam, &r, weak_rows) != DYN_CON_OK)",
        f"        for (int k = 0; k < {n}; ++k) qdd[k] = NAN;      /* never a violated equation's numbers */",
        "}",
        "",
        "static void dyn_loop_qdd(double t, const double *q, const double *qd, const double *p, double *qdd)",
        "{",
        "    dyn_loop_qdd_rows(t, q, qd, p, qdd, 1);",
        "}",
        "",
        "static void dyn_loop_rhs(double t, const double *y, const double *p, double *ydot)",
        "{",
        f"    memcpy(ydot, y + {n}, {n} * sizeof(double));",
        f"    dyn_loop_qdd_rows(t, y, y + {n}, p, ydot + {n}, 1);",
        "}",
        "",
        "static int dyn_loop_project_py(double t, double *y, const double *p, const double *opts)",
        "{",
        "    return dyn_con_project(&dyn_loop_spec, t, y, p, opts[0], (int)opts[1], 1);",
        "}",
        "",
        "static double dyn_loop_watch(double t, const double *y, const double *p, const double *w)",
        "{",
        "    return dyn_con_measure(&dyn_loop_spec, t, y, p, w);",
        "}",
        "",
        "static void dyn_loop_watch_py(double t, const double *q, const double *p, const double *w, double *out)",
        "{",
        "    out[0] = dyn_con_measure(&dyn_loop_spec, t, q, p, w);",
        "}",
    ] + _step_functions(n)


def _step_functions(n) -> list:
    """What compiled integrators call after a step and what adams runs (its capsules): the
    projection, and the rhs and the projection without the weak rows' treatment (adams steps
    across the singular configurations: runtime/integrators/adams_across.py)."""
    return [
        "",
        "static void dyn_loop_rhs_strict(double t, const double *y, const double *p, double *ydot)",
        "{",
        f"    memcpy(ydot, y + {n}, {n} * sizeof(double));",
        f"    dyn_loop_qdd_rows(t, y, y + {n}, p, ydot + {n}, 0);",
        "}",
        "",
        "static int dyn_loop_project_c(double t, double *y, const double *p, double tol)",
        "{",
        f"    return dyn_con_project(&dyn_loop_spec, t, y, p, tol, {PROJECT_ITERATIONS}, 1);",
        "}",
        "",
        "static int dyn_loop_project_strict_c(double t, double *y, const double *p, double tol)",
        "{",
        f"    return dyn_con_project(&dyn_loop_spec, t, y, p, tol, {PROJECT_ITERATIONS}, 0);",
        "}",
        "",
    ]


def _entries(n, m, np_) -> list:
    return [
        Entry("qdd", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)),
              "Generalized accelerations of the constrained system (closed loops) into `out`.",
              symbol="dyn_loop_qdd"),
        Entry("rhs", (("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)),
              "The state derivative of y = [q, qd] of the constrained system into `ydot`.", symbol="dyn_loop_rhs"),
        Entry("qdd_free", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)),
              "Generalized accelerations of the tree without the loops into `out`.", entry="qdd"),
        Entry("con_qdd", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("qdd", n, 1), ("lam", m, 1), ("report", 4, 1)),
              "q'', the loops' multipliers and (status, equation, rank, residual); returns the status "
              "(0 ok, 1 inconsistent, 2 singular mass matrix, 3 no memory).", returns_int=True,
              symbol="dyn_loop_qdd_report"),
        Entry("project", (("y", 2 * n, 1), ("p", np_, 0), ("opts", 2, 0)),
              "y = [q, qd] onto the constraints in place (opts: tolerance, Newton steps); returns the "
              "status (0 ok, 4 not converged).", returns_int=True, symbol="dyn_loop_project_py"),
        Entry("con_watch", (("q", n, 0), ("p", np_, 0), ("w", m + 1, 0), ("out", 1, 1)),
              "How near the loops' Jacobian is to losing rank, into out[0]: |R_rr| / |R_11| of its rows "
              "scaled by w[1:], factored by QR with column pivoting, r = w[0] (docs/loops.md).",
              symbol="dyn_loop_watch_py"),
    ]


def _outputs_function(n, m, symbol) -> list:
    return ["",
            "static void dyn_loop_outputs(double t, const double *q, const double *qd, const double *p, double *out)",
            "{",
            f"    double qdd[{n}], lam[{m}];",
            "    dyn_con_report r;",
            "    if (dyn_con_qdd(&dyn_loop_spec, t, q, qd, p, qdd, lam, &r, 1) != DYN_CON_OK) {",
            f"        for (int k = 0; k < {n}; ++k) qdd[k] = NAN;      /* as qdd and rhs: */",
            f"        for (int a = 0; a < {m}; ++a) lam[a] = NAN;      /* no violated equation's numbers */",
            "    }",
            f"    {symbol('con_outputs')}(t, q, qd, qdd, lam, p, out);",
            "}"]


def _outputs_entry(mod, n, np_):
    size = kernel_output_size(mod, "con_outputs", "out")
    return Entry("outputs", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", size, 1)),
                 f"The model's outputs (INFO['output_layout']) of the state (q, qd), flat, into `out` "
                 f"(length {size}).", symbol="dyn_loop_outputs")


LAYERS.append(constrained_layer)

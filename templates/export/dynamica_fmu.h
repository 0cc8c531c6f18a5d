/* dynamica_fmu.h: what an exported FMU's interfaces (FMI 2.0: dynamica_fmi2.h, FMI 3.0:
   dynamica_fmi3.h) share (docs/export.md): the instance, the state, the parameters and the
   outputs by value reference, the loops' projection and drift test, and Co-Simulation's
   integration by dynamica's Adams method (dynamica_adams.h, the one implementation the Python
   integrator runs too). fmu.c (templates/export/fmu.c.j2) defines, before including the
   interface's header:

     DYN_FMU_NQ, _NY, _NP, _NS, _NOUT   sizes (coordinates, state, p, extra states, outputs)
     DYN_FMU_P_STATES                   the extra states' slots in p (when NS > 0)
     DYN_FMU_NC                         the loops' position equations (when DYN_FMU_LOOPS)
     DYN_FMU_ME, _CS, _LOOPS, _ITERATIVE   0 or 1: the interfaces the FMU offers; closed loops;
                                        an iterative form (a workspace per instance)
     DYN_FMU_GUID, DYN_FMU_NAME         the GUID (instantiation token) of modelDescription.xml;
                                        the default instance name
     DYN_FMU_Y0, DYN_FMU_P_DEFAULT      the initial state and the default p (arrays of the library)
     DYN_FMU_RTOL, _ATOL                the Co-Simulation integrator's default tolerances
     DYN_FMU_PROJECT_TOL, _DRIFT_TOL    the loops' projection tolerance; Model Exchange: a step
                                        event when a loop's residual exceeds DRIFT_TOL
     dyn_fmu_model_rhs(w, t, y, p, ydot), dyn_fmu_model_outputs(t, q, qd, p, out) (NOUT > 0),
     dyn_fmu_model_project(t, y, p, tol), dyn_fmu_model_constraints(t, q, p, phi) (loops),
     dyn_fmu_model_workspace_new(), dyn_fmu_model_workspace_free(w) (iterative forms)

   and the interface's header defines DYN_FMU_CALLBACKS, its callback fields of the instance.

   Value references: [0, NY) the state y = [q, q', s]; [VR_DER, VR_DER + NQ + NS) q'' and s';
   [VR_P, VR_P + NP) the slots of p (parameters and inputs); [VR_OUT, VR_OUT + NOUT) the outputs;
   VR_END the time (FMI 3.0's independent variable). Co-Simulation: the inputs held over a
   communication step, the state projected on the loops' constraints after every step; the
   integration goes on across communication points and starts again (order 1) where the state,
   a parameter or an input was changed by the importer. No global mutable state: every instance
   is its own. */
#ifndef DYNAMICA_FMU_H
#define DYNAMICA_FMU_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "dynamica_adams.h"

#define NQ DYN_FMU_NQ
#define NY DYN_FMU_NY
#define NP DYN_FMU_NP
#define NP_ARRAY (DYN_FMU_NP > 0 ? DYN_FMU_NP : 1)
#define NS DYN_FMU_NS
#define NOUT DYN_FMU_NOUT
#define VR_DER NY
#define VR_P (VR_DER + NQ + NS)
#define VR_OUT (VR_P + NP)
#define VR_END (VR_OUT + NOUT)
#define GUID DYN_FMU_GUID
#define PROJECT_TOL DYN_FMU_PROJECT_TOL
#define DRIFT_TOL DYN_FMU_DRIFT_TOL

enum { M_INSTANTIATED, M_INIT, M_EVENT, M_CONT, M_STEP, M_TERMINATED, M_ERROR };

typedef struct {
    DYN_FMU_CALLBACKS
    char name[128];
    int me;                          /* instantiated for Model Exchange (else Co-Simulation) */
    int mode, logging;
    double t, t_stop;
    double y[NY], p[NP_ARRAY], ydot[NY], out[NOUT + 1];
    int ydot_ok, out_ok;
    dyn_ad_state ad;                 /* the Co-Simulation integration */
    double ad_work[DYN_AD_WORK(NY)];
    double ad_rtol[NY], ad_atol[NY];
    int ad_fresh;                    /* 1: start it again at the next communication step */
    double rtol, atol;
    void *w;            /* the model's workspace (iterative forms), else NULL */
} instance;

static int f_rhs(void *ctx, double t, const double *y, double *ydot)
{
    instance *c = (instance *)ctx;
    return dyn_fmu_model_rhs(c->w, t, y, c->p, ydot);
}
#if DYN_FMU_LOOPS
static int f_project(void *ctx, double t, double *y)
{
    instance *c = (instance *)ctx;
    return dyn_fmu_model_project(t, y, c->p, PROJECT_TOL);
}
#endif
static int derivatives(instance *c)
{
    if (!c->ydot_ok) {
        if (f_rhs(c, c->t, c->y, c->ydot) != 0)
            return 1;
        c->ydot_ok = 1;
    }
    return 0;
}

static int outputs(instance *c)
{
#if NOUT > 0
    if (!c->out_ok) {
#if NS > 0
        memcpy(c->p + DYN_FMU_P_STATES, c->y + 2 * NQ, NS * sizeof(double));
#endif
        if (dyn_fmu_model_outputs(c->t, c->y, c->y + NQ, c->p, c->out) != 0)
            return 1;
        c->out_ok = 1;
    }
#else
    (void)c;
#endif
    return 0;
}

static void changed(instance *c)
{
    c->ydot_ok = 0;
    c->out_ok = 0;
}

/* A new instance with the model's initial state and default parameters (NULL: out of memory);
   the interface fills in its callbacks. */
static instance *dyn_fmu_new(const char *name, int me, int logging)
{
    instance *c = (instance *)calloc(1, sizeof(instance));
    if (c == NULL)
        return NULL;
    snprintf(c->name, sizeof c->name, "%s", name ? name : DYN_FMU_NAME);
    c->me = me;
    c->logging = logging;
    c->mode = M_INSTANTIATED;
    memcpy(c->y, DYN_FMU_Y0, sizeof c->y);
    memcpy(c->p, DYN_FMU_P_DEFAULT, sizeof c->p);
    c->rtol = DYN_FMU_RTOL;
    c->atol = DYN_FMU_ATOL;
#if DYN_FMU_ITERATIVE
    c->w = dyn_fmu_model_workspace_new();
    if (c->w == NULL) {
        free(c);
        return NULL;
    }
#endif
    return c;
}

static void dyn_fmu_free(instance *c)
{
    if (c == NULL)
        return;
#if DYN_FMU_ITERATIVE
    dyn_fmu_model_workspace_free(c->w);
#endif
    free(c);
}

/* the experiment: a tolerance becomes rtol (and bounds atol); the start and stop times */
static void dyn_fmu_setup(instance *c, int tolerance_defined, double tolerance, double start, int stop_defined,
                          double stop)
{
    if (tolerance_defined && tolerance > 0.0) {
        c->rtol = tolerance;
        if (c->atol > tolerance)
            c->atol = tolerance;
    }
    c->t = start;
    c->t_stop = stop_defined ? stop : HUGE_VAL;
    changed(c);
    c->ad_fresh = 1;
}

/* the end of initialization: onto the loops' constraints; NULL or the reason it failed */
static const char *dyn_fmu_exit_initialization(instance *c)
{
    c->mode = c->me ? M_EVENT : M_STEP;
    changed(c);
#if DYN_FMU_LOOPS
    if (f_project(c, c->t, c->y) != 0)
        return "the initial state cannot be brought onto the loops' constraints";
#endif
    c->ad_fresh = 1;
    return NULL;
}

static void dyn_fmu_reset(instance *c)
{
    c->mode = M_INSTANTIATED;
    c->t = 0.0;
    memcpy(c->y, DYN_FMU_Y0, sizeof c->y);
    memcpy(c->p, DYN_FMU_P_DEFAULT, sizeof c->p);
    changed(c);
    c->ad_fresh = 1;
}

/* the value of a value reference into *value; NULL or the reason it has none */
static const char *dyn_fmu_get(instance *c, unsigned int r, double *value)
{
    if (r < VR_DER) {
        *value = c->y[r];
    } else if (r < VR_P) {
        if (derivatives(c) != 0)
            return "the right-hand side is not finite at this state (or the loops' equations are inconsistent)";
        *value = c->ydot[NQ + (r - VR_DER)];
    } else if (r < VR_OUT) {
        *value = c->p[r - VR_P];
    } else if (r < VR_END) {
        if (outputs(c) != 0)
            return "the outputs are not finite at this state";
        *value = c->out[r - VR_OUT];
    } else {
        return "unknown value reference";
    }
    return NULL;
}

/* set a state or a slot of p; a new value starts Co-Simulation's integration again. NULL or why not */
static const char *dyn_fmu_set(instance *c, unsigned int r, double value)
{
    double *x;
    if (r < VR_DER)
        x = &c->y[r];
    else if (r >= VR_P && r < VR_OUT)
        x = &c->p[r - VR_P];
    else
        return "this variable cannot be set";
    if (*x != value)
        c->ad_fresh = 1;
    *x = value;
    return NULL;
}

/* Model Exchange, event mode: y onto the loops' constraints (a step event of a drift); *moved
   when it changed the state. NULL or the reason it failed */
static const char *dyn_fmu_event_projection(instance *c, int *moved)
{
    *moved = 0;
#if DYN_FMU_LOOPS
    /* a step event (CompletedIntegratorStep) when the loops' constraints drifted: project */
    if (c->mode == M_EVENT) {
        double y[NY];
        memcpy(y, c->y, sizeof y);
        if (f_project(c, c->t, c->y) != 0)
            return "the state cannot be brought back onto the loops' constraints";
        for (int k = 0; k < NY; ++k)
            if (y[k] != c->y[k])
                *moved = 1;
        changed(c);
    }
#else
    (void)c;
#endif
    return NULL;
}

/* fmi2SetContinuousStates, fmi3SetContinuousStates: y = x (nx of them); NULL, or why not */
static const char *dyn_fmu_set_states(instance *c, const double *x, size_t nx)
{
    if (nx != NY)
        return "wrong number of continuous states";
    memcpy(c->y, x, NY * sizeof(double));
    changed(c);
    return NULL;
}

/* fmi2GetDerivatives, fmi3GetContinuousStateDerivatives: dx = y' (nx of them); NULL, or why not */
static const char *dyn_fmu_get_derivatives(instance *c, double *dx, size_t nx)
{
    if (nx != NY)
        return "wrong number of state derivatives";
    if (derivatives(c) != 0)
        return "the right-hand side is not finite at this state (or the loops' equations are inconsistent)";
    memcpy(dx, c->ydot, NY * sizeof(double));
    return NULL;
}

/* Model Exchange, after an integrator step: 1 when a loop's residual exceeds DRIFT_TOL */
static int dyn_fmu_drifted(instance *c)
{
    int event = 0;
#if DYN_FMU_LOOPS
    double phi[DYN_FMU_NC];
    int bad = dyn_fmu_model_constraints(c->t, c->y, c->p, phi);
    for (int k = 0; k < DYN_FMU_NC; ++k)
        if (bad || fabs(phi[k]) > DRIFT_TOL)
            event = 1;
#else
    (void)c;
#endif
    return event;
}

/* the right-hand side for the Adams method: a value that is not finite (an inconsistent loop's
   NaN) is seen by the method itself (DYN_AD_NONFINITE, with the time and the component) */
static int f_rhs_adams(void *ctx, double t, const double *y, double *ydot)
{
    (void)f_rhs(ctx, t, y, ydot);
    return 0;
}

/* Start the Adams integration again at (t, y) towards tb: order 1, the tolerances of now. */
static int adams_start(instance *c, double t, double tb)
{
    dyn_ad_state *s = &c->ad;
    for (int k = 0; k < NY; ++k) {
        c->ad_rtol[k] = c->rtol;
        c->ad_atol[k] = c->atol;
    }
    dyn_ad_init(s, NY, c->ad_work, c->ad_rtol, c->ad_atol);
    s->call = f_rhs_adams;
    s->ctx = c;
    s->par = c->p;
#if DYN_FMU_LOOPS
    s->proj = dyn_fmu_model_project;
    s->proj_tol = PROJECT_TOL;
#endif
    c->ad_fresh = 0;
    return dyn_ad_resume(s, t, c->y, tb);
}

/* Co-Simulation: integrate from the communication point t over h. NULL, or the reason it failed
   (in msg, of size len) */
static const char *dyn_fmu_do_step(instance *c, double t, double h, char *msg, size_t len)
{
    dyn_ad_state *s = &c->ad;
    int rc = DYN_AD_OK, j = 0;
    if (fabs(t - c->t) > 1e-9 * (1.0 + fabs(t)))
        return "the communication point is not the FMU's time";
    if (!(h >= 0.0))
        return "negative communication step";
    c->t = t;
    if (h > 0.0) {
        if (c->ad_fresh || s->x != t || s->done) {
            rc = adams_start(c, t, t + h);
        } else {                         /* go on from the last step, towards the new end */
            s->tb = t + h;
        }
        if (rc == DYN_AD_OK) {
            s->max_steps = s->nsteps + 1000000;
            rc = dyn_ad_run(s, NULL, 0, NULL, &j, s->max_steps, 0);
        }
        if (rc == DYN_AD_OK) {
            if (s->done)                 /* within 4u|t| of the end: the interpolant's value there */
                dyn_ad_intrp(s, s->tb, c->y);
            else
                memcpy(c->y, s->y, NY * sizeof(double));
            c->t = s->tb;
        }
    }
    changed(c);
    if (rc != DYN_AD_OK) {
        snprintf(msg, len, "the integration failed at t = %.17g (Adams status %d%s)", s->x, rc,
                 rc == DYN_AD_NONFINITE ? ": the right-hand side is not finite" :
                 rc == DYN_AD_CRASH_STEP ? ": the step became too small" : "");
        c->mode = M_ERROR;
        c->ad_fresh = 1;
        return msg;
    }
    return NULL;
}

#endif

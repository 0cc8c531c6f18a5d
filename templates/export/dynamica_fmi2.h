/* dynamica_fmi2.h: the fixed part of an exported FMU's fmu.c (docs/export.md): the FMI 2.0 interface
   (Model Exchange and Co-Simulation) over one model's C library. fmu.c (templates/export/fmu.c.j2)
   defines, before including this file, the model's sizes and options and the functions this file
   calls:

     DYN_FMU_NQ, _NY, _NP, _NS, _NOUT   sizes (coordinates, state, p, extra states, outputs)
     DYN_FMU_P_STATES                   the extra states' slots in p (when NS > 0)
     DYN_FMU_NC                         the loops' position equations (when DYN_FMU_LOOPS)
     DYN_FMU_ME, _CS, _LOOPS, _ITERATIVE   0 or 1: the interfaces the FMU offers; closed loops;
                                        an iterative form (a workspace per instance)
     DYN_FMU_GUID, DYN_FMU_NAME         the GUID of modelDescription.xml; the default instance name
     DYN_FMU_Y0, DYN_FMU_P_DEFAULT      the initial state and the default p (arrays of the library)
     DYN_FMU_RTOL, _ATOL                the Co-Simulation integrator's default tolerances
     DYN_FMU_PROJECT_TOL, _DRIFT_TOL    the loops' projection tolerance; Model Exchange: a step
                                        event when a loop's residual exceeds DRIFT_TOL
     dyn_fmu_model_rhs(w, t, y, p, ydot), dyn_fmu_model_outputs(t, q, qd, p, out) (NOUT > 0),
     dyn_fmu_model_project(t, y, p, tol), dyn_fmu_model_constraints(t, q, p, phi) (loops),
     dyn_fmu_model_workspace_new(), dyn_fmu_model_workspace_free(w) (iterative forms)

   Value references: [0, NY) the state y = [q, q', s]; [VR_DER, VR_DER + NQ + NS) q'' and s';
   [VR_P, VR_P + NP) the slots of p (parameters and inputs); [VR_OUT, VR_OUT + NOUT) the outputs.
   Co-Simulation integrates with dynamica's variable-step, variable-order Adams method
   (dynamica_adams.h, the one implementation the Python integrator runs too), the inputs held over
   a communication step, the state projected on the loops' constraints after every step; the
   integration goes on across communication points and starts again (order 1) where the state,
   a parameter or an input was changed by the importer. No global mutable state: every instance
   is its own. */
#ifndef DYNAMICA_FMI2_H
#define DYNAMICA_FMI2_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "fmi2Functions.h"
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
    fmi2CallbackFunctions cb;
    char name[128];
    fmi2Type type;
    int mode, logging;
    double t, t_stop;
    double y[NY], p[NP_ARRAY], ydot[NY], out[NOUT + 1];
    int ydot_ok, out_ok;
    dyn_ad_state ad;                 /* the Co-Simulation integration */
    double ad_work[DYN_AD_WORK(NY)];
    double ad_rtol[NY], ad_atol[NY];
    int ad_fresh;                    /* 1: start it again at the next fmi2DoStep */
    double rtol, atol;
    void *w;            /* the model's workspace (iterative forms), else NULL */
} instance;

static void say(instance *c, fmi2Status status, const char *category, const char *message)
{
    if (c->cb.logger != NULL && (c->logging || status != fmi2OK))
        c->cb.logger(c->cb.componentEnvironment, c->name, status, category, "%s", message);
}

static fmi2Status fail(instance *c, const char *message)
{
    say(c, fmi2Error, "logStatusError", message);
    return fmi2Error;
}

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

/* the right-hand side for the Adams method: a value that is not finite (an inconsistent loop's
   NaN) is seen by the method itself (DYN_AD_NONFINITE, with the time and the component) */
static int f_rhs_adams(void *ctx, double t, const double *y, double *ydot)
{
    (void)f_rhs(ctx, t, y, ydot);
    return 0;
}

/* ------------------------------------------------------------------ common */
const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Status fmi2SetDebugLogging(fmi2Component comp, fmi2Boolean on, size_t n, const fmi2String categories[])
{
    (void)n; (void)categories;
    ((instance *)comp)->logging = on;
    return fmi2OK;
}

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String location,
                              const fmi2CallbackFunctions *functions, fmi2Boolean visible, fmi2Boolean logging)
{
    (void)location; (void)visible;
    if (functions == NULL)
        return NULL;
    if (guid == NULL || strcmp(guid, GUID) != 0) {
        if (functions->logger)
            functions->logger(functions->componentEnvironment, name, fmi2Error, "logStatusError",
                              "the GUID %s is not this FMU's (%s)", guid ? guid : "(null)", GUID);
        return NULL;
    }
#if !DYN_FMU_CS
    if (type != fmi2ModelExchange) {
        if (functions->logger)
            functions->logger(functions->componentEnvironment, name, fmi2Error, "logStatusError",
                              "this FMU is for Model Exchange only");
        return NULL;
    }
#endif
#if !DYN_FMU_ME
    if (type != fmi2CoSimulation) {
        if (functions->logger)
            functions->logger(functions->componentEnvironment, name, fmi2Error, "logStatusError",
                              "this FMU is for Co-Simulation only");
        return NULL;
    }
#endif
    instance *c = (instance *)calloc(1, sizeof(instance));
    if (c == NULL)
        return NULL;
    c->cb = *functions;
    snprintf(c->name, sizeof c->name, "%s", name ? name : DYN_FMU_NAME);
    c->type = type;
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

void fmi2FreeInstance(fmi2Component comp)
{
    instance *c = (instance *)comp;
    if (c == NULL)
        return;
#if DYN_FMU_ITERATIVE
    dyn_fmu_model_workspace_free(c->w);
#endif
    free(c);
}

fmi2Status fmi2SetupExperiment(fmi2Component comp, fmi2Boolean tolerance_defined, fmi2Real tolerance,
                               fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop)
{
    instance *c = (instance *)comp;
    if (tolerance_defined && tolerance > 0.0) {
        c->rtol = tolerance;
        if (c->atol > tolerance)
            c->atol = tolerance;
    }
    c->t = start;
    c->t_stop = stop_defined ? stop : HUGE_VAL;
    changed(c);
    c->ad_fresh = 1;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component comp)
{
    ((instance *)comp)->mode = M_INIT;
    return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component comp)
{
    instance *c = (instance *)comp;
    c->mode = c->type == fmi2ModelExchange ? M_EVENT : M_STEP;
    changed(c);
#if DYN_FMU_LOOPS
    if (f_project(c, c->t, c->y) != 0)
        return fail(c, "the initial state cannot be brought onto the loops' constraints");
#endif
    c->ad_fresh = 1;
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component comp)
{
    ((instance *)comp)->mode = M_TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component comp)
{
    instance *c = (instance *)comp;
    c->mode = M_INSTANTIATED;
    c->t = 0.0;
    memcpy(c->y, DYN_FMU_Y0, sizeof c->y);
    memcpy(c->p, DYN_FMU_P_DEFAULT, sizeof c->p);
    changed(c);
    c->ad_fresh = 1;
    return fmi2OK;
}

fmi2Status fmi2GetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[])
{
    instance *c = (instance *)comp;
    for (size_t k = 0; k < nvr; ++k) {
        fmi2ValueReference r = vr[k];
        if (r < VR_DER) {
            value[k] = c->y[r];
        } else if (r < VR_P) {
            if (derivatives(c) != 0)
                return fail(c, "the right-hand side is not finite at this state (or the loops' equations are "
                               "inconsistent)");
            value[k] = c->ydot[NQ + (r - VR_DER)];
        } else if (r < VR_OUT) {
            value[k] = c->p[r - VR_P];
        } else if (r < VR_END) {
            if (outputs(c) != 0)
                return fail(c, "the outputs are not finite at this state");
            value[k] = c->out[r - VR_OUT];
        } else {
            return fail(c, "unknown value reference");
        }
    }
    return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[])
{
    instance *c = (instance *)comp;
    for (size_t k = 0; k < nvr; ++k) {
        fmi2ValueReference r = vr[k];
        double *x;
        if (r < VR_DER)
            x = &c->y[r];
        else if (r >= VR_P && r < VR_OUT)
            x = &c->p[r - VR_P];
        else
            return fail(c, "this variable cannot be set");
        if (*x != value[k])          /* a new value: the integration starts again (Co-Simulation) */
            c->ad_fresh = 1;
        *x = value[k];
    }
    changed(c);
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, fmi2Integer value[])
{
    (void)vr; (void)value;
    return nvr ? fail((instance *)comp, "the FMU has no Integer variables") : fmi2OK;
}

fmi2Status fmi2GetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, fmi2Boolean value[])
{
    (void)vr; (void)value;
    return nvr ? fail((instance *)comp, "the FMU has no Boolean variables") : fmi2OK;
}

fmi2Status fmi2GetString(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, fmi2String value[])
{
    (void)vr; (void)value;
    return nvr ? fail((instance *)comp, "the FMU has no String variables") : fmi2OK;
}

fmi2Status fmi2SetInteger(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, const fmi2Integer value[])
{
    (void)vr; (void)value;
    return nvr ? fail((instance *)comp, "the FMU has no Integer variables") : fmi2OK;
}

fmi2Status fmi2SetBoolean(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, const fmi2Boolean value[])
{
    (void)vr; (void)value;
    return nvr ? fail((instance *)comp, "the FMU has no Boolean variables") : fmi2OK;
}

fmi2Status fmi2SetString(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, const fmi2String value[])
{
    (void)vr; (void)value;
    return nvr ? fail((instance *)comp, "the FMU has no String variables") : fmi2OK;
}

fmi2Status fmi2GetFMUstate(fmi2Component comp, fmi2FMUstate *state)
{
    (void)state;
    return fail((instance *)comp, "canGetAndSetFMUstate is false");
}

fmi2Status fmi2SetFMUstate(fmi2Component comp, fmi2FMUstate state)
{
    (void)state;
    return fail((instance *)comp, "canGetAndSetFMUstate is false");
}

fmi2Status fmi2FreeFMUstate(fmi2Component comp, fmi2FMUstate *state)
{
    (void)state;
    return fail((instance *)comp, "canGetAndSetFMUstate is false");
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component comp, fmi2FMUstate state, size_t *size)
{
    (void)state; (void)size;
    return fail((instance *)comp, "canSerializeFMUstate is false");
}

fmi2Status fmi2SerializeFMUstate(fmi2Component comp, fmi2FMUstate state, fmi2Byte data[], size_t size)
{
    (void)state; (void)data; (void)size;
    return fail((instance *)comp, "canSerializeFMUstate is false");
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component comp, const fmi2Byte data[], size_t size, fmi2FMUstate *state)
{
    (void)state; (void)data; (void)size;
    return fail((instance *)comp, "canSerializeFMUstate is false");
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component comp, const fmi2ValueReference unknown[], size_t nu,
                                        const fmi2ValueReference known[], size_t nk, const fmi2Real dv_known[],
                                        fmi2Real dv_unknown[])
{
    (void)unknown; (void)nu; (void)known; (void)nk; (void)dv_known; (void)dv_unknown;
    return fail((instance *)comp, "providesDirectionalDerivative is false");
}

/* ------------------------------------------------------------------ Model Exchange */
fmi2Status fmi2EnterEventMode(fmi2Component comp)
{
    ((instance *)comp)->mode = M_EVENT;
    return fmi2OK;
}

fmi2Status fmi2NewDiscreteStates(fmi2Component comp, fmi2EventInfo *info)
{
    instance *c = (instance *)comp;
    info->newDiscreteStatesNeeded = fmi2False;
    info->terminateSimulation = fmi2False;
    info->nominalsOfContinuousStatesChanged = fmi2False;
    info->valuesOfContinuousStatesChanged = fmi2False;
    info->nextEventTimeDefined = fmi2False;
    info->nextEventTime = 0.0;
#if DYN_FMU_LOOPS
    /* a step event (fmi2CompletedIntegratorStep) when the loops' constraints drifted: project */
    if (c->mode == M_EVENT) {
        double y[NY];
        memcpy(y, c->y, sizeof y);
        if (f_project(c, c->t, c->y) != 0)
            return fail(c, "the state cannot be brought back onto the loops' constraints");
        for (int k = 0; k < NY; ++k)
            if (y[k] != c->y[k])
                info->valuesOfContinuousStatesChanged = fmi2True;
        changed(c);
    }
#else
    (void)c;
#endif
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component comp)
{
    ((instance *)comp)->mode = M_CONT;
    return fmi2OK;
}

fmi2Status fmi2CompletedIntegratorStep(fmi2Component comp, fmi2Boolean no_set_prior, fmi2Boolean *enter_event,
                                       fmi2Boolean *terminate)
{
    (void)no_set_prior;
    *enter_event = fmi2False;
    *terminate = fmi2False;
#if DYN_FMU_LOOPS
    /* the loops' constraints drifted: a step event, in which fmi2NewDiscreteStates projects */
    instance *c = (instance *)comp;
    double phi[DYN_FMU_NC];
    int bad = dyn_fmu_model_constraints(c->t, c->y, c->p, phi);
    for (int k = 0; k < DYN_FMU_NC; ++k)
        if (bad || fabs(phi[k]) > DRIFT_TOL)
            *enter_event = fmi2True;
#else
    (void)comp;
#endif
    return fmi2OK;
}

fmi2Status fmi2SetTime(fmi2Component comp, fmi2Real time)
{
    instance *c = (instance *)comp;
    c->t = time;
    changed(c);
    return fmi2OK;
}

fmi2Status fmi2SetContinuousStates(fmi2Component comp, const fmi2Real x[], size_t nx)
{
    instance *c = (instance *)comp;
    if (nx != NY)
        return fail(c, "wrong number of continuous states");
    memcpy(c->y, x, NY * sizeof(double));
    changed(c);
    return fmi2OK;
}

fmi2Status fmi2GetDerivatives(fmi2Component comp, fmi2Real dx[], size_t nx)
{
    instance *c = (instance *)comp;
    if (nx != NY)
        return fail(c, "wrong number of state derivatives");
    if (derivatives(c) != 0)
        return fail(c, "the right-hand side is not finite at this state (or the loops' equations are inconsistent)");
    memcpy(dx, c->ydot, NY * sizeof(double));
    return fmi2OK;
}

fmi2Status fmi2GetEventIndicators(fmi2Component comp, fmi2Real indicators[], size_t ni)
{
    (void)comp; (void)indicators;
    return ni == 0 ? fmi2OK : fmi2Error;
}

fmi2Status fmi2GetContinuousStates(fmi2Component comp, fmi2Real x[], size_t nx)
{
    instance *c = (instance *)comp;
    if (nx != NY)
        return fail(c, "wrong number of continuous states");
    memcpy(x, c->y, NY * sizeof(double));
    return fmi2OK;
}

fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component comp, fmi2Real x_nominal[], size_t nx)
{
    (void)comp;
    for (size_t k = 0; k < nx; ++k)
        x_nominal[k] = 1.0;
    return fmi2OK;
}

/* ------------------------------------------------------------------ Co-Simulation */
fmi2Status fmi2SetRealInputDerivatives(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                                       const fmi2Integer order[], const fmi2Real value[])
{
    (void)vr; (void)order; (void)value;
    return nvr ? fail((instance *)comp, "canInterpolateInputs is false") : fmi2OK;
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr,
                                        const fmi2Integer order[], fmi2Real value[])
{
    (void)vr; (void)order; (void)value;
    return nvr ? fail((instance *)comp, "maxOutputDerivativeOrder is 0") : fmi2OK;
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

fmi2Status fmi2DoStep(fmi2Component comp, fmi2Real t, fmi2Real h, fmi2Boolean no_set_prior)
{
    instance *c = (instance *)comp;
    dyn_ad_state *s = &c->ad;
    int rc = DYN_AD_OK, j = 0;
    (void)no_set_prior;
    if (fabs(t - c->t) > 1e-9 * (1.0 + fabs(t)))
        return fail(c, "the communication point is not the FMU's time");
    if (!(h >= 0.0))
        return fail(c, "negative communication step");
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
        char msg[200];
        snprintf(msg, sizeof msg, "the integration failed at t = %.17g (Adams status %d%s)", s->x, rc,
                 rc == DYN_AD_NONFINITE ? ": the right-hand side is not finite" :
                 rc == DYN_AD_CRASH_STEP ? ": the step became too small" : "");
        c->mode = M_ERROR;
        c->ad_fresh = 1;
        return fail(c, msg);
    }
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component comp)
{
    return fail((instance *)comp, "fmi2DoStep is synchronous: nothing to cancel");
}

fmi2Status fmi2GetStatus(fmi2Component comp, const fmi2StatusKind s, fmi2Status *value)
{
    (void)comp; (void)s;
    *value = fmi2OK;
    return fmi2OK;
}

fmi2Status fmi2GetRealStatus(fmi2Component comp, const fmi2StatusKind s, fmi2Real *value)
{
    instance *c = (instance *)comp;
    if (s != fmi2LastSuccessfulTime)
        return fmi2Discard;
    *value = c->t;
    return fmi2OK;
}

fmi2Status fmi2GetIntegerStatus(fmi2Component comp, const fmi2StatusKind s, fmi2Integer *value)
{
    (void)comp; (void)s; (void)value;
    return fmi2Discard;
}

fmi2Status fmi2GetBooleanStatus(fmi2Component comp, const fmi2StatusKind s, fmi2Boolean *value)
{
    (void)comp; (void)s; (void)value;
    return fmi2Discard;
}

fmi2Status fmi2GetStringStatus(fmi2Component comp, const fmi2StatusKind s, fmi2String *value)
{
    (void)comp; (void)s; (void)value;
    return fmi2Discard;
}

#endif

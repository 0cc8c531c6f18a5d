/* dynamica_fmi2.h: the FMI 2.0 interface of an exported FMU (docs/export.md), Model Exchange and
   Co-Simulation, over what every interface shares (dynamica_fmu.h: the instance, the value
   references, the loops, Co-Simulation's integration by dynamica's Adams method; its opening
   comment lists what fmu.c defines before including this file). */
#ifndef DYNAMICA_FMI2_H
#define DYNAMICA_FMI2_H
#include "fmi2Functions.h"
#define DYN_FMU_CALLBACKS fmi2CallbackFunctions cb;
#include "dynamica_fmu.h"

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
    instance *c = dyn_fmu_new(name, type == fmi2ModelExchange, logging);
    if (c == NULL)
        return NULL;
    c->cb = *functions;
    return c;
}

void fmi2FreeInstance(fmi2Component comp)
{
    dyn_fmu_free((instance *)comp);
}

fmi2Status fmi2SetupExperiment(fmi2Component comp, fmi2Boolean tolerance_defined, fmi2Real tolerance,
                               fmi2Real start, fmi2Boolean stop_defined, fmi2Real stop)
{
    dyn_fmu_setup((instance *)comp, tolerance_defined, tolerance, start, stop_defined, stop);
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
    const char *why = dyn_fmu_exit_initialization(c);
    return why ? fail(c, why) : fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component comp)
{
    ((instance *)comp)->mode = M_TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component comp)
{
    dyn_fmu_reset((instance *)comp);
    return fmi2OK;
}

fmi2Status fmi2GetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, fmi2Real value[])
{
    instance *c = (instance *)comp;
    for (size_t k = 0; k < nvr; ++k) {
        const char *why = vr[k] < VR_END ? dyn_fmu_get(c, vr[k], &value[k]) : "unknown value reference";
        if (why)
            return fail(c, why);
    }
    return fmi2OK;
}

fmi2Status fmi2SetReal(fmi2Component comp, const fmi2ValueReference vr[], size_t nvr, const fmi2Real value[])
{
    instance *c = (instance *)comp;
    for (size_t k = 0; k < nvr; ++k) {
        const char *why = dyn_fmu_set(c, vr[k], value[k]);
        if (why)
            return fail(c, why);
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
/* ------------------------------------------------------------------ Model Exchange */
fmi2Status fmi2EnterEventMode(fmi2Component comp)
{
    ((instance *)comp)->mode = M_EVENT;
    return fmi2OK;
}

fmi2Status fmi2NewDiscreteStates(fmi2Component comp, fmi2EventInfo *info)
{
    instance *c = (instance *)comp;
    int moved;
    const char *why;
    info->newDiscreteStatesNeeded = fmi2False;
    info->terminateSimulation = fmi2False;
    info->nominalsOfContinuousStatesChanged = fmi2False;
    info->valuesOfContinuousStatesChanged = fmi2False;
    info->nextEventTimeDefined = fmi2False;
    info->nextEventTime = 0.0;
    why = dyn_fmu_event_projection(c, &moved);
    if (why)
        return fail(c, why);
    info->valuesOfContinuousStatesChanged = moved ? fmi2True : fmi2False;
    return fmi2OK;
}

#define DYN_FMI(name) fmi2##name
#define DYN_FMI_INSTANCE fmi2Component
#define DYN_FMI_REAL fmi2Real
#define DYN_FMI_DERIVATIVES fmi2GetDerivatives
#include "dynamica_fmu_me.h"

fmi2Status fmi2GetEventIndicators(fmi2Component comp, fmi2Real indicators[], size_t ni)
{
    (void)comp; (void)indicators;
    return ni == 0 ? fmi2OK : fmi2Error;
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


fmi2Status fmi2DoStep(fmi2Component comp, fmi2Real t, fmi2Real h, fmi2Boolean no_set_prior)
{
    instance *c = (instance *)comp;
    char msg[200];
    const char *why;
    (void)no_set_prior;
    why = dyn_fmu_do_step(c, t, h, msg, sizeof msg);
    return why ? fail(c, why) : fmi2OK;
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


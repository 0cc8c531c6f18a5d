/* dynamica_fmi3.h: the FMI 3.0 interface of an exported FMU (docs/export.md), Model Exchange and
   Co-Simulation, over what every interface shares (dynamica_fmu.h: the instance, the value
   references, the loops, Co-Simulation's integration by dynamica's Adams method; its opening
   comment lists what fmu.c defines before including this file). The variables are Float64; no
   event indicators, clocks, FMU state or directional derivatives (the capability flags say so);
   Co-Simulation without event mode, early return or intermediate updates. */
#ifndef DYNAMICA_FMI3_H
#define DYNAMICA_FMI3_H
#include "fmi3Functions.h"
#define DYN_FMU_CALLBACKS fmi3InstanceEnvironment env; fmi3LogMessageCallback log;
#include "dynamica_fmu.h"

static void say(instance *c, fmi3Status status, const char *category, const char *message)
{
    if (c->log != NULL && (c->logging || status != fmi3OK))
        c->log(c->env, status, category, message);
}

static fmi3Status fail(instance *c, const char *message)
{
    say(c, fmi3Error, "logStatusError", message);
    return fmi3Error;
}

static instance *instantiate(fmi3String name, fmi3String token, int me, fmi3Boolean logging,
                             fmi3InstanceEnvironment env, fmi3LogMessageCallback log)
{
    instance *c;
    if (token == NULL || strcmp(token, GUID) != 0) {
        if (log != NULL) {
            char msg[200];
            snprintf(msg, sizeof msg, "the instantiation token %s is not this FMU's (%s)", token ? token : "(null)",
                     GUID);
            log(env, fmi3Error, "logStatusError", msg);
        }
        return NULL;
    }
    c = dyn_fmu_new(name, me, logging);
    if (c == NULL)
        return NULL;
    c->env = env;
    c->log = log;
    return c;
}

/* ------------------------------------------------------------------ common */
const char *fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance inst, fmi3Boolean on, size_t n, const fmi3String categories[])
{
    (void)n; (void)categories;
    ((instance *)inst)->logging = on;
    return fmi3OK;
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resources,
                                          fmi3Boolean visible, fmi3Boolean logging, fmi3InstanceEnvironment env,
                                          fmi3LogMessageCallback log)
{
    (void)resources; (void)visible;
#if DYN_FMU_ME
    return instantiate(name, token, 1, logging, env, log);
#else
    (void)name; (void)token; (void)logging;
    if (log != NULL)
        log(env, fmi3Error, "logStatusError", "this FMU is for Co-Simulation only");
    return NULL;
#endif
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resources,
                                         fmi3Boolean visible, fmi3Boolean logging, fmi3Boolean event_mode_used,
                                         fmi3Boolean early_return_allowed, const fmi3ValueReference required[],
                                         size_t n_required, fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                         fmi3IntermediateUpdateCallback intermediate)
{
    (void)resources; (void)visible; (void)early_return_allowed; (void)required; (void)n_required;
    (void)intermediate;
#if DYN_FMU_CS
    if (event_mode_used) {
        if (log != NULL)
            log(env, fmi3Error, "logStatusError", "hasEventMode is false");
        return NULL;
    }
    return instantiate(name, token, 0, logging, env, log);
#else
    (void)name; (void)token; (void)logging; (void)event_mode_used;
    if (log != NULL)
        log(env, fmi3Error, "logStatusError", "this FMU is for Model Exchange only");
    return NULL;
#endif
}

fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resources,
                                               fmi3Boolean visible, fmi3Boolean logging, fmi3InstanceEnvironment env,
                                               fmi3LogMessageCallback log, fmi3ClockUpdateCallback clock_update,
                                               fmi3LockPreemptionCallback lock, fmi3UnlockPreemptionCallback unlock)
{
    (void)name; (void)token; (void)resources; (void)visible; (void)logging; (void)clock_update; (void)lock;
    (void)unlock;
    if (log != NULL)
        log(env, fmi3Error, "logStatusError", "this FMU does not offer Scheduled Execution");
    return NULL;
}

void fmi3FreeInstance(fmi3Instance inst)
{
    dyn_fmu_free((instance *)inst);
}

fmi3Status fmi3EnterInitializationMode(fmi3Instance inst, fmi3Boolean tolerance_defined, fmi3Float64 tolerance,
                                       fmi3Float64 start, fmi3Boolean stop_defined, fmi3Float64 stop)
{
    instance *c = (instance *)inst;
    dyn_fmu_setup(c, tolerance_defined, tolerance, start, stop_defined, stop);
    c->mode = M_INIT;
    return fmi3OK;
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance inst)
{
    instance *c = (instance *)inst;
    const char *why = dyn_fmu_exit_initialization(c);
    return why ? fail(c, why) : fmi3OK;
}

fmi3Status fmi3EnterEventMode(fmi3Instance inst)
{
    ((instance *)inst)->mode = M_EVENT;
    return fmi3OK;
}

fmi3Status fmi3Terminate(fmi3Instance inst)
{
    ((instance *)inst)->mode = M_TERMINATED;
    return fmi3OK;
}

fmi3Status fmi3Reset(fmi3Instance inst)
{
    dyn_fmu_reset((instance *)inst);
    return fmi3OK;
}

/* ------------------------------------------------------------------ variables */
fmi3Status fmi3GetFloat64(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, fmi3Float64 values[],
                          size_t nvalues)
{
    instance *c = (instance *)inst;
    if (nvalues != nvr)
        return fail(c, "the FMU's variables are scalars: one value per value reference");
    for (size_t k = 0; k < nvr; ++k) {
        const char *why = NULL;
        if (vr[k] == VR_END)
            values[k] = c->t;                     /* the independent variable, time */
        else
            why = dyn_fmu_get(c, vr[k], &values[k]);
        if (why)
            return fail(c, why);
    }
    return fmi3OK;
}

fmi3Status fmi3SetFloat64(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, const fmi3Float64 values[],
                          size_t nvalues)
{
    instance *c = (instance *)inst;
    if (nvalues != nvr)
        return fail(c, "the FMU's variables are scalars: one value per value reference");
    for (size_t k = 0; k < nvr; ++k) {
        const char *why = dyn_fmu_set(c, vr[k], values[k]);
        if (why)
            return fail(c, why);
    }
    changed(c);
    return fmi3OK;
}

/* the types the FMU has no variables of */
#define DYN_FMI3_NONE(Type, CType)                                                                            \
    fmi3Status fmi3Get##Type(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, CType values[],     \
                             size_t nvalues)                                                                  \
    {                                                                                                         \
        (void)vr; (void)values; (void)nvalues;                                                                \
        return nvr ? fail((instance *)inst, "the FMU has no " #Type " variables") : fmi3OK;                   \
    }                                                                                                         \
    fmi3Status fmi3Set##Type(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, const CType values[], \
                             size_t nvalues)                                                                  \
    {                                                                                                         \
        (void)vr; (void)values; (void)nvalues;                                                                \
        return nvr ? fail((instance *)inst, "the FMU has no " #Type " variables") : fmi3OK;                   \
    }
DYN_FMI3_NONE(Float32, fmi3Float32)
DYN_FMI3_NONE(Int8, fmi3Int8)
DYN_FMI3_NONE(UInt8, fmi3UInt8)
DYN_FMI3_NONE(Int16, fmi3Int16)
DYN_FMI3_NONE(UInt16, fmi3UInt16)
DYN_FMI3_NONE(Int32, fmi3Int32)
DYN_FMI3_NONE(UInt32, fmi3UInt32)
DYN_FMI3_NONE(Int64, fmi3Int64)
DYN_FMI3_NONE(UInt64, fmi3UInt64)
DYN_FMI3_NONE(Boolean, fmi3Boolean)
DYN_FMI3_NONE(String, fmi3String)

fmi3Status fmi3GetBinary(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, size_t sizes[],
                         fmi3Binary values[], size_t nvalues)
{
    (void)vr; (void)sizes; (void)values; (void)nvalues;
    return nvr ? fail((instance *)inst, "the FMU has no Binary variables") : fmi3OK;
}

fmi3Status fmi3SetBinary(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, const size_t sizes[],
                         const fmi3Binary values[], size_t nvalues)
{
    (void)vr; (void)sizes; (void)values; (void)nvalues;
    return nvr ? fail((instance *)inst, "the FMU has no Binary variables") : fmi3OK;
}

fmi3Status fmi3GetClock(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, fmi3Clock values[])
{
    (void)vr; (void)values;
    return nvr ? fail((instance *)inst, "the FMU has no clocks") : fmi3OK;
}

fmi3Status fmi3SetClock(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, const fmi3Clock values[])
{
    (void)vr; (void)values;
    return nvr ? fail((instance *)inst, "the FMU has no clocks") : fmi3OK;
}

fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance inst, fmi3ValueReference vr, size_t *n)
{
    (void)vr; (void)n;
    return fail((instance *)inst, "the variables' dependencies are not given");
}

fmi3Status fmi3GetVariableDependencies(fmi3Instance inst, fmi3ValueReference dependent, size_t element[],
                                       fmi3ValueReference independents[], size_t elements[],
                                       fmi3DependencyKind kinds[], size_t n)
{
    (void)dependent; (void)element; (void)independents; (void)elements; (void)kinds; (void)n;
    return fail((instance *)inst, "the variables' dependencies are not given");
}

/* ------------------------------------------------------------------ what the FMU does not offer */
#define DYN_FMI3_REFUSE(why) return fail((instance *)inst, why)

fmi3Status fmi3GetFMUState(fmi3Instance inst, fmi3FMUState *state)
{
    (void)state;
    DYN_FMI3_REFUSE("canGetAndSetFMUState is false");
}

fmi3Status fmi3SetFMUState(fmi3Instance inst, fmi3FMUState state)
{
    (void)state;
    DYN_FMI3_REFUSE("canGetAndSetFMUState is false");
}

fmi3Status fmi3FreeFMUState(fmi3Instance inst, fmi3FMUState *state)
{
    (void)state;
    DYN_FMI3_REFUSE("canGetAndSetFMUState is false");
}

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance inst, fmi3FMUState state, size_t *size)
{
    (void)state; (void)size;
    DYN_FMI3_REFUSE("canSerializeFMUState is false");
}

fmi3Status fmi3SerializeFMUState(fmi3Instance inst, fmi3FMUState state, fmi3Byte data[], size_t size)
{
    (void)state; (void)data; (void)size;
    DYN_FMI3_REFUSE("canSerializeFMUState is false");
}

fmi3Status fmi3DeserializeFMUState(fmi3Instance inst, const fmi3Byte data[], size_t size, fmi3FMUState *state)
{
    (void)state; (void)data; (void)size;
    DYN_FMI3_REFUSE("canSerializeFMUState is false");
}

fmi3Status fmi3GetDirectionalDerivative(fmi3Instance inst, const fmi3ValueReference unknowns[], size_t nu,
                                        const fmi3ValueReference knowns[], size_t nk, const fmi3Float64 seed[],
                                        size_t ns, fmi3Float64 sensitivity[], size_t nsens)
{
    (void)unknowns; (void)nu; (void)knowns; (void)nk; (void)seed; (void)ns; (void)sensitivity; (void)nsens;
    DYN_FMI3_REFUSE("providesDirectionalDerivatives is false");
}

fmi3Status fmi3GetAdjointDerivative(fmi3Instance inst, const fmi3ValueReference unknowns[], size_t nu,
                                    const fmi3ValueReference knowns[], size_t nk, const fmi3Float64 seed[],
                                    size_t ns, fmi3Float64 sensitivity[], size_t nsens)
{
    (void)unknowns; (void)nu; (void)knowns; (void)nk; (void)seed; (void)ns; (void)sensitivity; (void)nsens;
    DYN_FMI3_REFUSE("providesAdjointDerivatives is false");
}

fmi3Status fmi3EnterConfigurationMode(fmi3Instance inst)
{
    DYN_FMI3_REFUSE("the FMU has no structural parameters");
}

fmi3Status fmi3ExitConfigurationMode(fmi3Instance inst)
{
    DYN_FMI3_REFUSE("the FMU has no structural parameters");
}

fmi3Status fmi3GetIntervalDecimal(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                  fmi3Float64 intervals[], fmi3IntervalQualifier qualifiers[])
{
    (void)vr; (void)nvr; (void)intervals; (void)qualifiers;
    DYN_FMI3_REFUSE("the FMU has no clocks");
}

fmi3Status fmi3GetIntervalFraction(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                   fmi3UInt64 counters[], fmi3UInt64 resolutions[],
                                   fmi3IntervalQualifier qualifiers[])
{
    (void)vr; (void)nvr; (void)counters; (void)resolutions; (void)qualifiers;
    DYN_FMI3_REFUSE("the FMU has no clocks");
}

fmi3Status fmi3GetShiftDecimal(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr, fmi3Float64 shifts[])
{
    (void)vr; (void)nvr; (void)shifts;
    DYN_FMI3_REFUSE("the FMU has no clocks");
}

fmi3Status fmi3GetShiftFraction(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                fmi3UInt64 counters[], fmi3UInt64 resolutions[])
{
    (void)vr; (void)nvr; (void)counters; (void)resolutions;
    DYN_FMI3_REFUSE("the FMU has no clocks");
}

fmi3Status fmi3SetIntervalDecimal(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                  const fmi3Float64 intervals[])
{
    (void)vr; (void)nvr; (void)intervals;
    DYN_FMI3_REFUSE("the FMU has no clocks");
}

fmi3Status fmi3SetIntervalFraction(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                   const fmi3UInt64 counters[], const fmi3UInt64 resolutions[])
{
    (void)vr; (void)nvr; (void)counters; (void)resolutions;
    DYN_FMI3_REFUSE("the FMU has no clocks");
}

fmi3Status fmi3SetShiftDecimal(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                               const fmi3Float64 shifts[])
{
    (void)vr; (void)nvr; (void)shifts;
    DYN_FMI3_REFUSE("the FMU has no clocks");
}

fmi3Status fmi3SetShiftFraction(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                const fmi3UInt64 counters[], const fmi3UInt64 resolutions[])
{
    (void)vr; (void)nvr; (void)counters; (void)resolutions;
    DYN_FMI3_REFUSE("the FMU has no clocks");
}

fmi3Status fmi3ActivateModelPartition(fmi3Instance inst, fmi3ValueReference clock, fmi3Float64 time)
{
    (void)clock; (void)time;
    DYN_FMI3_REFUSE("this FMU does not offer Scheduled Execution");
}

/* ------------------------------------------------------------------ events (Model Exchange) */
fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance inst)
{
    (void)inst;
    return fmi3OK;
}

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance inst, fmi3Boolean *update_needed, fmi3Boolean *terminate,
                                    fmi3Boolean *nominals_changed, fmi3Boolean *values_changed,
                                    fmi3Boolean *next_time_defined, fmi3Float64 *next_time)
{
    instance *c = (instance *)inst;
    int moved;
    const char *why;
    *update_needed = fmi3False;
    *terminate = fmi3False;
    *nominals_changed = fmi3False;
    *values_changed = fmi3False;
    *next_time_defined = fmi3False;
    *next_time = 0.0;
    why = dyn_fmu_event_projection(c, &moved);
    if (why)
        return fail(c, why);
    *values_changed = moved ? fmi3True : fmi3False;
    return fmi3OK;
}

/* ------------------------------------------------------------------ Model Exchange */
#define DYN_FMI(name) fmi3##name
#define DYN_FMI_INSTANCE fmi3Instance
#define DYN_FMI_REAL fmi3Float64
#define DYN_FMI_DERIVATIVES fmi3GetContinuousStateDerivatives
#include "dynamica_fmu_me.h"

fmi3Status fmi3GetEventIndicators(fmi3Instance inst, fmi3Float64 indicators[], size_t ni)
{
    (void)indicators;
    return ni == 0 ? fmi3OK : fail((instance *)inst, "the FMU has no event indicators");
}

fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance inst, fmi3Float64 nominals[], size_t nx)
{
    (void)inst;
    for (size_t k = 0; k < nx; ++k)
        nominals[k] = 1.0;
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance inst, size_t *n)
{
    (void)inst;
    *n = 0;
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance inst, size_t *n)
{
    (void)inst;
    *n = NY;
    return fmi3OK;
}

/* ------------------------------------------------------------------ Co-Simulation */
fmi3Status fmi3EnterStepMode(fmi3Instance inst)
{
    ((instance *)inst)->mode = M_STEP;
    return fmi3OK;
}

fmi3Status fmi3GetOutputDerivatives(fmi3Instance inst, const fmi3ValueReference vr[], size_t nvr,
                                    const fmi3Int32 orders[], fmi3Float64 values[], size_t nvalues)
{
    (void)vr; (void)orders; (void)values; (void)nvalues;
    return nvr ? fail((instance *)inst, "maxOutputDerivativeOrder is 0") : fmi3OK;
}

fmi3Status fmi3DoStep(fmi3Instance inst, fmi3Float64 t, fmi3Float64 h, fmi3Boolean no_set_prior,
                      fmi3Boolean *event_handling_needed, fmi3Boolean *terminate, fmi3Boolean *early_return,
                      fmi3Float64 *last_successful_time)
{
    instance *c = (instance *)inst;
    char msg[200];
    const char *why;
    (void)no_set_prior;
    why = dyn_fmu_do_step(c, t, h, msg, sizeof msg);
    *event_handling_needed = fmi3False;
    *terminate = fmi3False;
    *early_return = fmi3False;
    *last_successful_time = c->t;
    return why ? fail(c, why) : fmi3OK;
}

#endif

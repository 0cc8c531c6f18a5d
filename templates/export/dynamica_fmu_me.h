/* dynamica_fmu_me.h: the Model Exchange functions that FMI 2.0 and 3.0 define alike (continuous
   time mode, the integrator's step, time and states in, derivatives and states out), written once
   over the shared instance (dynamica_fmu.h). The interface including it defines first:
   DYN_FMI(name)        the standard's function and type names (fmi2##name, fmi3##name),
   DYN_FMI_INSTANCE     the instance handle (fmi2Component, fmi3Instance),
   DYN_FMI_REAL         the real type (fmi2Real, fmi3Float64),
   DYN_FMI_DERIVATIVES  the name of the derivatives function (fmi2GetDerivatives,
                        fmi3GetContinuousStateDerivatives),
   and fail(c, message), which logs an error and returns DYN_FMI(Error). */
#ifndef DYNAMICA_FMU_ME_H
#define DYNAMICA_FMU_ME_H

DYN_FMI(Status) DYN_FMI(EnterContinuousTimeMode)(DYN_FMI_INSTANCE comp)
{
    ((instance *)comp)->mode = M_CONT;
    return DYN_FMI(OK);
}

DYN_FMI(Status) DYN_FMI(CompletedIntegratorStep)(DYN_FMI_INSTANCE comp, DYN_FMI(Boolean) no_set_prior,
                                                 DYN_FMI(Boolean) *enter_event, DYN_FMI(Boolean) *terminate)
{
    (void)no_set_prior;
    *terminate = DYN_FMI(False);
    /* the loops' constraints drifted: a step event, in which the event mode's update projects */
    *enter_event = dyn_fmu_drifted((instance *)comp) ? DYN_FMI(True) : DYN_FMI(False);
    return DYN_FMI(OK);
}

DYN_FMI(Status) DYN_FMI(SetTime)(DYN_FMI_INSTANCE comp, DYN_FMI_REAL time)
{
    instance *c = (instance *)comp;
    c->t = time;
    changed(c);
    return DYN_FMI(OK);
}

DYN_FMI(Status) DYN_FMI(SetContinuousStates)(DYN_FMI_INSTANCE comp, const DYN_FMI_REAL x[], size_t nx)
{
    instance *c = (instance *)comp;
    const char *why = dyn_fmu_set_states(c, x, nx);
    return why ? fail(c, why) : DYN_FMI(OK);
}

DYN_FMI(Status) DYN_FMI_DERIVATIVES(DYN_FMI_INSTANCE comp, DYN_FMI_REAL dx[], size_t nx)
{
    instance *c = (instance *)comp;
    const char *why = dyn_fmu_get_derivatives(c, dx, nx);
    return why ? fail(c, why) : DYN_FMI(OK);
}

DYN_FMI(Status) DYN_FMI(GetContinuousStates)(DYN_FMI_INSTANCE comp, DYN_FMI_REAL x[], size_t nx)
{
    instance *c = (instance *)comp;
    if (nx != NY)
        return fail(c, "wrong number of continuous states");
    memcpy(x, c->y, NY * sizeof(double));
    return DYN_FMI(OK);
}

#endif

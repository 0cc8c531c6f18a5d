"""Equations that leave Python (docs/export.md): a standalone C99 library (c_library.py) and an
FMI 2.0 or 3.0 FMU for Model Exchange and Co-Simulation (fmu.py), both from the kernels the
compiled module is made of, with no Python inside."""

from __future__ import annotations

from dynamica.errors import DynamicaError


class ExportError(DynamicaError, ValueError):
    """A model (or a request) that does not export, with the reason."""


def export_c(model, directory, form=None, backend="c"):
    """The standalone C library of a model (a file name or a loaded model) in `directory`."""
    from dynamica.runtime.export.c_library import export_c as run
    return run(model, directory, form=form, backend=backend)


def export_fmu(model, path, kind="both", form=None, **options):
    """An FMI 2.0 FMU (linux64) of a model at `path` (kind "me", "cs" or "both"; fmi="3": FMI 3.0)."""
    from dynamica.runtime.export.fmu import export_fmu as run
    return run(model, path, kind=kind, form=form, **options)


__all__ = ["ExportError", "export_c", "export_fmu"]

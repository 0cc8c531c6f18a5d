"""The one error hierarchy of dynamica (docs/design.md)."""

from __future__ import annotations

from dataclasses import dataclass


class DynamicaError(Exception):
    """Base class of every error dynamica raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a model file: where (entry path) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"`{self.path}`: {self.message}" if self.path else self.message


class ModelError(DynamicaError, ValueError):
    """A model file is invalid. Lists every problem found, each with its entry path."""

    def __init__(self, file: str, problems):
        self.file = str(file)
        self.problems = tuple(problems)
        lines = [f"{self.file}: {len(self.problems)} problem(s) in the model:"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


class InputError(DynamicaError, ValueError):
    """An input of the model (`inputs:`) is missing or malformed at run time (a signal, a
    controller's answer): the message names the model file and the input."""


class OptionError(DynamicaError, ValueError):
    """An option of a command cannot be read (a NAME=VALUE entry of `--set`, `--start`, `--input`,
    ...: runtime/paramsets.py): the message names the option and every bad entry."""


class BuildError(DynamicaError):
    """Compiling a generated module failed; `log` holds the compiler output."""

    def __init__(self, message: str, log: str = ""):
        self.log = log
        super().__init__(f"{message}\n--- compiler log ---\n{log}" if log else message)


class IntegrationError(DynamicaError):
    """An integrator could not continue (t, step size and the offending component)."""


class CacheError(DynamicaError):
    """The module cache cannot be used (a location that cannot be created or written, a full disk);
    the message names the directory and the remedy (DYNAMICA_CACHE)."""


class SingularStartWarning(RuntimeWarning):
    """A run starts at, or within the gap of, a singular configuration of its closed loops, where
    which branch the motion continues on is not resolved: with adams, radau and ida when their start
    across (runtime/integrators/singular_start.py) cannot choose the branch (a start at rest,
    iterations that do not settle, a landing still inside the gap; the message says which).
    docs/loops.md, "Adams: stepping across"."""


class SingularPassageWarning(RuntimeWarning):
    """A step across a singular configuration of the closed loops landed off the state its
    polynomial extrapolated (the projection onto the constraints moved it by a sizeable part of the
    jump): the motion may have turned onto another branch there. The message names the loops and t.
    docs/loops.md, "A slider moving fastest"."""


class CacheWarning(UserWarning):
    """A cached module was damaged or foreign and is rebuilt (the message says why)."""


def user_stacklevel() -> int:
    """The stacklevel, for a warning issued by the caller of this function, that points at the first
    frame outside dynamica (the user's call)."""
    import inspect
    here = inspect.currentframe()
    frame, level = (here.f_back if here is not None else None), 1
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "dynamica":
        frame, level = frame.f_back, level + 1
    return level

"""What every backend shares: the bundle, the templates, cutting long kernels and their zero fills."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from importlib import resources

import jinja2

from dynamica.generator.ir import nodes as ir

#: expression nodes per generated function: bounds the compiler's time and memory on large programs
CHUNK = 4000
#: workspaces up to this many doubles live on the stack, larger ones on the heap
STACK_DOUBLES = 16384
#: runs of at least this many output entries stored as the literal 0 become one fill (`zero_runs`)
ZERO_RUN = 8


@dataclass(frozen=True)
class SourceBundle:
    module_name: str
    backend: str
    files: tuple            # ((file name, text), ...); the first is the module file (C)
    signature: str
    op_count: int = 0       # arithmetic operations of the kernels (chooses compiler effort)
    compiled: tuple = ()    # ((file name, language), ...) compiled apart and linked with the module file

    @property
    def main(self) -> tuple:
        return self.files[0]


def env() -> jinja2.Environment:
    path = resources.files("dynamica.templates")
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(path)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)


def helper_files(names) -> tuple:
    """Fixed files of dynamica.templates.native, copied next to the generated ones."""
    return tuple((h, resources.files("dynamica.templates.native").joinpath(h).read_text()) for h in names)


def _vars(node, acc):
    """Names of the temporaries an expression reads."""
    if isinstance(node, ir.Var):
        acc.add(node.name)
    for k in ir.children(node):
        _vars(k, acc)
    return acc


def _size(node) -> int:
    """Number of expression nodes."""
    return 1 + sum(_size(k) for k in ir.children(node))


def split_kernel(kernel: ir.Kernel, chunk: int = CHUNK):
    """Cut the straight-line body into functions of at most about `chunk` expression nodes.

    Temporaries used outside the part that defines them move to a workspace `dyn_w`.
    Returns (parts, shared) with parts a list of statement tuples and shared the workspace
    index of each shared temporary.
    """
    body = kernel.body
    parts, cur, size = [], [], 0
    for st in body:
        cur.append(st)
        size += _size(st.value)
        if size >= chunk:
            parts.append(tuple(cur))
            cur, size = [], 0
    if cur or not parts:
        parts.append(tuple(cur))
    home = {}
    for ci, part in enumerate(parts):
        for st in part:
            if isinstance(st, ir.Assign):
                home[st.target] = ci
    shared = {}
    for ci, part in enumerate(parts):
        for st in part:
            for v in sorted(_vars(st.value, set()), key=lambda v: (home[v], v)):
                if home[v] != ci and v not in shared:
                    shared[v] = None
    position = {st.target: k for k, st in enumerate(body) if isinstance(st, ir.Assign)}
    order = sorted(shared, key=position.__getitem__)
    return parts, {v: k for k, v in enumerate(order)}


def zero_runs(kernel: ir.Kernel, min_run: int):
    """Stores of the literal 0 to `min_run` or more consecutive entries of an output array, e.g.
    the structural zeros of a star's mass matrix (a 500-body star: 248 502 of its 250 000 entries).

    Returns (kernel without those stores, [(array, start, length)]). Each run becomes one fill
    after the kernel's parts; as single stores, they made the C compiler's alias and dead-store
    passes superlinear (a 200-body star: 40 000 stores of M, 39 402 of them zero)."""
    count, zeros = {}, {}
    for st in kernel.body:
        if isinstance(st, ir.Store):
            count[(st.array, st.index)] = count.get((st.array, st.index), 0) + 1
            if isinstance(st.value, ir.Num) and st.value.value == 0.0 and math.copysign(1.0, st.value.value) > 0:
                zeros.setdefault(st.array, []).append(st.index)
    runs, drop = [], set()
    for array in sorted(zeros):
        idx = sorted(i for i in set(zeros[array]) if count[(array, i)] == 1)
        start = 0
        for k in range(1, len(idx) + 1):
            if k == len(idx) or idx[k] != idx[k - 1] + 1:
                if k - start >= min_run:
                    runs.append((array, idx[start], k - start))
                    drop.update((array, i) for i in idx[start:k])
                start = k
    if not runs:
        return kernel, []
    body = tuple(st for st in kernel.body if not (isinstance(st, ir.Store) and (st.array, st.index) in drop))
    return replace(kernel, body=body), runs


@dataclass(frozen=True)
class CutKernel:
    """A kernel ready to print: cut into parts, its zero runs taken out (`cut`)."""
    kernel: ir.Kernel        # without the stores that the fills replace
    zeros: list              # [(array, start, length)] fills after the parts
    parts: list              # statement tuples, one function each
    shared: dict             # temporary -> index in the workspace dyn_w (used across parts)
    arrays: dict             # IR array -> its name in the code (in_<input>, out_<output>)


def cut(kernel: ir.Kernel) -> CutKernel:
    """What every backend does to a kernel before printing it: zero runs, parts, workspace."""
    arrays = {i.name: f"in_{i.name}" for i in kernel.inputs} | {o.name: f"out_{o.name}" for o in kernel.outputs}
    kernel, zeros = zero_runs(kernel, ZERO_RUN)
    parts, shared = split_kernel(kernel, CHUNK)
    return CutKernel(kernel, zeros, parts, shared, arrays)


def print_parts(ck: CutKernel, pr, statement, store_target) -> list:
    """[(lines, local temporaries)] per part: `statement(lhs, value)` -> lines of one assignment,
    `store_target(Store)` -> the output element it writes; `pr` prints names and values."""
    out = []
    for part in ck.parts:
        lines, local = [], []
        for st in part:
            if isinstance(st, ir.Assign):
                if st.target not in ck.shared:
                    local.append(st.target)
                lines += statement(pr.var(st.target), st.value)
            elif isinstance(st, ir.Store):
                lines += statement(store_target(st), st.value)
            else:
                raise TypeError(f"unknown statement {type(st).__name__}")
        out.append((lines, local))
    return out


def kernel_output_size(mod: ir.ModuleIR, kernel: str, array: str) -> int:
    k = next(k for k in mod.kernels if k.name == kernel)
    return next(o.size for o in k.outputs if o.name == array)


def kernel_names(mod: ir.ModuleIR) -> set:
    return {k.name for k in mod.kernels}

"""Lowering (generator/ir/lower.py) on its own, and the IR interpreter (ir.interpret) as the
differential reference: the interpreter against sympy's lambdify of the program it was lowered
from, and the compiled module against the interpreter."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import dynamica
from dynamica.generator.forms import kernel_specs
from dynamica.generator.ir import nodes as ir
from dynamica.generator.ir.lower import ToIR, _needed, lower_kernel, parameter_layout, value_numbering
from dynamica.generator.ir.program import Program
from dynamica.generator.spec import expr as ex

from conftest import MODELS

x, y, z = (sp.Symbol(n, real=True) for n in ("q:x", "q:y", "q:z"))
ARGS = {x: ir.Arg("q", 0), y: ir.Arg("q", 1), z: ir.Arg("q", 2)}


def test_value_numbering_names_each_repeated_subtree_once():
    s = ir.Add((ir.Arg("q", 0), ir.Arg("q", 1)))            # q0 + q1, used three times
    neg = ir.Mul((ir.Num(-1.0), ir.Arg("q", 2)))             # -q2: never worth a temporary
    body = [ir.Store("out", 0, ir.Mul((s, s))), ir.Store("out", 1, ir.Call("sin", (s,))),
            ir.Store("out", 2, ir.Add((neg, ir.Num(1.0)))), ir.Store("out", 3, ir.Mul((neg, ir.Num(2.0))))]
    out, temps = value_numbering(body)
    assert temps == ["z0"]
    assert out[0] == ir.Assign("z0", s)
    assert out[1] == ir.Store("out", 0, ir.Mul((ir.Var("z0"), ir.Var("z0"))))
    assert out[2] == ir.Store("out", 1, ir.Call("sin", (ir.Var("z0"),)))
    assert out[3].value.terms[0] == neg and out[4].value.factors[0] == neg


def test_value_numbering_keeps_a_top_level_repeat_as_it_is():
    s = ir.Add((ir.Arg("q", 0), ir.Arg("q", 1)))
    out, temps = value_numbering([ir.Store("a", 0, s), ir.Store("a", 1, s)])
    assert temps == [] and [st.value for st in out] == [s, s]


def test_dead_code_elimination_and_alias_order():
    a, b, c, d = (sp.Symbol(n, real=True) for n in "abcd")
    prog = [(a, x + 1), (b, a * y), (c, sp.sin(x)), (d, a + x)]
    assert [s for s, _ in _needed(prog, [b])] == [a, b]              # c, d are dead
    assert _needed(prog, [x]) == []
    # with an alias y -> d, b depends on d, which comes later in the program: topological order
    order = [s for s, _ in _needed(prog, [b], aliases={y: d})]
    assert set(order) == {a, b, d} and order.index(d) < order.index(b) and order.index(a) < order.index(d)
    with pytest.raises(ValueError, match="cyclic"):
        _needed([(a, y + 1)], [a], aliases={y: a})


def test_to_ir_dispatch_and_refusals():
    conv = ToIR(ARGS)
    assert conv(sp.sqrt(x)) == ir.Call("sqrt", (ir.Arg("q", 0),))
    assert conv(1 / sp.sqrt(x)) == ir.Pow(ir.Call("sqrt", (ir.Arg("q", 0),)), ir.Num(-1.0))
    assert conv(sp.Max(x, y, z)) == ir.Call("fmax", (ir.Call("fmax", (ir.Arg("q", 0), ir.Arg("q", 1))),
                                                    ir.Arg("q", 2)))
    with pytest.raises(TypeError, match="no IR counterpart"):
        conv(sp.gamma(x))
    with pytest.raises(KeyError, match="not an input"):
        conv(sp.Symbol("p:m", real=True))


def test_an_intermediate_cannot_shadow_an_input():
    prog = Program()
    m = prog.let("m3", x * y)
    with pytest.raises(ValueError, match="shadows an input"):
        lower_kernel("k", prog, (ir.Input("q", 3),), [("out", [m])], {**ARGS, m: ir.Arg("q", 2)})


@pytest.mark.parametrize("name", ["t", "z7", "in_q", "dyn_w", "out_M", "q:a", "double", "a b", "1x"])
def test_generated_names_are_checked(name):
    with pytest.raises(ValueError, match="cannot name a generated intermediate"):
        Program().let(name, x * y)


# ------------------------------------------------------------------ the interpreter
def _lambdify_kernel(program, outputs, inputs):
    """Values of `outputs` (expressions of `program`) by sympy.lambdify, one assignment at a time."""
    mods = [{"Heaviside": lambda a, h=0.5: 1.0 if a > 0 else (0.0 if a < 0 else 0.5),
             "sign": lambda a: float((a > 0) - (a < 0)), "Min": min, "Max": max}, "math"]
    vals = dict(inputs)
    for sym, e in program.assignments:
        free = sorted(e.free_symbols, key=str)
        if all(s in vals for s in free):
            vals[sym] = sp.lambdify(free, e, modules=mods)(*(vals[s] for s in free))
    out = []
    for e in outputs:
        e = sp.sympify(e)
        free = sorted(e.free_symbols, key=str)
        out.append(float(sp.lambdify(free, e, modules=mods)(*(vals[s] for s in free))))
    return out


@pytest.mark.parametrize("name, form", [("double_pendulum", "composite"), ("forces_demo", "articulated"),
                                        ("governor", "hamilton-composite"), ("driven", "ltdl")])
def test_interpreter_equals_lambdify(name, form):
    g = dynamica.generate(MODELS / f"{name}.yaml", form=form)
    eom, spec = g.equations, g.spec
    _, defaults, psym = parameter_layout(spec)
    rng = np.random.default_rng(7)
    n = len(eom.coordinates)
    kernels = {k.name: k for k in g.module_ir.kernels}
    compared = 0
    for ks in kernel_specs(eom):
        if ks.name not in kernels or ks.program is not None or ks.aliases:
            continue                  # outputs live in a program of their own; aliased kernels below
        values = {"t": 0.37, "p": list(defaults)}
        sym = {ex.T: 0.37, **{s: defaults[a.index] for s, a in psym.items()}}
        for role in ks.inputs:
            if role in ("t", "p"):
                continue
            symbols = {"q": eom.q, "qd": eom.qd, "pm": eom.pm}.get(role) or dict(ks.symbols)[role]
            vec = rng.uniform(-1.0, 1.0, len(symbols))
            values[role] = list(vec)
            sym.update(zip(symbols, vec))
        got = ir.interpret(kernels[ks.name], values)
        for array, exprs in ks.outputs:
            want = _lambdify_kernel(eom.program, exprs, sym)
            np.testing.assert_allclose(got[array], want, rtol=1e-11, atol=1e-11, err_msg=f"{ks.name}.{array}")
            compared += len(exprs)
    assert compared >= n * n > 0


@pytest.mark.parametrize("backend", ["c", "fortran"])
def test_compiled_module_equals_interpreter(backend, tmp_path):
    import shutil
    if backend == "fortran" and shutil.which("gfortran") is None:
        pytest.skip("gfortran is not installed")
    g = dynamica.generate(MODELS / "chain7.yaml", form="composite", backend=backend)
    model = dynamica.load(str(MODELS / "chain7.yaml"), form="composite", backend=backend)
    kernels = {k.name: k for k in g.module_ir.kernels}
    rng = np.random.default_rng(3)
    p = model.param_vector()
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n)
        ref = ir.interpret(kernels["dynamics"], {"t": 0.0, "q": q, "qd": qd, "p": p})["qdd"]
        np.testing.assert_allclose(model.qdd(q, qd), ref, rtol=1e-12, atol=1e-12)
        M = ir.interpret(kernels["mass"], {"t": 0.0, "q": q, "p": p})["M"]
        np.testing.assert_allclose(model.mass_matrix(q).ravel(), M, rtol=1e-12, atol=1e-12)


def test_interpreter_functions_have_c_semantics():
    k = ir.Kernel("k", (ir.Input("q", 1),), (ir.Output("out", 4),), (), tuple(
        ir.Store("out", j, ir.Call(f, args)) for j, (f, args) in enumerate([
            ("heaviside", (ir.Num(0.0),)), ("sign", (ir.Num(0.0),)),
            ("fmin", (ir.Num(math.nan), ir.Arg("q", 0))), ("fmax", (ir.Arg("q", 0), ir.Num(math.nan)))])))
    assert ir.interpret(k, {"q": [2.5]})["out"] == [0.5, 0.0, 2.5, 2.5]

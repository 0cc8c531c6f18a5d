"""`dynamica simulate` prints the integration's time apart from the start-up (imports, a Jacobian
module): `prepare` does the start-up, after which `simulate` imports nothing more."""

import re
import subprocess
import sys

import pytest

from conftest import MODELS

PROBE = """
import sys, dynamica
from dynamica.runtime.integrators.simulate import prepare
m = dynamica.load(sys.argv[1])
prepare(m, sys.argv[2])
before = set(sys.modules)
dynamica.simulate(m, 0.2, method=sys.argv[2])
print(sorted(set(sys.modules) - before))
"""


@pytest.mark.parametrize("method", ["adams", "RK45", "radau", "stoermer6"])
def test_prepare_leaves_no_import_to_the_run(method):
    """After prepare, the run imports no module: the time printed is the integration's (scipy's
    import, about 0.3 s, was counted into a 0.03 s run before)."""
    r = subprocess.run([sys.executable, "-c", PROBE, str(MODELS / "double_pendulum.yaml"), method],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout


def test_printed_time_excludes_start_up(monkeypatch, capsys):
    """A start-up made to last 1 s (a sleep in the integrator kind's PREPARE record) is printed as
    start-up, and the integration's time stays below it (a 0.2 s run of a double pendulum takes
    milliseconds; the bound leaves a loaded machine 1 s)."""
    import time

    from dynamica.runtime.cli.main import main
    from dynamica.runtime.integrators import simulate as sim
    original = sim.PREPARE["adams"]

    def slow(*args):
        time.sleep(1.0)
        original(*args)
    monkeypatch.setitem(sim.PREPARE, "adams", slow)
    assert main(["simulate", str(MODELS / "double_pendulum.yaml"), "--t-end", "0.2", "-q"]) == 0
    out = capsys.readouterr().out
    m = re.search(r"RHS calls, \d+ output points\) in ([\d.]+) s; start-up ([\d.]+) s", out)
    assert m, out
    run, start = float(m.group(1)), float(m.group(2))
    assert start >= 1.0 and run < 1.0, out

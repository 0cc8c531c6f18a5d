"""Write the launcher model of D90's initial-level design scheme (dissertation 5.2.2, fig. 5.3)
with N mock-ups: `python models/launcher.py [N] [-o FILE]` (default N = 4,
models/launcher/launcher.yaml; other N: models/launcher/launcher_N.yaml). The model files live in
their own folder: the tests that run every form on every bundled model take models/*.yaml.

The machine: a base with three degrees of freedom (heave, pitch, roll) on four wheel springs that
lift off; four jacks with piecewise stiffness, retracted until the `jacks` stage extends them; a
turntable (azimuth psi) and an elevating part (elevation theta) held by stiff drives; a package of
N guides on the elevating part; in each a mock-up on a helical guide (its travel s_k with the
spin 2 pi s_k / pitch) with two small lateral deflections on stiff centring springs, held by a
stopper spring. Its cyclogram (D90's three preparatory stages and N launch stages):

    travel       statics on the wheels
    jacks        statics: the jacks extended, the wheels lift off
    aim          statics at the aiming angles (psi_aim, theta_aim)
    hold_k       thrust of mock-up k builds up (a ramp from t_k); ends when the stopper's force
                 exceeds F_stop (an event on an output force)
    slide_k      the stopper lets go; the mock-up screws along its guide; ends at the muzzle
                 (an event on s_k)
    fly_k        the mock-up is released (a free body); the gas-dynamic force of its jet acts on
                 the package; until the next launch. The next hold stage removes it.

D90's first launch sub-stage is two stages here (hold, slide): the stopper's release is a latch,
which a stage boundary expresses. Values are plausible for a truck-mounted launcher of 122 mm
rockets (documented in docs/launcher.md), not data of a real machine.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

PARAMETERS = {
    "g": (9.81, "m/s^2", "gravity"),
    # base
    "m_base": (12000.0, "kg", "base (chassis and lower carriage)"),
    "h_base": (1.2, "m", "height of the base frame above the ground at rest"),
    "k_wheel": (1.5e6, "N/m", "wheel (tyre and suspension) stiffness"),
    "c_wheel": (3.0e4, "N s/m", "wheel damping"),
    "r_wheel": (0.3, "m", "free length of a wheel spring"),
    "jack_ext": (0.0, "m", "jack extension (free length); 0: retracted"),
    "k_jack1": (2.0e6, "N/m", "jack stiffness while the ground settles"),
    "k_jack2": (2.0e7, "N/m", "jack stiffness beyond d_jack of compression"),
    "d_jack": (0.01, "m", "compression at which the jack's stiffness changes"),
    "c_jack": (2.0e5, "N s/m", "jack damping"),
    # turntable and elevating part with their drives
    "m_turn": (3000.0, "kg", "turntable"),
    "k_psi": (5.0e7, "N m/rad", "azimuth drive stiffness"),
    "c_psi": (2.0e5, "N m s/rad", "azimuth drive damping"),
    "psi_aim": (0.0, "rad", "azimuth set point"),
    "m_elev": (2500.0, "kg", "elevating part with the guide package"),
    "k_theta": (3.0e7, "N m/rad", "elevation drive stiffness"),
    "c_theta": (1.5e5, "N m s/rad", "elevation drive damping"),
    "theta_aim": (0.0, "rad", "elevation set point"),
    # guides and mock-ups
    "x_breech": (-0.5, "m", "breech of the guides along the elevating part's x"),
    "L_guide": (3.0, "m", "guide length"),
    "pitch": (6.0, "m", "pitch of the helical groove (advance per turn)"),
    "m_mock": (66.0, "kg", "mock-up mass"),
    "l_mock": (2.9, "m", "mock-up length"),
    "k_lat": (2.0e5, "N m/rad", "centring stiffness of a mock-up's lateral deflections"),
    "c_lat": (500.0, "N m s/rad", "centring damping"),
    "k_stop": (2.0e7, "N/m", "stopper stiffness"),
    "c_stop": (2.0e4, "N s/m", "stopper damping"),
    "F_stop": (15000.0, "N", "force at which the stopper lets go"),
    "thrust": (25000.0, "N", "thrust of a mock-up"),
    "t_rise": (0.02, "s", "thrust build-up time"),
    "t_first": (0.1, "s", "ignition of the first mock-up"),
    "dt_salvo": (0.5, "s", "interval between launches"),
    "F_gas": (30000.0, "N", "gas-dynamic force of a jet at the muzzle"),
    "d_gas": (1.0, "m", "decay length of the gas-dynamic force"),
}

WHEELS = [(2.5, 1.0), (2.5, -1.0), (-2.5, 1.0), (-2.5, -1.0)]
JACKS = [(3.2, 1.3), (3.2, -1.3), (-3.2, 1.3), (-3.2, -1.3)]
COLUMNS = 4                     # guides per row of the package


def tube(k: int):
    """(y, z) of guide k (0-based) in the elevating part's frame."""
    row, col = divmod(k, COLUMNS)
    return round((col - (COLUMNS - 1) / 2) * 0.25, 6), round(0.3 + 0.25 * row, 6)


def model(n: int) -> dict:
    params = {name: {"value": v, "unit": u, "description": d} for name, (v, u, d) in PARAMETERS.items()}
    for k in range(1, n + 1):
        params[f"stop_{k}"] = {"value": 1.0, "description": f"1 while the stopper holds mock-up {k}"}
        params[f"gas_{k}"] = {"value": 0.0, "description": f"1 once mock-up {k} has left its guide"}
    bodies = [
        {"name": "base", "parent": "ground",
         "joint": [{"translate": [0, 0, "h_base"]}, {"translate": "z", "q": "z_b"},
                   {"rotate": "y", "q": "pitch_b"}, {"rotate": "x", "q": "roll_b"}],
         "mass": "m_base", "com": [0, 0, 0],
         "inertia": {"Ixx": "m_base*(2.5**2 + 1.5**2)/12", "Iyy": "m_base*(7**2 + 1.5**2)/12",
                     "Izz": "m_base*(7**2 + 2.5**2)/12"}},
        {"name": "turntable", "parent": "base", "joint": {"type": "revolute", "axis": "z", "q": "psi",
                                                          "offset": [-1.0, 0, 0.4]},
         "mass": "m_turn", "com": [0, 0, 0.3], "inertia": [2500, 2500, 4000]},
        {"name": "elevating", "parent": "turntable", "joint": {"type": "revolute", "axis": "-y", "q": "theta",
                                                               "offset": [0.5, 0, 0.6]},
         "mass": "m_elev", "com": [1.2, 0, 0.3], "inertia": [800, 4000, 4000]},
    ]
    forces = []
    for j, (x, y) in enumerate(WHEELS, 1):
        forces.append({"type": "spring_damper", "name": f"wheel_{j}", "body_a": "ground", "point_a": [x, y, 0],
                       "body_b": "base", "point_b": [x, y, "r_wheel - h_base"], "free_length": "r_wheel",
                       "law": "min(0, k_wheel*elongation + c_wheel*elongation_rate)"})
    for j, (x, y) in enumerate(JACKS, 1):
        forces.append({"type": "spring_damper", "name": f"jack_{j}", "body_a": "ground", "point_a": [x, y, 0],
                       "body_b": "base", "point_b": [x, y, "r_wheel - h_base"], "free_length": "jack_ext",
                       "law": "min(0, k_jack2*elongation + (k_jack1 - k_jack2)*max(elongation, -d_jack)"
                              " + c_jack*elongation_rate)"})
    forces += [
        {"type": "joint_spring_damper", "name": "drive_psi", "coordinate": "psi", "stiffness": "k_psi",
         "damping": "c_psi", "neutral": "psi_aim"},
        {"type": "joint_spring_damper", "name": "drive_theta", "coordinate": "theta", "stiffness": "k_theta",
         "damping": "c_theta", "neutral": "theta_aim"},
    ]
    for k in range(1, n + 1):
        y, z = tube(k - 1)
        bodies.append({
            "name": f"mock_{k}", "parent": "elevating",
            "joint": [{"translate": ["x_breech", y, z]}, {"screw": "x", "pitch": "pitch", "q": f"s_{k}"},
                      {"rotate": "y", "q": f"a_{k}"}, {"rotate": "z", "q": f"b_{k}"}],
            "mass": "m_mock", "com": ["l_mock/2", 0, 0],
            "inertia": {"Ixx": "m_mock*0.061**2/2", "Iyy": "m_mock*l_mock**2/12", "Izz": "m_mock*l_mock**2/12"}})
        t_ign = f"(t_first + {k - 1}*dt_salvo)"
        forces += [
            {"type": "joint_spring_damper", "name": f"stopper_{k}", "coordinate": f"s_{k}",
             "stiffness": f"stop_{k}*k_stop", "damping": f"stop_{k}*c_stop"},
            {"type": "joint_spring_damper", "name": f"centre_a_{k}", "coordinate": f"a_{k}", "stiffness": "k_lat",
             "damping": "c_lat"},
            {"type": "joint_spring_damper", "name": f"centre_b_{k}", "coordinate": f"b_{k}", "stiffness": "k_lat",
             "damping": "c_lat"},
            {"type": "body_force", "name": f"thrust_{k}", "body": f"mock_{k}", "point": [0, 0, 0], "frame": "body",
             "force": [f"thrust*min(1, max(0, (t - {t_ign})/t_rise))", 0, 0]},
            {"type": "spring_damper", "name": f"gas_{k}", "body_a": "elevating",
             "point_a": ["x_breech + L_guide", y, z + 0.08], "body_b": f"mock_{k}", "point_b": [0, 0, 0],
             "free_length": 0, "law": f"-gas_{k}*F_gas*exp(-elongation/d_gas)"},
        ]
    return {"name": f"launcher_{n}", "description": __doc__.split("\n\n")[0].replace("\n", " "),
            "parameters": params, "gravity": [0, 0, "-g"], "bodies": bodies, "forces": forces,
            # the start of the first statics: on compressed wheels (at q = 0 every wheel sits exactly at its
            # free length, where its law has a kink, and Newton's first step can tip the base over)
            "initial": {"z_b": -0.03},
            "outputs": {"points": {"muzzle": {"body": "elevating", "at": ["x_breech + L_guide", 0, 0.3]}},
                        "forces": True},
            "simulate": {"output_step": 0.005, "rtol": 1e-8, "atol": 1e-10},
            "stages": stages(n)}


def stages(n: int) -> list:
    out = [{"name": "travel", "type": "statics"},
           {"name": "jacks", "type": "statics", "set": {"jack_ext": 0.45}},
           {"name": "aim", "type": "statics", "set": {"psi_aim": 0.7853645, "theta_aim": 0.9597961}}]
    t_first, dt = PARAMETERS["t_first"][0], PARAMETERS["dt_salvo"][0]
    for k in range(1, n + 1):
        t_k = t_first + (k - 1) * dt
        hold = {"name": f"hold_{k}", "until": round(t_k + 0.4, 6),
                "event": {"expr": f"-stopper_{k}.generalized_force - F_stop", "direction": "rising"}}
        if k > 1:
            hold["remove"] = [f"mock_{k - 1}"]
        out += [hold,
                {"name": f"slide_{k}", "until": round(t_k + 0.45, 6), "set": {f"stop_{k}": 0},
                 "event": {"expr": f"s_{k} - L_guide", "direction": "rising"}},
                {"name": f"fly_{k}", "until": round(t_k + dt if k < n else t_k + 1.5, 6), "set": {f"gas_{k}": 1},
                 "release": [f"mock_{k}"]}]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, nargs="?", default=4, help="number of mock-ups (default 4)")
    ap.add_argument("-o", "--out", help="output file (default: models/launcher/launcher.yaml for N = 4, else "
                    "models/launcher/launcher_N.yaml)")
    args = ap.parse_args(argv)
    if not 1 <= args.n <= 50:
        ap.error("N is 1 to 50 (D90: up to 50 mock-ups)")
    out = Path(args.out) if args.out else Path(__file__).parent / "launcher" / (
        "launcher.yaml" if args.n == 4 else f"launcher_{args.n}.yaml")
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "# generated by models/launcher.py: edit that script, not this file\n" + yaml.safe_dump(
        model(args.n), sort_keys=False, width=110)
    out.write_text(text)
    n_stages = len(stages(args.n))
    print(f"wrote {out}: {args.n} mock-ups, {5 + 3 * args.n} coordinates, {n_stages} stages")


if __name__ == "__main__":
    main()

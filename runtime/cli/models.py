"""Command-line pieces about model files: the options of robot descriptions (--floating,
--mimic, --limits, --torques, ...) on every command that loads a model, `dynamica convert` and `dynamica params`."""

from __future__ import annotations

import argparse
import sys


def add_import_options(p):
    p.add_argument("--floating", action="store_true", help="URDF: the root link on a free joint (6 coordinates "
                   "<root>_x ... <root>_rz) instead of welded to the ground")
    p.add_argument("--mimic", choices=("independent", "coupled"), default=None,
                   help="URDF: mimic joints as independent coordinates (default, with a warning) or coupled")
    p.add_argument("--limits", action=argparse.BooleanOptionalAction, default=None,
                   help="URDF, MJCF: joint limits as `stop` forces (the default; --no-limits leaves them out)")
    p.add_argument("--contacts", nargs="?", const=True, default=None, choices=("ground",),
                   help="MJCF: the geoms' contacts (the default; `--contacts ground`: only the pairs with the "
                        "ground)")
    p.add_argument("--no-contacts", dest="contacts", action="store_false", help="MJCF: no contacts")
    p.add_argument("--frictionloss", action="store_true", help="MJCF: joint friction loss as a regularised "
                   "Coulomb force (otherwise left out, as MuJoCo's constraint flag off)")
    p.add_argument("--actuators", choices=("inputs", "off"), default=None,
                   help="MJCF: the actuators as inputs u_<actuator> (default) or left out (MuJoCo's actuation "
                        "flag off): a simulation needs every input")
    p.add_argument("--torques", choices=("inputs", "off"), default=None,
                   help="URDF, MJCF: an input tau_<joint> per revolute/prismatic (hinge/slide) joint, a joint "
                        "torque or force (default; held at 0 when not given), or none")
    p.add_argument("--saturate", action="store_true", help="URDF, MJCF: the torque inputs clamped to "
                   "<joint>_effort (URDF: +- the <limit effort>; MJCF: the joint's actuatorfrcrange)")
    p.add_argument("--warnings", action="store_true", help="print every warning, also those an earlier "
                   "command printed about this model")


def import_options(args) -> dict:
    """The robot-description options given (none for a model file unless asked, which is an error there)."""
    out = {}
    if getattr(args, "floating", False):
        out["floating"] = True
    if getattr(args, "mimic", None):
        out["mimic"] = args.mimic
    if getattr(args, "limits", None) is not None:
        out["limits"] = args.limits
    if getattr(args, "contacts", None) is not None:
        out["contacts"] = args.contacts
    if getattr(args, "frictionloss", False):
        out["frictionloss"] = True
    if getattr(args, "actuators", None):
        out["actuators"] = args.actuators
    if getattr(args, "torques", None):
        out["torques"] = args.torques
    if getattr(args, "saturate", False):
        out["saturate"] = True
    return out


def cmd_convert(args):
    from dynamica.runtime.cli.convert import convert
    out = convert(args.model, args.output, **import_options(args))
    print(f"model file written to {out.resolve()}")
    return 0


def cmd_params(args):
    from dynamica.runtime.cli.main import load_for_command
    from dynamica.runtime.paramsets import dump_set, overrides
    model = load_for_command(args, check_mass_matrix=False)
    text = dump_set(model, overrides(args, model))
    if args.output:
        from pathlib import Path
        Path(args.output).write_text(text)
        print(f"parameter set written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_frame(args):
    """The kinematics of one body at one state (runtime/kinds/frames.py), printed."""
    import numpy as np

    from dynamica.runtime.cli.main import load_for_command
    from dynamica.runtime.paramsets import scalar_values
    model = load_for_command(args, check_mass_matrix=False)
    at = None
    if args.at:
        try:
            at = [float(x) for x in args.at.split(",")]
        except ValueError:
            at = args.at.split(",")          # the frame's own check names it
    frame = model.frame(args.body, at=at)
    q, qd = model.initial_state()[:2]
    for option, vec in (("--q", q), ("--qd", qd)):
        for name, v in scalar_values(getattr(args, option[2:]), option, model.coordinates, "coordinate").items():
            vec[model.coordinates.index(name)] = v
    ref = args.reference
    pos, R = frame.placement(q)
    np.set_printoptions(precision=6, suppress=True, linewidth=120)
    print(f"frame {args.body} of {model.name}" + (f" at {args.at}" if args.at else "") + f"; reference {ref}")
    print(f"coordinates {', '.join(model.coordinates)}")
    print(f"position {pos}\nrotation (frame -> ground)\n{R}")
    print(f"spatial velocity [linear; angular] {frame.velocity(q, qd, ref)}")
    print(f"J'q' (classical acceleration at q'' = 0) {frame.bias(q, qd, ref)}")
    print(f"Jacobian (6 x {model.n}, rows [linear; angular])\n{frame.jacobian(q, ref)}")
    return 0


def add_parsers(sub, common):
    from dynamica.runtime import paramsets
    p = sub.add_parser("convert", help="write a robot description (URDF, MJCF) as a model file (YAML)",
                       description="A URDF robot (docs/urdf.md) or an MJCF model (docs/mjcf.md) as a readable "
                                   "model file (docs/model_format.md).")
    p.add_argument("model", help="robot description (.urdf; .xml or .mjcf: MJCF by its <mujoco> root, URDF by <robot>)")
    p.add_argument("-o", "--output", required=True, help="the model file to write (YAML)")
    add_import_options(p)
    p.set_defaults(fn=cmd_convert)

    p = sub.add_parser("frame", help="print the kinematics of a body (a URDF link): placement, spatial velocity, "
                       "Jacobian and J'q' at a state",
                       description="Operational-space kinematics of one body at one state (docs/api.md, "
                                   "`model.frame`): the frame's position and rotation, its spatial velocity, "
                                   "J'q' and the frame Jacobian in Pinocchio's references.")
    common(p)
    p.add_argument("body", help="the body (a URDF link, an MJCF body)")
    p.add_argument("--at", help="a point of the body, x,y,z in its axes (default: its origin)")
    p.add_argument("--q", nargs="*", default=[], metavar="NAME=VALUE", help="coordinates (default: the initial state)")
    p.add_argument("--qd", nargs="*", default=[], metavar="NAME=VALUE", help="rates (default: the initial state)")
    p.add_argument("--reference", default="LOCAL_WORLD_ALIGNED", choices=("LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED"),
                   help="the reference of the velocity, J'q' and the Jacobian (default LOCAL_WORLD_ALIGNED)")
    p.set_defaults(fn=cmd_frame)

    p = sub.add_parser("params", help="write the model's parameters (values, units, descriptions) as a "
                       "parameter set, to stdout or -o FILE")
    common(p)
    p.add_argument("-o", "--output", help="write the set to this file instead of stdout")
    paramsets.add_options(p)
    p.set_defaults(fn=cmd_params)

"""A URDF robot and its report

The UR5 of example-robot-data read from its URDF (meshes as visuals), falling under gravity
for 1 s from its zero pose, and `write_report`'s HTML page of the run ([open it](gallery/robot_report.html):
plots, tables and the 3-D animation, self-contained). The picture is the report's scene drawn
with matplotlib at the last frame: the same body frames and simplified meshes the page animates.
"""

import importlib.metadata

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from mpl_toolkits.mplot3d.art3d import Poly3DCollection

import dynamica
from dynamica.runtime.report.page import write_report
from dynamica.runtime.report.scene import build_scene

urdf = next(f.locate() for f in importlib.metadata.files("example-robot-data")
            if str(f).replace("\\", "/").endswith("robots/ur_description/urdf/ur5_robot.urdf"))
model = dynamica.load(urdf)
res = dynamica.simulate(model, t_end=1.0, output_step=0.01)
write_report(model, res, "robot_report.html")

scene = build_scene(model, res)
frame = scene.frames[-1]
fig = plt.figure(figsize=(6, 6), constrained_layout=True)
ax = fig.add_subplot(projection="3d")
for s in scene.shapes:
    R, p = frame[s["body"], :9].reshape(3, 3), frame[s["body"], 9:]
    tri = s["triangles"].reshape(-1, 3, 3) @ R.T + p
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    light = np.abs(n @ [0.4, -0.5, 0.77]) / np.maximum(np.linalg.norm(n, axis=1), 1e-30)   # a head light
    ax.add_collection3d(Poly3DCollection(tri, facecolors=np.outer(0.35 + 0.65 * light, s["color"]),
                                         edgecolor="none"))
pts = frame[:, 9:]
centre, span = pts.mean(axis=0), max(np.ptp(pts, axis=0).max(), 0.5)
for set_lim, c in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), centre):
    set_lim(c - 0.6 * span, c + 0.6 * span)
ax.set_title(f"{model.name} at t = {res.t[-1]:g} s")
fig.savefig("robot_report.png", dpi=90)

// dynamica report: a small WebGL viewer of the mechanism's motion (no library, no network).
// Scene data (runtime/report/scene.py): body frames per animation frame (R row-major, origin) and
// triangles per shape in its body's frame. Mouse: drag turns the view, wheel zooms,
// shift+drag pans. Controls: play/pause, a time slider, the playback speed.
"use strict";
(function () {
  const S = JSON.parse(document.getElementById("scene-data").textContent);
  const canvas = document.getElementById("scene");
  const status = document.getElementById("scene-status");
  const slider = document.getElementById("frame");
  const play = document.getElementById("play");
  const speedSel = document.getElementById("speed");
  const label = document.getElementById("time");

  function bytes(b64) {
    const bin = atob(b64), buf = new ArrayBuffer(bin.length), u8 = new Uint8Array(buf);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return buf;
  }
  function triangles(s) {                  // an indexed mesh of 16-bit coordinates -> triangle corners
    const v = new Uint16Array(bytes(s.vertices)), f = s.wide ? new Uint32Array(bytes(s.faces)) : new Uint16Array(bytes(s.faces));
    const out = new Float32Array(3 * f.length);
    for (let i = 0; i < f.length; i++)
      for (let k = 0; k < 3; k++) out[3 * i + k] = s.lo[k] + s.step[k] * v[3 * f[i] + k];
    return out;
  }
  const frames = new Float32Array(bytes(S.frames)), B = S.names.length, F = S.t.length;
  // the floor is normal to "up" (against gravity): e1, e2 span it
  const up = S.up, ref = Math.abs(up[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0], dot = ref[0] * up[0] + ref[1] * up[1] + ref[2] * up[2];
  let e1 = [ref[0] - dot * up[0], ref[1] - dot * up[1], ref[2] - dot * up[2]];
  const n1 = Math.hypot(e1[0], e1[1], e1[2]); e1 = e1.map((x) => x / n1);
  const e2 = [up[1] * e1[2] - up[2] * e1[1], up[2] * e1[0] - up[0] * e1[2], up[0] * e1[1] - up[1] * e1[0]];
  const along = (a, u, b, w) => [0, 1, 2].map((k) => a * u[k] + b * w[k]);

  const gl = canvas.getContext("webgl", {antialias: true, preserveDrawingBuffer: true});
  if (!gl) { status.textContent = "WebGL is not available in this browser: the 3-D view cannot be drawn."; return; }

  // -- shaders: Lambert shading with a head light
  const VS = `attribute vec3 pos; attribute vec3 nrm; uniform mat4 proj, view, model;
    varying vec3 n; varying vec3 vpos;
    void main() { vec4 w = view * model * vec4(pos, 1.0); vpos = w.xyz;
      n = mat3(view * model) * nrm; gl_Position = proj * w; }`;
  const FS = `precision mediump float; uniform vec3 color; uniform float lit; varying vec3 n; varying vec3 vpos;
    void main() { vec3 N = normalize(n); float d = abs(dot(N, normalize(-vpos)));
      gl_FragColor = vec4(color * mix(1.0, 0.35 + 0.65 * d, lit), 1.0); }`;
  function shader(type, src) {
    const s = gl.createShader(type); gl.shaderSource(s, src); gl.compileShader(s);
    if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
    return s;
  }
  const prog = gl.createProgram();
  gl.attachShader(prog, shader(gl.VERTEX_SHADER, VS)); gl.attachShader(prog, shader(gl.FRAGMENT_SHADER, FS));
  gl.linkProgram(prog); gl.useProgram(prog);
  const loc = {pos: gl.getAttribLocation(prog, "pos"), nrm: gl.getAttribLocation(prog, "nrm")};
  for (const u of ["proj", "view", "model", "color", "lit"]) loc[u] = gl.getUniformLocation(prog, u);

  function buffers(tri) {                  // flat normals per triangle
    const nrm = new Float32Array(tri.length);
    for (let i = 0; i < tri.length; i += 9) {
      const ax = tri[i + 3] - tri[i], ay = tri[i + 4] - tri[i + 1], az = tri[i + 5] - tri[i + 2];
      const bx = tri[i + 6] - tri[i], by = tri[i + 7] - tri[i + 1], bz = tri[i + 8] - tri[i + 2];
      let nx = ay * bz - az * by, ny = az * bx - ax * bz, nz = ax * by - ay * bx;
      const l = Math.hypot(nx, ny, nz) || 1; nx /= l; ny /= l; nz /= l;
      for (let k = 0; k < 3; k++) { nrm[i + 3 * k] = nx; nrm[i + 3 * k + 1] = ny; nrm[i + 3 * k + 2] = nz; }
    }
    const mk = (a) => { const b = gl.createBuffer(); gl.bindBuffer(gl.ARRAY_BUFFER, b);
      gl.bufferData(gl.ARRAY_BUFFER, a, gl.STATIC_DRAW); return b; };
    return {pos: mk(tri), nrm: mk(nrm), count: tri.length / 3};
  }
  const shapes = S.shapes.map((s) => Object.assign(buffers(triangles(s)), {body: s.body, color: s.color}));

  // a unit cylinder along z (0..1) for the rods between joint origins
  function unitCylinder(n) {
    const t = [];
    for (let i = 0; i < n; i++) {
      const a0 = 2 * Math.PI * i / n, a1 = 2 * Math.PI * (i + 1) / n;
      const p = [Math.cos(a0), Math.sin(a0)], q = [Math.cos(a1), Math.sin(a1)];
      t.push(p[0], p[1], 0, q[0], q[1], 0, q[0], q[1], 1, p[0], p[1], 0, q[0], q[1], 1, p[0], p[1], 1);
    }
    return buffers(new Float32Array(t));
  }
  const rod = unitCylinder(16);
  const [cx, cy, cz] = S.center, R0 = S.radius;
  const rodRadius = 0.012 * R0;

  // ground grid and axes, as line segments (lit = 0)
  function lines(arr) { const b = gl.createBuffer(); gl.bindBuffer(gl.ARRAY_BUFFER, b);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(arr), gl.STATIC_DRAW); return {pos: b, count: arr.length / 3}; }
  const step = Math.pow(10, Math.floor(Math.log10(R0 / 2))), nGrid = Math.ceil(1.5 * R0 / step), half = nGrid * step, g = [];
  for (let i = -nGrid; i <= nGrid; i++) {
    g.push(...along(i * step, e1, -half, e2), ...along(i * step, e1, half, e2),
           ...along(-half, e1, i * step, e2), ...along(half, e1, i * step, e2));
  }
  const grid = lines(g);
  const axes = [lines([0, 0, 0, 2 * step, 0, 0]), lines([0, 0, 0, 0, 2 * step, 0]), lines([0, 0, 0, 0, 0, 2 * step])];
  const zeroNormals = gl.createBuffer(); gl.bindBuffer(gl.ARRAY_BUFFER, zeroNormals);
  gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(3 * 256), gl.STATIC_DRAW);

  // -- matrices (column-major, as WebGL wants)
  function perspective(fovy, aspect, near, far) {
    const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
    return new Float32Array([f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0]);
  }
  function lookAt(eye, c, up) {
    let zx = eye[0] - c[0], zy = eye[1] - c[1], zz = eye[2] - c[2]; let l = Math.hypot(zx, zy, zz); zx /= l; zy /= l; zz /= l;
    let xx = up[1] * zz - up[2] * zy, xy = up[2] * zx - up[0] * zz, xz = up[0] * zy - up[1] * zx;
    l = Math.hypot(xx, xy, xz); xx /= l; xy /= l; xz /= l;
    const yx = zy * xz - zz * xy, yy = zz * xx - zx * xz, yz = zx * xy - zy * xx;
    return new Float32Array([xx, yx, zx, 0, xy, yy, zy, 0, xz, yz, zz, 0,
      -(xx * eye[0] + xy * eye[1] + xz * eye[2]), -(yx * eye[0] + yy * eye[1] + yz * eye[2]),
      -(zx * eye[0] + zy * eye[1] + zz * eye[2]), 1]);
  }
  function bodyMatrix(f, b) {               // R (row-major) and origin -> column-major 4x4
    const o = (f * B + b) * 12, m = frames;
    return new Float32Array([m[o], m[o + 3], m[o + 6], 0, m[o + 1], m[o + 4], m[o + 7], 0,
      m[o + 2], m[o + 5], m[o + 8], 0, m[o + 9], m[o + 10], m[o + 11], 1]);
  }
  function origin(f, b) { const o = (f * B + b) * 12 + 9; return [frames[o], frames[o + 1], frames[o + 2]]; }
  function rodMatrix(p, q) {                // the unit cylinder from p to q with radius rodRadius
    const d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]], L = Math.hypot(d[0], d[1], d[2]);
    if (L < 1e-9) return null;
    const z = d.map((x) => x / L), a = Math.abs(z[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
    let x = [a[1] * z[2] - a[2] * z[1], a[2] * z[0] - a[0] * z[2], a[0] * z[1] - a[1] * z[0]];
    const lx = Math.hypot(x[0], x[1], x[2]); x = x.map((v) => v / lx);
    const y = [z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]], r = rodRadius;
    return new Float32Array([r * x[0], r * x[1], r * x[2], 0, r * y[0], r * y[1], r * y[2], 0,
      L * z[0], L * z[1], L * z[2], 0, p[0], p[1], p[2], 1]);
  }

  // -- camera
  const cam = {az: -0.9, el: 0.35, dist: 1.5 * R0, target: [cx, cy, cz]};
  let frame = 0;
  function draw() {
    const w = canvas.clientWidth, h = canvas.clientHeight, dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
    }
    gl.viewport(0, 0, canvas.width, canvas.height);
    gl.clearColor(0.97, 0.97, 0.98, 1); gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT); gl.enable(gl.DEPTH_TEST);
    const t = cam.target, ce = Math.cos(cam.el);
    const ca = cam.dist * ce * Math.cos(cam.az), sa = cam.dist * ce * Math.sin(cam.az), su = cam.dist * Math.sin(cam.el);
    const eye = [0, 1, 2].map((k) => t[k] + ca * e1[k] + sa * e2[k] + su * up[k]);
    gl.uniformMatrix4fv(loc.proj, false, perspective(0.7, canvas.width / Math.max(canvas.height, 1), cam.dist / 100, cam.dist * 100));
    gl.uniformMatrix4fv(loc.view, false, lookAt(eye, t, up));
    const I = new Float32Array([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
    function mesh(buf, model, color, lit, mode) {
      gl.uniformMatrix4fv(loc.model, false, model); gl.uniform3fv(loc.color, color); gl.uniform1f(loc.lit, lit);
      gl.bindBuffer(gl.ARRAY_BUFFER, buf.pos); gl.enableVertexAttribArray(loc.pos);
      gl.vertexAttribPointer(loc.pos, 3, gl.FLOAT, false, 0, 0);
      gl.bindBuffer(gl.ARRAY_BUFFER, buf.nrm || zeroNormals); gl.enableVertexAttribArray(loc.nrm);
      gl.vertexAttribPointer(loc.nrm, 3, gl.FLOAT, false, 0, 0);
      gl.drawArrays(mode, 0, buf.count);
    }
    mesh(grid, I, [0.82, 0.82, 0.85], 0, gl.LINES);
    axes.forEach((a, k) => mesh(a, I, [[0.8, 0.1, 0.1], [0.1, 0.6, 0.1], [0.1, 0.2, 0.8]][k], 0, gl.LINES));
    for (let b = 0; b < B; b++) {
      const p = S.parents[b] < 0 ? [0, 0, 0] : origin(frame, S.parents[b]), m = rodMatrix(p, origin(frame, b));
      if (m) mesh(rod, m, [0.25, 0.25, 0.28], 1, gl.TRIANGLES);
    }
    for (const s of shapes) mesh(s, bodyMatrix(frame, s.body), s.color, 1, gl.TRIANGLES);
  }

  // -- controls
  slider.max = F - 1;
  function setFrame(f) {
    frame = Math.max(0, Math.min(F - 1, f | 0)); slider.value = frame;
    label.textContent = "t = " + S.t[frame].toFixed(3) + " s";
    draw();
    if (window.dynamicaReport) window.dynamicaReport.markTime(S.t[frame]);
  }
  slider.addEventListener("input", () => { stop(); setFrame(+slider.value); });
  let playing = false, last = 0, clock = 0;
  function tick(now) {
    if (!playing) return;
    const dt = (now - last) / 1000; last = now;
    clock += dt * parseFloat(speedSel.value);
    let f = frame;
    while (f < F - 1 && S.t[f + 1] <= S.t[0] + clock) f++;
    setFrame(f);
    if (f >= F - 1) { stop(); return; }
    requestAnimationFrame(tick);
  }
  function stop() { playing = false; play.textContent = "\u25B6 play"; }
  play.addEventListener("click", () => {
    if (playing) { stop(); return; }
    if (frame >= F - 1) frame = 0;
    playing = true; play.textContent = "\u275A\u275A pause"; clock = S.t[frame] - S.t[0];
    last = performance.now(); requestAnimationFrame(tick);
  });
  let drag = null;
  canvas.addEventListener("mousedown", (e) => { drag = {x: e.clientX, y: e.clientY, pan: e.shiftKey}; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y; drag.x = e.clientX; drag.y = e.clientY;
    if (drag.pan) {
      const s = cam.dist / canvas.clientHeight, sa = Math.sin(cam.az), ca = Math.cos(cam.az);
      for (let k = 0; k < 3; k++) cam.target[k] += s * (dx * (sa * e1[k] - ca * e2[k]) + dy * up[k]);
    } else { cam.az -= dx * 0.01; cam.el = Math.max(-1.5, Math.min(1.5, cam.el + dy * 0.01)); }
    draw();
  });
  canvas.addEventListener("wheel", (e) => { e.preventDefault(); cam.dist *= Math.exp(e.deltaY * 0.001); draw(); }, {passive: false});
  window.addEventListener("resize", draw);
  status.textContent = B + " bodies, " + shapes.length + " shapes, " + F + " frames";
  setFrame(0);
})();

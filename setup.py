"""Build of dynamica's fixed compiled parts at install time: the Adams integrator core
(runtime/native/adams_core.pyx), the C-level timing loop (runtime/native/ctiming.pyx) and the loop over the
rows of a trajectory for its outputs (runtime/native/series_core.pyx).

The generated equation-of-motion modules are built at run time (build.py). Each fixed part
carries the SHA-256 of the source it was built from (`SOURCE_SHA`), so `build.compiled_helper`
can tell an installed extension from a stale one (an edited source in a development checkout).
"""

import hashlib
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

FIXED = ("adams_core", "ctiming", "series_core")
#: the plain-C headers (runtime/native) a part includes (build.HELPER_HEADERS): hashed with its source
HEADERS = {"adams_core": ("dynamica_adams.h",)}
NATIVE = Path("runtime") / "native"


def extension(name):
    src = Path("runtime") / "native" / f"{name}.pyx"
    text = src.read_bytes() + b"".join((NATIVE / h).read_bytes() for h in HEADERS.get(name, ()))
    sha = hashlib.sha256(text).hexdigest()
    return Extension(f"dynamica.runtime.native.{name}", [str(src)], extra_compile_args=["-O2"],
                     include_dirs=[str(NATIVE)], define_macros=[("DYN_SOURCE_SHA", f'"{sha}"')])


setup(ext_modules=cythonize([extension(n) for n in FIXED], language_level=3, quiet=True))

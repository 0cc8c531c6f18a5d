"""Importers: robot descriptions in other formats (URDF, MJCF) read into the mapping a model file gives.

May import: dynamica.errors, dynamica.generator.spec. Never the runtime.
"""

from pathlib import Path

from dynamica.errors import ModelError, Problem


def existing_file(path, what: str) -> Path:
    """`path` as a Path when it names a file; else one ModelError naming it (`what`: "a URDF file")."""
    path = Path(path)
    if path.is_dir() or not path.is_file():
        raise ModelError(str(path), [Problem("", f"is a directory, expected {what}" if path.is_dir()
                                            else "file not found")])
    return path

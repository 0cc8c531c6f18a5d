from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
BUNDLED = sorted(p.stem for p in MODELS.glob("*.yaml"))


@pytest.fixture(scope="session")
def models_dir():
    return MODELS


def write_model(tmp_path, data: dict, name="model.yaml") -> Path:
    path = Path(tmp_path) / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


_LOADED = {}


@pytest.fixture(scope="session")
def bundled():
    """Load (compile once per session, cached on disk across sessions) a bundled model."""
    import dynamica

    def get(name, form="composite"):
        key = (name, form)
        if key not in _LOADED:
            _LOADED[key] = dynamica.load(MODELS / f"{name}.yaml", form=form)
        return _LOADED[key]
    return get

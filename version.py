"""The version of dynamica: part of the tool fingerprint (build.py) and of every result's metadata;
the version of pyproject.toml (tests/test_repo_hygiene.py checks that they agree)."""

__version__ = "0.6.0"

"""evalstream's version: written here once, read by the package build (pyproject.toml), the
API (``evalstream.__version__``) and every report that says which version wrote it."""

__version__ = "0.1.0"

"""whenpro core: trace model, importers, attribution, injection, benchmark (no UI)."""

__version__ = "0.1.0"

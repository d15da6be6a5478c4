"""The version of tritune, in a module of its own so that any layer can read it without importing the package."""

__version__ = "0.1.0"

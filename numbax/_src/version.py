"""The one version string of numbax (the package metadata reads it too)."""
__version__ = "0.1.0"

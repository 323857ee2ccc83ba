"""lovia's version, in a leaf module: anything may import it without importing ``lovia``.

Hatch reads it from here too (``[tool.hatch.version]`` in pyproject.toml).
"""

__version__ = "0.1.0"

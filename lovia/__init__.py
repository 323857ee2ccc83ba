"""lovia: an async, provider-neutral agent framework."""

__version__ = "0.1.0"

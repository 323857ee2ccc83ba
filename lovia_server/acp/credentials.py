"""API keys for ACP clients that start lovia without them in its environment: the
``authenticate`` method points at ``credentials.json`` in the state directory."""

from __future__ import annotations

import json
import os
from pathlib import Path

AUTH_METHOD = "lovia-api-key"
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def load_stored_keys(state_dir: Path) -> None:
    """``credentials.json`` in the state directory fills API keys the environment lacks."""
    path = state_dir / "credentials.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    for name in KEY_VARS:
        value = data.get(name)
        if isinstance(value, str) and value and not os.environ.get(name):
            os.environ[name] = value


__all__ = ["AUTH_METHOD", "KEY_VARS", "load_stored_keys"]

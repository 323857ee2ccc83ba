"""The ``prompt_cache_key`` lovia sends to OpenAI for a conversation.

OpenAI routes requests with the same key to the same cache, so one conversation keeps hitting
the cache its previous calls wrote. The key is a hash of the conversation id (a session name
may be personal and is not the provider's business), stable across processes.
"""

from __future__ import annotations

import hashlib

PREFIX = "lovia-"


def prompt_cache_key(conversation: str | None) -> str | None:
    """``"lovia-" + 32 hex digits`` of the conversation id's SHA-256; None without one."""
    if not conversation:
        return None
    return PREFIX + hashlib.sha256(conversation.encode()).hexdigest()[:32]


__all__ = ["prompt_cache_key"]

"""Memory: long-term, cross-session memory for agents (see ``docs/memory.md``).

``plugin.py`` is the policy (the ``Memory`` plugin) over two storage seams: ``NotesStore``
(the hot tier, always in the prompt; its format and file store in ``notes.py``) and ``Index``
(the cold archive); ``queries.py`` holds the side queries (digest, dream, expander, recall).
``index.py`` ships the FTS5 ``KeywordIndex`` and the rank-fusing ``HybridIndex``; ``vector.py``
the ``Embedder`` seam, ``OpenAIEmbedder`` and ``VectorIndex``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports

if TYPE_CHECKING:
    from lovia.plugins.memory.index import Doc, Fusable, Hit, HybridIndex, Index, KeywordIndex
    from lovia.plugins.memory.plugin import FileNotesStore, Memory, NotesStore
    from lovia.plugins.memory.vector import Embedder, OpenAIEmbedder, VectorIndex

_LAZY: dict[str, str] = {
    "Doc": "lovia.plugins.memory.index",
    "Fusable": "lovia.plugins.memory.index",
    "Hit": "lovia.plugins.memory.index",
    "HybridIndex": "lovia.plugins.memory.index",
    "Index": "lovia.plugins.memory.index",
    "KeywordIndex": "lovia.plugins.memory.index",
    "FileNotesStore": "lovia.plugins.memory.plugin",
    "Memory": "lovia.plugins.memory.plugin",
    "NotesStore": "lovia.plugins.memory.plugin",
    "Embedder": "lovia.plugins.memory.vector",
    "OpenAIEmbedder": "lovia.plugins.memory.vector",
    "VectorIndex": "lovia.plugins.memory.vector",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "Doc",
    "Embedder",
    "FileNotesStore",
    "Fusable",
    "Hit",
    "HybridIndex",
    "Index",
    "KeywordIndex",
    "Memory",
    "NotesStore",
    "OpenAIEmbedder",
    "VectorIndex",
]

"""Memory: long-term, cross-session memory for agents (see ``docs/memory.md``).

``plugin.py`` is the policy (the ``Memory`` plugin) over two storage seams: ``NotesStore``
(the hot tier, always in the prompt) and ``Index`` (the cold archive). ``index.py`` ships the
FTS5 ``KeywordIndex`` and the rank-fusing ``HybridIndex``; ``vector.py`` the ``Embedder`` seam,
``OpenAIEmbedder`` and ``VectorIndex``.
"""

from lovia.plugins.memory.index import Doc, Fusable, Hit, HybridIndex, Index, KeywordIndex
from lovia.plugins.memory.plugin import FileNotesStore, Memory, NotesStore
from lovia.plugins.memory.vector import Embedder, OpenAIEmbedder, VectorIndex

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

"""The semantic arm of Memory: the ``Embedder`` seam, ``OpenAIEmbedder`` and ``VectorIndex``.

``VectorIndex`` is standard library + aiosqlite: L2-normalized float32 vectors in SQLite,
searched by a full dot-product scan (run off the event loop). That is fast enough for the
archive of one user or project (tens of thousands of passages); bring your own ``Index`` for
more. The ``openai`` SDK is imported on first use, never by ``import lovia``.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import operator
import os
from array import array
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import aiosqlite

from lovia.exceptions import ProviderError, UserError
from lovia.http_config import resolve_timeout, resolve_trust_env, resolve_verify
from lovia.plugins.memory.index import Doc, Fusable, Hit, _doc_from_row, _unique
from lovia.providers._http import (
    host_matches,
    host_of,
    is_retryable_status,
    lower_keys,
    normalize_base_url,
    parse_retry_after,
)
from lovia.stores._sqlite import Schema, SQLiteStore, dumps

if TYPE_CHECKING:
    import httpx2

logger = logging.getLogger("lovia.plugins.memory")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``id`` names the model (and its settings): vectors made
    under one id are never compared with vectors of another."""

    id: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


# --------------------------------------------------------------------------- OpenAI

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OFFICIAL_HOSTS = ("api.openai.com",)
LABEL = "OpenAI embeddings"
_NO_KEY = "lovia-no-api-key"  # satisfies the SDK constructor; the header is omitted on the wire
_BODY_IN_MESSAGE = 1000


def _is_sdk_client(client: Any) -> bool:
    import openai

    return isinstance(client, openai.AsyncOpenAI)


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _BODY_IN_MESSAGE else text[:_BODY_IN_MESSAGE] + "…"


class OpenAIEmbedder:
    """Embeddings from ``POST {base_url}/embeddings`` (OpenAI or any compatible server).

    ``base_url``: the argument, else the ``client``'s, else ``LOVIA_EMBEDDING_BASE_URL``, else
    ``OPENAI_BASE_URL``, else the official API. ``api_key``: the argument, else
    ``LOVIA_EMBEDDING_API_KEY``, else ``OPENAI_API_KEY`` (a keyless local server needs none).
    Inputs go out in batches of ``batch_size``. ``client`` (an ``openai.AsyncOpenAI`` or an
    httpx-style ``AsyncClient``) stays the caller's; without one the embedder builds (and
    :meth:`aclose` closes) its own.
    Failures raise :class:`~lovia.exceptions.ProviderError` with ``retryable`` set; the
    embedder itself does not retry.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        dimensions: int | None = None,
        client: Any = None,
        timeout: float | None = None,
        default_headers: Mapping[str, str] | None = None,
        trust_env: bool | None = None,
        batch_size: int = 32,
    ) -> None:
        if not model:
            raise UserError(
                "OpenAIEmbedder needs a model name",
                hint="Use e.g. OpenAIEmbedder('text-embedding-3-small').",
            )
        self.model = model
        self.dimensions = dimensions
        self.id = f"openai:{model}" if dimensions is None else f"openai:{model}:{dimensions}"
        if base_url is None and client is not None and getattr(client, "base_url", None):
            base_url = str(client.base_url)
        raw_url = (
            base_url
            or os.environ.get("LOVIA_EMBEDDING_BASE_URL")
            or os.environ.get("OPENAI_BASE_URL")
            or DEFAULT_BASE_URL
        )
        self.base_url = normalize_base_url(
            raw_url,
            label=LABEL,
            env_var="LOVIA_EMBEDDING_BASE_URL",
            example="http://localhost:11434/v1 (Ollama)",
        )
        self._api_key = (
            api_key
            or os.environ.get("LOVIA_EMBEDDING_API_KEY")
            or os.environ.get("OPENAI_API_KEY")
            or None
        )
        self.host = host_of(self.base_url)
        self.is_official_host = host_matches(self.host, OFFICIAL_HOSTS)
        self.timeout = resolve_timeout(timeout)
        self.trust_env = resolve_trust_env(trust_env)
        self.default_headers = dict(default_headers or {})
        self.batch_size = batch_size
        self._client = client
        self._owned: Any = None
        self._owned_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    # ------------------------------------------------------------------ Embedder

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in input order (``[]`` for no texts, without a request)."""
        inputs = list(texts)
        if not inputs:
            return []
        self._check_ready()
        size = max(1, int(self.batch_size))
        out: list[list[float]] = []
        for start in range(0, len(inputs), size):
            out.extend(await self._embed_batch(inputs[start : start + size]))
        return out

    async def aclose(self) -> None:
        """Close the client this embedder built (a caller's ``client`` stays open)."""
        client, loop = self._owned, self._owned_loop
        self._owned = self._owned_loop = None
        if client is None:
            return
        if loop is not asyncio.get_running_loop():
            return  # its connections belong to another (usually finished) loop: just drop it
        try:
            await client.close()
        except Exception:  # pragma: no cover - closing is best effort
            logger.debug("memory.embedder: closing the client failed", exc_info=True)

    # ------------------------------------------------------------------ plumbing

    def _headers(self) -> httpx2.Headers:
        """Request headers (case-insensitive): the caller's, with ``Authorization: Bearer``
        from the API key (a caller ``Authorization`` header only counts without a key)."""
        import httpx2

        headers = httpx2.Headers()
        for key, value in self.default_headers.items():
            if key.lower() == "authorization" and self._api_key:
                continue
            headers[key] = value
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _check_ready(self) -> None:
        if self.is_official_host and not self._api_key and self._client is None:
            raise UserError(
                f"OpenAIEmbedder requires an API key for {self.host}",
                hint="Set LOVIA_EMBEDDING_API_KEY or OPENAI_API_KEY (or pass api_key=...). For "
                "a compatible server elsewhere set LOVIA_EMBEDDING_BASE_URL instead.",
            )

    def _sdk_client(self) -> Any:
        if self._client is not None:
            return self._client
        loop = asyncio.get_running_loop()
        if self._owned is None or self._owned_loop is not loop or self._owned.is_closed():
            # an HTTP client belongs to the loop that opened its connections
            self._owned = self._build_client()
            self._owned_loop = loop
        return self._owned

    def _build_client(self) -> Any:
        import openai

        http = openai.DefaultAsyncHttpxClient(
            timeout=self._http_timeout(), verify=resolve_verify(), trust_env=self.trust_env
        )
        return openai.AsyncOpenAI(
            api_key=self._api_key or _NO_KEY,
            base_url=self.base_url,
            max_retries=0,
            http_client=http,
        )

    def _http_timeout(self) -> Any:
        import httpx2

        return httpx2.Timeout(self.timeout, connect=min(10.0, self.timeout))

    def _request_headers(self) -> dict[str, object]:
        import openai

        headers: dict[str, object] = dict(self._headers().items())
        if "authorization" not in headers and self._client is None:
            headers["authorization"] = openai.omit  # keyless local server: no auth header
        return headers

    async def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        payload: dict[str, Any] = {"model": self.model, "input": batch}
        if self.dimensions is not None:
            payload["dimensions"] = self.dimensions
        client = self._sdk_client()
        url = f"{self.base_url}/embeddings"
        try:
            if _is_sdk_client(client):
                import httpx2

                response = await client.post(
                    url,
                    cast_to=httpx2.Response,
                    body=payload,
                    options={"headers": self._request_headers(), "timeout": self._http_timeout()},
                )
            else:  # an httpx-style client: ``post(url, json=..., headers=..., timeout=...)``
                response = await client.post(
                    url, json=payload, headers=dict(self._headers().items()), timeout=self.timeout
                )
        except Exception as exc:
            mapped = self._map_error(exc)
            if mapped is exc:
                raise
            raise mapped from exc
        status = getattr(response, "status_code", 200)
        if isinstance(status, int) and status >= 400:
            raise self._status_error(response)
        return self._parse(response, len(batch))

    def _error(self, message: str, **extra: Any) -> ProviderError:
        return ProviderError(message, vendor="openai", model=self.model, **extra)

    def _status_error(self, response: Any) -> ProviderError:
        status = int(getattr(response, "status_code", 0) or 0)
        try:
            body = str(response.text)
        except Exception:
            body = ""
        hint = None
        if status in (401, 403):
            hint = "Check LOVIA_EMBEDDING_API_KEY / OPENAI_API_KEY (or pass api_key=...)."
        elif status == 404:
            hint = (
                f"Nothing answered for model '{self.model}' at {self.base_url}/embeddings: "
                "check the base URL (it usually ends in /v1) and the model name."
            )
        headers = getattr(response, "headers", None) or {}
        return self._error(
            f"{LABEL} request returned HTTP {status}: {_clip(body)}",
            hint=hint,
            status_code=status,
            retryable=is_retryable_status(status),
            retry_after=parse_retry_after(lower_keys(dict(headers))),
            body=body,
        )

    def _map_error(self, exc: BaseException) -> BaseException:
        import openai

        if isinstance(exc, openai.APIStatusError):
            return self._status_error(exc.response)
        names = {cls.__name__ for cls in type(exc).__mro__}
        if isinstance(exc, (openai.APITimeoutError, TimeoutError)) or "TimeoutException" in names:
            return self._error(
                f"{LABEL} request timed out: no answer within {self.timeout:g}s",
                hint="Raise the timeout with timeout=... or LOVIA_PROVIDER_TIMEOUT.",
                retryable=True,
            )
        if isinstance(exc, (openai.APIConnectionError, OSError)) or "HTTPError" in names:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            return self._error(
                f"{LABEL}: could not connect to {self.base_url}: {type(cause).__name__}: {cause}",
                hint="Is the server running? Check LOVIA_EMBEDDING_BASE_URL (or base_url=...).",
                retryable=True,
            )
        return exc

    def _parse(self, response: Any, expected: int) -> list[list[float]]:
        text = ""
        try:
            text = response.text
            payload = response.json()
        except Exception as exc:
            raise self._malformed(text) from exc
        items = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(items, list):
            raise self._malformed(text)
        ordered: list[tuple[int, list[float]]] = []
        for position, item in enumerate(items):
            embedding = item.get("embedding") if isinstance(item, dict) else None
            index = item.get("index", position) if isinstance(item, dict) else None
            if (
                not isinstance(embedding, list)
                or not isinstance(index, int)
                or isinstance(index, bool)
            ):
                raise self._malformed(text)
            try:
                vector = [float(x) for x in embedding]
            except (TypeError, ValueError) as exc:
                raise self._malformed(text) from exc
            ordered.append((index, vector))
        ordered.sort(key=operator.itemgetter(0))
        if len(ordered) != expected:
            raise self._error(
                f"{LABEL} returned {len(ordered)} vectors for {expected} inputs",
                retryable=False,
            )
        return [vector for _, vector in ordered]

    def _malformed(self, text: str) -> ProviderError:
        return self._error(
            f"{LABEL}: the response is not in OpenAI format: {_clip(text)}",
            hint="The server must answer {'data': [{'index': i, 'embedding': [...]}, ...]}.",
            retryable=False,
            body=text,
        )


# --------------------------------------------------------------------------- vector index

_VECTORS = "memory_vectors"
_VMETA = "memory_vectors_meta"

VECTOR_SCHEMA = Schema(
    component="memory_vector",
    baseline=(
        f"CREATE TABLE IF NOT EXISTS {_VECTORS} ("
        " id TEXT PRIMARY KEY,"
        " text TEXT NOT NULL,"
        ' "when" REAL NOT NULL,'
        " meta TEXT NOT NULL,"
        " dim INTEGER NOT NULL,"
        " vec BLOB NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {_VMETA} (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    tables={
        _VECTORS: frozenset({"id", "text", "when", "meta", "dim", "vec"}),
        _VMETA: frozenset({"name", "value"}),
    },
)


def _normalized(vector: Sequence[float]) -> array[float]:
    values = array("f", (float(x) for x in vector))
    norm = math.sqrt(math.fsum(x * x for x in values))
    if norm == 0.0 or not math.isfinite(norm):
        return values  # a zero vector is stored as is (it scores 0 against everything)
    return array("f", (x / norm for x in values))


def _top_k(
    rows: Sequence[tuple[int, int, bytes]], query: array[float], k: int
) -> list[tuple[float, int]]:
    """``(score, rowid)`` of the ``k`` best rows by dot product; other dimensions skipped."""
    dim = len(query)
    scored: list[tuple[float, int]] = []
    for rowid, row_dim, blob in rows:
        if row_dim != dim:
            continue
        vec = array("f")
        vec.frombytes(blob)
        scored.append((sum(map(operator.mul, query, vec)), rowid))
    return heapq.nlargest(k, scored, key=operator.itemgetter(0))


class VectorIndex(SQLiteStore, Fusable):
    """Semantic search: ``embedder`` vectors in an SQLite file (or ``":memory:"``).

    The embedder's ``id`` is stored with the vectors; opening the index with an embedder of
    another id deletes every stored vector (with a warning), since vectors of different
    models cannot be compared. Scores are cosine similarities.
    """

    schema = VECTOR_SCHEMA

    def __init__(
        self, path: str | os.PathLike[str], embedder: Embedder, *, wal: bool | None = None
    ) -> None:
        super().__init__(path, wal=wal)
        self.embedder = embedder

    def __repr__(self) -> str:
        return f"VectorIndex({self.path!r}, embedder={getattr(self.embedder, 'id', '?')!r})"

    async def _ensure_schema(self, conn: aiosqlite.Connection) -> None:
        await super()._ensure_schema(conn)
        current = str(self.embedder.id)
        rows = list(
            await conn.execute_fetchall(f"SELECT value FROM {_VMETA} WHERE name = 'embedder'")
        )
        stored = str(rows[0][0]) if rows else None
        if stored == current:
            return
        if stored is not None:
            rows = list(await conn.execute_fetchall(f"SELECT COUNT(*) FROM {_VECTORS}"))
            count = int(rows[0][0])
            logger.warning(
                "memory.vectors: %s was built with embedder %r, now %r: wiping %d stored "
                "vectors (re-add documents to index them again)",
                self.path,
                stored,
                current,
                count,
            )
            await conn.execute(f"DELETE FROM {_VECTORS}")
        await conn.execute(
            f"INSERT OR REPLACE INTO {_VMETA} (name, value) VALUES ('embedder', ?)", (current,)
        )

    async def add(self, docs: Sequence[Doc]) -> None:
        """Embed ``docs`` (one ``embed`` call) and upsert them by id."""
        batch = _unique(docs)
        if not batch:
            return
        vectors = await self.embedder.embed([d.text for d in batch])
        if len(vectors) != len(batch):
            raise ProviderError(
                f"Embedder {self.embedder.id!r} returned {len(vectors)} vectors for "
                f"{len(batch)} documents",
                retryable=False,
            )
        rows = []
        for doc, vector in zip(batch, vectors, strict=True):
            values = _normalized(vector)
            rows.append(
                (
                    doc.id,
                    doc.text,
                    float(doc.when),
                    dumps(dict(doc.meta)),
                    len(values),
                    values.tobytes(),
                )
            )

        async def write(conn: aiosqlite.Connection) -> None:
            await conn.executemany(
                f'INSERT OR REPLACE INTO {_VECTORS} (id, text, "when", meta, dim, vec)'
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )

        await self._write(write)

    async def remove(self, ids: Sequence[str]) -> None:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return

        async def write(conn: aiosqlite.Connection) -> None:
            await conn.executemany(
                f"DELETE FROM {_VECTORS} WHERE id = ?", [(doc_id,) for doc_id in wanted]
            )

        await self._write(write)

    async def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` documents most similar to ``query`` (no embedding call when empty)."""
        if not query.strip() or k <= 0:
            return []
        if await self.count() == 0:
            return []
        vectors = await self.embedder.embed([query])
        if len(vectors) != 1:
            raise ProviderError(
                f"Embedder {self.embedder.id!r} returned {len(vectors)} vectors for 1 query",
                retryable=False,
            )
        needle = _normalized(vectors[0])

        async def job(conn: aiosqlite.Connection) -> list[Hit]:
            rows = await conn.execute_fetchall(f"SELECT rowid, dim, vec FROM {_VECTORS}")
            best = await asyncio.to_thread(
                _top_k, [(int(r[0]), int(r[1]), bytes(r[2])) for r in rows], needle, k
            )
            if not best:
                return []
            marks = ",".join("?" * len(best))
            found = await conn.execute_fetchall(
                f'SELECT rowid, id, text, "when", meta FROM {_VECTORS} WHERE rowid IN ({marks})',
                [rowid for _, rowid in best],
            )
            by_rowid = {int(r[0]): _doc_from_row(r[1:]) for r in found}
            return [Hit(by_rowid[rowid], score) for score, rowid in best if rowid in by_rowid]

        return await self._read(job)

    async def count(self) -> int:
        """How many vectors the index holds."""

        async def job(conn: aiosqlite.Connection) -> int:
            rows = await conn.execute_fetchall(f"SELECT COUNT(*) FROM {_VECTORS}")
            return int(next(iter(rows))[0])

        return await self._read(job)


__all__ = ["Embedder", "OpenAIEmbedder", "VectorIndex"]

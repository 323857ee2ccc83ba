"""The semantic arm: VectorIndex over a fake embedder, OpenAIEmbedder against the fake server."""

from __future__ import annotations

import logging
import math
import sqlite3

import pytest

from lovia import OpenAIEmbedder, ProviderError, UserError
from lovia.plugins import Doc, Embedder, HybridIndex, Index, KeywordIndex, VectorIndex
from tests.support import fake_openai as oai


class FakeEmbedder:
    """Vectors from a lookup table (unknown texts → ``default``); records every call."""

    def __init__(self, table=None, *, id="fake:v1", default=(0.0, 0.0, 1.0), extra=0) -> None:
        self.id = id
        self.table = dict(table or {})
        self.default = list(default)
        self.extra = extra  # return this many surplus vectors (to simulate a broken embedder)
        self.calls: list[list[str]] = []

    async def embed(self, texts):
        texts = list(texts)
        self.calls.append(texts)
        out = [list(self.table.get(t, self.default)) for t in texts]
        return out + [self.default] * self.extra


TABLE = {
    "cats": [1.0, 0.0, 0.0],
    "kittens": [0.9, 0.1, 0.0],
    "dogs": [0.0, 1.0, 0.0],
    "q-cat": [2.0, 0.0, 0.0],
    "zero": [0.0, 0.0, 0.0],
    "short": [1.0, 0.0],
}


@pytest.fixture
async def vectors(tmp_path):
    made: list[VectorIndex] = []

    def make(embedder=None, path=None) -> VectorIndex:
        index = VectorIndex(path or tmp_path / "vectors.db", embedder or FakeEmbedder(TABLE))
        made.append(index)
        return index

    yield make
    for index in made:
        await index.aclose()


# --------------------------------------------------------------------------- VectorIndex


async def test_vector_search_ranks_by_cosine(vectors) -> None:
    index = vectors()
    assert isinstance(index, Index)
    await index.add(
        [Doc("c", "cats", when=1.0, meta={"k": "v"}), Doc("k", "kittens"), Doc("d", "dogs")]
    )
    hits = await index.search("q-cat", 3)
    assert [h.doc.id for h in hits] == ["c", "k", "d"]
    assert hits[0].score == pytest.approx(1.0)
    assert hits[1].score == pytest.approx(0.9 / math.hypot(0.9, 0.1), rel=1e-6)
    assert hits[2].score == pytest.approx(0.0)
    assert hits[0].doc == Doc("c", "cats", 1.0, {"k": "v"})
    assert [h.doc.id for h in await index.search("q-cat", 1)] == ["c"]


async def test_vectors_are_stored_normalized_float32(vectors, tmp_path) -> None:
    index = vectors()
    await index.add([Doc("c", "q-cat"), Doc("z", "zero")])
    await index.aclose()
    rows = dict(
        sqlite3.connect(tmp_path / "vectors.db").execute("SELECT id, vec FROM memory_vectors")
    )
    from array import array

    stored = array("f")
    stored.frombytes(rows["c"])
    assert list(stored) == [1.0, 0.0, 0.0]
    zero = array("f")
    zero.frombytes(rows["z"])
    assert list(zero) == [0.0, 0.0, 0.0]


async def test_zero_vector_and_dimension_mismatch(vectors) -> None:
    index = vectors()
    await index.add([Doc("z", "zero"), Doc("s", "short"), Doc("c", "cats")])
    hits = await index.search("q-cat", 5)
    assert [h.doc.id for h in hits] == ["c", "z"]  # the 2-d vector is skipped
    assert hits[1].score == 0.0


async def test_upsert_and_remove(vectors) -> None:
    index = vectors()
    await index.add([Doc("x", "dogs")])
    await index.add([Doc("x", "cats", meta={"v": "2"})])
    hits = await index.search("q-cat", 5)
    assert [(h.doc.id, h.doc.text) for h in hits] == [("x", "cats")]
    assert await index.count() == 1
    await index.remove(["x", "missing"])
    assert await index.count() == 0
    await index.remove([])


async def test_empty_index_and_blank_query_do_not_embed(vectors) -> None:
    embedder = FakeEmbedder(TABLE)
    index = vectors(embedder)
    assert await index.search("cats") == []
    await index.add([])
    assert embedder.calls == []
    await index.add([Doc("c", "cats"), Doc("d", "dogs")])
    assert embedder.calls == [["cats", "dogs"]]  # one call for the whole batch
    assert await index.search("   ") == []
    assert await index.search("cats", 0) == []
    assert await index.search("cats", -3) == []
    assert embedder.calls == [["cats", "dogs"]]


async def test_add_rejects_a_wrong_vector_count(vectors) -> None:
    index = vectors(FakeEmbedder(TABLE, extra=1))
    with pytest.raises(ProviderError, match="returned 2 vectors"):
        await index.add([Doc("c", "cats")])
    assert await index.count() == 0


async def test_changing_the_embedder_wipes_vectors(vectors, tmp_path, caplog) -> None:
    first = vectors(FakeEmbedder(TABLE, id="fake:v1"))
    await first.add([Doc("c", "cats")])
    await first.aclose()
    same = vectors(FakeEmbedder(TABLE, id="fake:v1"))
    assert await same.count() == 1
    await same.aclose()
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.memory"):
        other = vectors(FakeEmbedder(TABLE, id="fake:v2"))
        assert await other.count() == 0
    assert "wiping 1 stored vectors" in caplog.text
    await other.add([Doc("d", "dogs")])
    assert [h.doc.id for h in await other.search("dogs")] == ["d"]


async def test_vector_index_fuses_with_keyword_index(vectors, tmp_path) -> None:
    keyword = KeywordIndex(tmp_path / "archive.db")
    hybrid = keyword | vectors()
    assert isinstance(hybrid, HybridIndex)
    await hybrid.add([Doc("c", "cats"), Doc("d", "dogs")])
    hits = await hybrid.search("cats", 2)
    assert hits[0].doc.id == "c"
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 61)
    await hybrid.aclose()


def test_embedder_protocol() -> None:
    assert isinstance(FakeEmbedder(), Embedder)
    assert isinstance(OpenAIEmbedder(base_url="http://localhost:1/v1"), Embedder)


# --------------------------------------------------------------------------- OpenAIEmbedder


@pytest.fixture
def clean_env(monkeypatch):
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "LOVIA_EMBEDDING_API_KEY",
        "LOVIA_EMBEDDING_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
async def embedders():
    made: list[OpenAIEmbedder] = []

    def make(*args, **kwargs) -> OpenAIEmbedder:
        embedder = OpenAIEmbedder(*args, **kwargs)
        made.append(embedder)
        return embedder

    yield make
    for embedder in made:
        await embedder.aclose()


def test_embedder_id_and_defaults(clean_env) -> None:
    embedder = OpenAIEmbedder()
    assert embedder.id == "openai:text-embedding-3-small"
    assert embedder.base_url == "https://api.openai.com/v1"
    assert OpenAIEmbedder("m", dimensions=256).id == "openai:m:256"


def test_base_url_and_key_precedence(clean_env) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://openai-env/v1/")
    clean_env.setenv("OPENAI_API_KEY", "openai-key")
    assert OpenAIEmbedder().base_url == "http://openai-env/v1"
    assert OpenAIEmbedder()._headers()["Authorization"] == "Bearer openai-key"
    clean_env.setenv("LOVIA_EMBEDDING_BASE_URL", "http://lovia-env/v1/")
    clean_env.setenv("LOVIA_EMBEDDING_API_KEY", "lovia-key")
    assert OpenAIEmbedder().base_url == "http://lovia-env/v1"
    assert OpenAIEmbedder()._headers()["Authorization"] == "Bearer lovia-key"
    explicit = OpenAIEmbedder(base_url="http://arg/v1/", api_key="arg-key")
    assert explicit.base_url == "http://arg/v1"
    assert explicit._headers()["Authorization"] == "Bearer arg-key"


def test_headers(clean_env) -> None:
    keyed = OpenAIEmbedder(
        base_url="http://x/v1",
        api_key="k",
        default_headers={"authorization": "Bearer mine", "X-Team": "a"},
    )
    headers = keyed._headers()
    assert headers["Authorization"] == "Bearer k"
    assert headers["authorization"] == "Bearer k"
    assert headers["X-Team"] == "a"
    assert headers == {"Authorization": "Bearer k", "X-Team": "a"}
    keyless = OpenAIEmbedder(base_url="http://x/v1", default_headers={"Authorization": "Basic u"})
    assert keyless._headers() == {"Authorization": "Basic u"}
    assert "Authorization" not in OpenAIEmbedder(base_url="http://x/v1")._headers()


def test_bad_base_url(clean_env) -> None:
    with pytest.raises(UserError, match="invalid base URL"):
        OpenAIEmbedder(base_url="not a url")


async def test_official_host_needs_a_key(clean_env) -> None:
    embedder = OpenAIEmbedder()
    assert await embedder.embed([]) == []
    with pytest.raises(UserError, match="requires an API key"):
        await embedder.embed(["hello"])


async def test_embed_against_the_fake_server(fake_openai, clean_env, embedders) -> None:
    embedder = embedders(base_url=fake_openai.base_url + "/", api_key="secret")
    vectors = await embedder.embed(["hello world", "world hello", "something else"])
    assert len(vectors) == 3
    assert vectors[0] == pytest.approx(vectors[1])
    assert vectors[0] != pytest.approx(vectors[2])
    (request,) = fake_openai.embedding_requests()
    assert request.path == "/v1/embeddings"
    assert request.json == {
        "model": "text-embedding-3-small",
        "input": ["hello world", "world hello", "something else"],
    }
    assert request.headers["authorization"] == "Bearer secret"


async def test_empty_input_sends_nothing(fake_openai, clean_env, embedders) -> None:
    embedder = embedders(base_url=fake_openai.base_url, api_key="k")
    assert await embedder.embed([]) == []
    assert fake_openai.requests == []


async def test_batches_and_dimensions(fake_openai, clean_env, embedders) -> None:
    embedder = embedders(
        "text-embedding-3-large",
        base_url=fake_openai.base_url,
        api_key="k",
        dimensions=8,
        batch_size=2,
        default_headers={"X-Trace": "t1"},
    )
    vectors = await embedder.embed(["a", "b", "c", "d", "e"])
    assert [len(v) for v in vectors] == [8] * 5
    requests = fake_openai.embedding_requests()
    assert [r.json["input"] for r in requests] == [["a", "b"], ["c", "d"], ["e"]]
    assert all(r.json["dimensions"] == 8 for r in requests)
    assert all(r.json["model"] == "text-embedding-3-large" for r in requests)
    assert all(r.headers["x-trace"] == "t1" for r in requests)
    zero = embedders(base_url=fake_openai.base_url, api_key="k", batch_size=0)
    fake_openai.reset()
    await zero.embed(["a", "b"])
    assert [r.json["input"] for r in fake_openai.embedding_requests()] == [["a"], ["b"]]


async def test_vectors_sorted_by_index(fake_openai, clean_env, embedders) -> None:
    fake_openai.script_embeddings(oai.embeddings([1.0, 0.0], [0.0, 1.0], shuffle=True))
    embedder = embedders(base_url=fake_openai.base_url, api_key="k")
    assert await embedder.embed(["first", "second"]) == [[1.0, 0.0], [0.0, 1.0]]


async def test_keyless_local_server_gets_no_auth_header(fake_openai, clean_env, embedders):
    embedder = embedders(base_url=fake_openai.base_url)
    await embedder.embed(["x"])
    assert "authorization" not in fake_openai.last_request.headers
    custom = embedders(base_url=fake_openai.base_url, default_headers={"Authorization": "Basic u"})
    await custom.embed(["x"])
    assert fake_openai.last_request.headers["authorization"] == "Basic u"


@pytest.mark.parametrize(("status", "retryable"), [(429, True), (400, False), (503, True)])
async def test_http_errors(fake_openai, clean_env, embedders, status, retryable) -> None:
    fake_openai.script_embeddings(oai.error(status, "nope", headers={"retry-after": "3"}))
    embedder = embedders(base_url=fake_openai.base_url, api_key="k")
    with pytest.raises(ProviderError) as info:
        await embedder.embed(["x"])
    err = info.value
    assert err.status_code == status
    assert err.retryable is retryable
    assert "nope" in (err.body or "")
    assert f"HTTP {status}" in str(err)
    assert err.retry_after == 3.0


@pytest.mark.parametrize(
    "payload",
    [
        {"object": "list"},
        {"data": "nope"},
        {"data": [{"index": 0}]},
        {"data": [{"index": "0", "embedding": [1.0]}]},
        {"data": [{"index": 0, "embedding": ["x"]}]},
        ["not", "a", "dict"],
    ],
)
async def test_malformed_answers(fake_openai, clean_env, embedders, payload) -> None:
    from tests.support.fake_server import json_reply

    fake_openai.script_embeddings(json_reply(200, payload))
    embedder = embedders(base_url=fake_openai.base_url, api_key="k")
    with pytest.raises(ProviderError, match="not in OpenAI format") as info:
        await embedder.embed(["x"])
    assert info.value.retryable is False


async def test_non_json_answer(fake_openai, clean_env, embedders) -> None:
    from tests.support.fake_server import Reply

    fake_openai.script_embeddings(Reply(body=b"<html>oops</html>"))
    embedder = embedders(base_url=fake_openai.base_url, api_key="k")
    with pytest.raises(ProviderError, match="not in OpenAI format"):
        await embedder.embed(["x"])


async def test_vector_count_mismatch(fake_openai, clean_env, embedders) -> None:
    fake_openai.script_embeddings(oai.embeddings([1.0]))
    embedder = embedders(base_url=fake_openai.base_url, api_key="k")
    with pytest.raises(ProviderError, match="returned 1 vectors for 2 inputs"):
        await embedder.embed(["a", "b"])


async def test_transport_errors_are_retryable(fake_openai, clean_env, embedders) -> None:
    fake_openai.script_embeddings(oai.embeddings([1.0]).stall())
    slow = embedders(base_url=fake_openai.base_url, api_key="k", timeout=0.3)
    with pytest.raises(ProviderError, match="timed out") as info:
        await slow.embed(["x"])
    assert info.value.retryable is True
    port = fake_openai.port
    fake_openai.stop()
    down = embedders(base_url=f"http://127.0.0.1:{port}/v1", api_key="k")
    with pytest.raises(ProviderError, match="could not connect") as info:
        await down.embed(["x"])
    assert info.value.retryable is True


async def test_aclose_closes_only_an_owned_client(fake_openai, clean_env) -> None:
    import openai

    embedder = OpenAIEmbedder(base_url=fake_openai.base_url, api_key="k")
    await embedder.embed(["x"])
    owned = embedder._owned
    assert owned is not None and not owned.is_closed()
    await embedder.aclose()
    assert owned.is_closed()
    await embedder.embed(["y"])  # a new client is built on demand
    await embedder.aclose()

    client = openai.AsyncOpenAI(api_key="theirs", base_url=fake_openai.base_url, max_retries=0)
    borrowed = OpenAIEmbedder(client=client)
    assert borrowed.base_url == fake_openai.base_url
    await borrowed.embed(["z"])
    assert fake_openai.last_request.headers["authorization"] == "Bearer theirs"
    await borrowed.aclose()
    assert not client.is_closed()
    await client.close()


async def test_an_httpx_client_works_too(fake_openai, clean_env) -> None:
    import httpx

    async with httpx.AsyncClient() as client:
        embedder = OpenAIEmbedder(base_url=fake_openai.base_url, api_key="k", client=client)
        vectors = await embedder.embed(["hello", "world"])
        assert len(vectors) == 2
        request = fake_openai.last_request
        assert request.json == {"model": "text-embedding-3-small", "input": ["hello", "world"]}
        assert request.headers["authorization"] == "Bearer k"
        fake_openai.script_embeddings(oai.rate_limited("4"))
        with pytest.raises(ProviderError) as info:
            await embedder.embed(["x"])
        assert (info.value.status_code, info.value.retryable, info.value.retry_after) == (
            429,
            True,
            4.0,
        )
        fake_openai.script_embeddings(oai.embeddings([1.0]).stall())
        slow = OpenAIEmbedder(
            base_url=fake_openai.base_url, api_key="k", client=client, timeout=0.3
        )
        with pytest.raises(ProviderError, match="timed out") as info:
            await slow.embed(["x"])
        assert info.value.retryable is True
        await embedder.aclose()
        assert not client.is_closed


async def test_vector_index_with_openai_embedder(fake_openai, clean_env, embedders, tmp_path):
    embedder = embedders(base_url=fake_openai.base_url, api_key="k", batch_size=2)
    async with VectorIndex(tmp_path / "v.db", embedder) as index:
        await index.add(
            [
                Doc("1", "the cat sat on the mat"),
                Doc("2", "stock prices fell sharply"),
                Doc("3", "a cat and a mat"),
            ]
        )
        hits = await index.search("cat mat", 2)
    assert {h.doc.id for h in hits} == {"1", "3"}
    inputs = [r.json["input"] for r in fake_openai.embedding_requests()]
    assert inputs == [
        ["the cat sat on the mat", "stock prices fell sharply"],
        ["a cat and a mat"],
        ["cat mat"],
    ]

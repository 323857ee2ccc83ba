"""The generated-code cache: same classes from cached code, only trusted files, bounded writes."""

from __future__ import annotations
import __future__

import ast
import asyncio
import json
import marshal
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lovia_server import codegen_cache
from lovia_server.client import StdioClient
from lovia_server.codegen_cache import CodegenCache

# Classes of every hooked kind, and what they do, printed as JSON with the cache's counts.
PROBE = r"""
import json, sys
from pathlib import Path
from lovia_server.codegen_cache import CodegenCache

cache = CodegenCache(Path(sys.argv[1]))
cache.load()
cache.install()
import dataclasses, typing, attr, attr._make

@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    y: int = 0

@dataclasses.dataclass
class Bag:
    items: list = dataclasses.field(default_factory=list)

@attr.define
class Box:
    w: int
    h: "int" = 1

class Annotated:
    where: "list[Point]"
    box: "Box | None"

hooked = ["exec" in vars(dataclasses), "compile" in vars(typing), "compile" in vars(attr._make)]
p = Point(1, 2)
try:
    p.x = 5
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
bag = Bag()
bag.items.append(1)
seen = {
    "repr": [repr(p), repr(Bag()), repr(Box(2))],
    "eq": [p == Point(1, 2), p != Point(1, 3), Box(2) == Box(2, 1), Box(2) != Box(3)],
    "order": sorted([Point(3), Point(1, 5), Point(1, 2)]) == [Point(1, 2), Point(1, 5), Point(3)],
    "hash": hash(p) == hash(Point(1, 2)),
    "frozen": frozen,
    "fresh_default": Bag().items == [],
    "hints": str(typing.get_type_hints(Annotated, globals())),
}
hits, misses, problem, saving = cache.hits, cache.misses, cache.problem, cache.needs_saving()
cache.settle()
unhooked = ["exec" in vars(dataclasses), "compile" in vars(typing), "compile" in vars(attr._make)]
print(json.dumps({"seen": seen, "hits": hits, "misses": misses, "problem": problem,
                  "saving": saving, "hooked": hooked, "unhooked": unhooked}))
"""


def probe(path: Path, tmp_path: Path) -> dict:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    done = subprocess.run(
        [sys.executable, str(script), str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_second_start_builds_the_same_classes_from_cached_code(tmp_path):
    path = tmp_path / "cache" / "codegen.marshal"
    first = probe(path, tmp_path)
    assert first["misses"] > 10 and first["problem"].startswith("not readable")
    assert first["saving"] and path.is_file()
    assert first["hooked"] == [True, True, True] and first["unhooked"] == [False, False, False]
    assert first["seen"]["repr"] == ["Point(x=1, y=2)", "Bag(items=[])", "Box(w=2, h=1)"]
    assert all(first["seen"]["eq"]) and first["seen"]["order"] and first["seen"]["hash"]
    assert first["seen"]["frozen"] and first["seen"]["fresh_default"]
    assert first["seen"]["hints"] == "{'where': list[__main__.Point], 'box': __main__.Box | None}"
    second = probe(path, tmp_path)
    assert second["seen"] == first["seen"]
    assert second["misses"] == 0 and second["hits"] == first["hits"] + first["misses"]
    assert second["problem"] is None and not second["saving"]
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)


def test_cached_code_is_what_compile_makes(tmp_path):
    path = tmp_path / "codegen.marshal"
    probe(path, tmp_path)
    cache = CodegenCache(path)
    cache.load()
    assert cache.problem is None and len(cache._known) > 10
    for (source, filename, mode, flags), code in cache._known.items():
        assert code == compile(source, filename, mode, flags, True)
    modes = {key[2] for key in cache._known}
    assert modes == {"exec", "eval"}  # methods, and ForwardRef's annotations


def test_a_file_rewritten_only_when_much_of_start_up_was_new(tmp_path):
    path = tmp_path / "codegen.marshal"
    probe(path, tmp_path)
    before = path.stat()
    probe(path, tmp_path)
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    cache = CodegenCache(path)
    cache.load()
    cache.hits, cache.misses = 100, 2
    assert not cache.needs_saving()
    cache.misses = 3
    assert cache.needs_saving()


@pytest.mark.parametrize(
    "spoil, problem",
    [
        (lambda p: p.write_bytes(b"\xe3garbage"), "corrupt"),
        (lambda p: p.write_bytes(p.read_bytes()[:1000]), "corrupt"),
        (lambda p: p.write_bytes(marshal.dumps((99, sys.version, {}))), "of another format"),
        (lambda p: p.write_bytes(marshal.dumps((1, "2.7.18", {}))), "of another format"),
        (
            lambda p: p.write_bytes(marshal.dumps((1, sys.version, {("x", "y", "exec", 0): 3}))),
            "of another format",
        ),
        (lambda p: p.chmod(0o666), "writable by others"),
    ],
    ids=["garbage", "truncated", "format", "interpreter", "not-code", "group-writable"],
)
def test_a_spoilt_or_untrusted_file_is_not_used(tmp_path, spoil, problem):
    path = tmp_path / "codegen.marshal"
    probe(path, tmp_path)
    spoil(path)
    cache = CodegenCache(path)
    cache.load()
    assert cache._known == {} and problem in cache.problem
    seen = probe(path, tmp_path)  # the classes still work, compiled afresh
    assert seen["hits"] < seen["misses"] and seen["seen"]["repr"][0] == "Point(x=1, y=2)"


def test_a_symlinked_or_foreign_file_is_not_used(tmp_path):
    real = tmp_path / "real.marshal"
    probe(real, tmp_path)
    link = tmp_path / "link.marshal"
    link.symlink_to(real)
    cache = CodegenCache(link)
    cache.load()
    assert cache._known == {} and cache.problem.startswith("not readable")
    if os.geteuid() != 0:
        return
    os.chown(real, 65534, 65534)  # another user's file, though it is not writable by others
    cache = CodegenCache(real)
    cache.load()
    assert cache._known == {} and "not the user's own" in cache.problem


def test_a_cache_that_cannot_be_written_changes_nothing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    seen = probe(blocker / "codegen.marshal", tmp_path)
    assert seen["saving"] and seen["seen"]["repr"][0] == "Point(x=1, y=2)"
    assert blocker.read_text() == "not a directory"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_turned_off_and_where_it_lives(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("LOVIA_CODEGEN_CACHE", raising=False)
    path = codegen_cache.default_path()
    assert path is not None and path.parent == tmp_path / "lovia"
    assert re.fullmatch(r"codegen-cpython-\d+-[0-9a-f]{8}\.marshal", path.name)
    for off in ("off", "0", "false", "NO"):
        monkeypatch.setenv("LOVIA_CODEGEN_CACHE", off)
        assert codegen_cache.default_path() is None


def test_the_hooks_keep_the_builtins_semantics(tmp_path):
    cache = CodegenCache(None)
    run = cache._exec_hook(0)
    namespace = {"__name__": "probe", "run": run}
    exec(
        "def f():\n    result = []\n    run('result.append(__name__)')\n    return result\n",
        namespace,
    )
    assert namespace["f"]() == ["probe"]  # no globals given: the caller's, as the builtin does
    target: dict = {}
    run("value = 6 * 7", target)
    assert target["value"] == 42
    lazy = cache._compile_hook(__future__.annotations.compiler_flag)
    code = lazy("def f(x: undefined_name) -> 'x': pass", "<probe>", "exec")
    exec(code, {})  # the inherited future import: annotations are not evaluated
    tree = lazy("x = 1", "<p>", "exec", ast.PyCF_ONLY_AST)
    assert isinstance(tree, ast.Module)
    assert isinstance(lazy("x = 1", "<p>", "exec", 0, True), type(code))
    assert cache.misses == 3 and cache.hits == 0  # the AST and dont_inherit calls went past
    lazy("def f(x: undefined_name) -> 'x': pass", "<probe>", "exec")
    assert cache.hits == 1


async def test_the_server_keeps_its_start_up_code_for_the_next_start(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "LOVIA_LOG_LEVEL": "DEBUG"}
    monkeypatch.delenv("LOVIA_CODEGEN_CACHE", raising=False)
    logs = []
    for start in range(2):
        log = tmp_path / f"server-{start}.log"
        with log.open("w") as stderr:
            client = StdioClient(on_event=lambda e: None, settings={}, env=env, stderr=stderr)
            await client.start(root, {"client": "test", "stateDir": str(tmp_path / "state")})
            await client.request("lovia/status", {})
            for _ in range(600):  # the runtime settles once its warm-up is done
                if "codegen_cache:" in log.read_text():
                    break
                await asyncio.sleep(0.1)
            await client.close()
        logs.append(log.read_text())
    counts = [
        tuple(map(int, re.search(r"codegen_cache: (\d+) hits, (\d+) misses", text).groups()))
        for text in logs
    ]
    (hits0, misses0), (hits1, misses1) = counts
    assert misses0 > 1000 and ", saved" in logs[0]
    assert hits1 > 1000 and misses1 <= 0.02 * (hits1 + misses1) and ", saved" not in logs[1]
    assert list((tmp_path / "cache" / "lovia").glob("codegen-*.marshal"))

"""Keep the code that dataclasses, attrs and typing generate at import time between starts.

Why: those libraries write the source of ``__init__``, ``__eq__``, ``__repr__``, ``__hash__``...
for every class they build, and turn every string annotation into a ``ForwardRef``, and compile
each one while the server imports pygls, lsprotocol and lovia: about 2,800 compiles, a third of
the time to ``initialize`` and to a ready runtime. ``compile`` depends only on its source, file
name, mode and flags, so the code objects are kept in one marshal file per interpreter (as
Python keeps ``.pyc`` files) and a start that finds them there skips the compiler.

``install`` hooks those modules before their first use, ``settle`` runs once start-up is done:
it writes what start-up used when much of it was new, then takes the hooks out again, so later
code compiles as usual and the cache's memory is released. ``LOVIA_CODEGEN_CACHE=off`` turns
it off. The file is trusted like a ``.pyc``: it is read only when the current user owns it and
nobody else can write it.
"""

from __future__ import annotations
import __future__

import asyncio
import builtins
import logging
import marshal
import os
import stat
import sys
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

FORMAT = 1
"""Bumped when the file's layout changes; a file of another format is ignored."""
MISS_SHARE = 0.02
"""Rewrite the file when more than this share of the lookups missed (a few always do: attrs
puts a per-process hash into the source of some ``__hash__`` methods)."""
MAX_BYTES = 64 * 1024 * 1024
"""A larger file is not read (it cannot be one this module wrote)."""

Key = tuple[str, str, str, int]
"""(source, file name, mode, compiler flags): everything ``compile`` depends on."""

_compile = builtins.compile
_exec = builtins.exec
logger = logging.getLogger("lovia_server.codegen_cache")


def default_path() -> Path | None:
    """``$XDG_CACHE_HOME/lovia/codegen-<interpreter>.marshal``; None when turned off."""
    if os.environ.get("LOVIA_CODEGEN_CACHE", "").strip().lower() in {"0", "off", "false", "no"}:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    build = f"{sys.version}|{marshal.version}|{sys.flags.optimize}".encode()
    tag = sys.implementation.cache_tag or sys.implementation.name
    return Path(base) / "lovia" / f"codegen-{tag}-{zlib.crc32(build):08x}.marshal"


def _future_flags(module: ModuleType) -> int:
    """The ``from __future__`` flags a ``compile``/``exec`` call in ``module`` inherits."""
    flags = 0
    for value in vars(module).values():
        if isinstance(value, __future__._Feature):
            flags |= value.compiler_flag
    return flags


class CodegenCache:
    """Code objects by everything their compilation depends on, loaded from and saved to one
    file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.hits = 0
        self.misses = 0
        self.problem: str | None = None
        """Why the file was not used (missing, unreadable, foreign, corrupt), for the log."""
        self._known: dict[Key, CodeType] = {}
        self._used: dict[Key, CodeType] = {}
        self._hooks: list[tuple[ModuleType, str]] = []

    # ---------------------------------------------------------------------------- lookups

    def code(self, source: str, filename: str, mode: str, flags: int) -> CodeType:
        key = (source, filename, mode, flags)
        code = self._known.get(key)
        if code is None:
            code = _compile(source, filename, mode, flags, True)
            self._known[key] = code  # classes often share a method's source (or a ForwardRef's)
            self.misses += 1
        else:
            self.hits += 1
        self._used[key] = code
        return code

    # ------------------------------------------------------------------------------ hooks

    def install(self) -> None:
        """Route the generated-code compiles of dataclasses, attrs and typing through the cache.

        Each hook is a module global that shadows the builtin of the same name, so nothing in
        those modules is replaced; a module that already has such a global is left alone.
        """
        import dataclasses
        import typing

        self._hook(dataclasses, "exec", self._exec_hook(_future_flags(dataclasses)))
        self._hook(typing, "compile", self._compile_hook(_future_flags(typing)))
        try:
            import attr._make as attrs_make
        except ImportError:  # attrs comes with pygls; without it there is nothing to hook
            return
        self._hook(attrs_make, "compile", self._compile_hook(_future_flags(attrs_make)))

    def uninstall(self) -> None:
        for module, name in self._hooks:
            module.__dict__.pop(name, None)
        self._hooks.clear()

    def _hook(self, module: ModuleType, name: str, hook: Callable[..., Any]) -> None:
        if name in module.__dict__:
            return
        setattr(module, name, hook)
        self._hooks.append((module, name))

    def _compile_hook(self, inherited: int) -> Callable[..., Any]:
        cache = self

        def compile(  # shadows the builtin inside one module, on purpose
            source: Any,
            filename: Any,
            mode: str,
            flags: int = 0,
            dont_inherit: bool = False,
            optimize: int = -1,
            **kwargs: Any,
        ) -> Any:
            plain = not (flags or dont_inherit or kwargs) and optimize == -1
            if plain and type(source) is str and type(filename) is str:
                return cache.code(source, filename, mode, inherited)
            if not dont_inherit:
                flags |= inherited
            return _compile(source, filename, mode, flags, True, optimize, **kwargs)

        return compile

    def _exec_hook(self, inherited: int) -> Callable[..., Any]:
        cache = self

        def exec(  # shadows the builtin inside one module, on purpose
            source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any
        ) -> None:
            if globals is None:  # the builtin would run in this frame's namespace
                caller = sys._getframe(1)
                globals = caller.f_globals
                if locals is None:
                    locals = caller.f_locals
            if type(source) is str:
                source = cache.code(source, "<string>", "exec", inherited)
            _exec(source, globals, locals, **kwargs)

        return exec

    # --------------------------------------------------------------------------- the file

    def load(self) -> None:
        """Read the file if it is one this user wrote; anything else leaves the cache empty."""
        if self.path is None:
            self.problem = "turned off"
            return
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags)
        except OSError as exc:
            self.problem = f"not readable ({exc.strerror})"
            return
        try:
            with os.fdopen(fd, "rb") as file:
                info = os.fstat(file.fileno())
                if not _trusted(info):
                    self.problem = "not the user's own file, or writable by others"
                    return
                if info.st_size > MAX_BYTES:
                    self.problem = "too large"
                    return
                data = file.read()
        except OSError as exc:
            self.problem = f"not readable ({exc.strerror})"
            return
        try:
            content = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            self.problem = "corrupt"
            return
        self._known = _entries(content)
        if not self._known and content != (FORMAT, sys.version, {}):
            self.problem = "of another format or interpreter"

    def needs_saving(self) -> bool:
        looked_up = self.hits + self.misses
        return self.misses > 0 and self.misses > MISS_SHARE * looked_up

    def save(self) -> bool:
        """Write the code start-up used (not what it did not: the file stays the size of one
        start). Returns whether the file was written; a failure leaves the old file."""
        if self.path is None:
            return False
        entries = dict(self._used)  # one C-level copy: atomic against a thread still compiling
        try:
            data = marshal.dumps((FORMAT, sys.version, entries))
        except ValueError:
            return False
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                0o600,
            )
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(tmp, self.path)
        except OSError as exc:
            logger.debug("codegen_cache.save_failed: %s", exc)
            try:
                tmp.unlink()
            except OSError:
                pass
            return False
        return True

    def settle(self) -> None:
        """Start-up is done: save if much of it was new, unhook and let the entries go."""
        self.uninstall()
        saved = self.save() if self.needs_saving() else False
        logger.debug(
            "codegen_cache: %d hits, %d misses%s%s",
            self.hits,
            self.misses,
            ", saved" if saved else "",
            f" (file {self.problem})" if self.problem else "",
        )
        self._known = {}
        self._used = {}


def _trusted(info: os.stat_result) -> bool:
    if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o022:
        return False
    return not hasattr(os, "geteuid") or info.st_uid == os.geteuid()


def _entries(content: object) -> dict[Key, CodeType]:
    """The file's entries, if it holds this format for this interpreter (else none)."""
    if not (isinstance(content, tuple) and len(content) == 3):
        return {}
    form, version, entries = content
    if form != FORMAT or version != sys.version or not isinstance(entries, dict):
        return {}
    for key, code in entries.items():
        if not (
            isinstance(code, CodeType)
            and isinstance(key, tuple)
            and len(key) == 4
            and all(isinstance(part, str) for part in key[:3])
            and isinstance(key[3], int)
        ):
            return {}
    return entries


_active: CodegenCache | None = None


def install() -> CodegenCache | None:
    """Load the file and hook the generators, once per process (before pygls is imported)."""
    global _active
    if _active is None:
        path = default_path()
        if path is None:
            return None
        _active = CodegenCache(path)
        _active.load()
        _active.install()
    return _active


def settle() -> None:
    """Once start-up has imported what it needs (blocking: ``settle_in_thread`` from a loop)."""
    global _active
    cache, _active = _active, None
    if cache is not None:
        cache.settle()


async def settle_in_thread() -> None:
    """``settle`` off the event loop; a failure only costs the next start its cache."""
    try:
        await asyncio.to_thread(settle)
    except Exception:
        logger.debug("codegen_cache.settle_failed", exc_info=True)


__all__ = ["CodegenCache", "default_path", "install", "settle", "settle_in_thread"]

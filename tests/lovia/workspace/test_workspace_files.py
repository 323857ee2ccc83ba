"""LocalWorkspaceSession file methods with real files, symlinks, hard links and FIFOs."""

from __future__ import annotations

import asyncio
import gc
import os
import stat
import threading
from pathlib import Path

import pytest

from lovia.workspace import (
    FileTooLargeError,
    LocalWorkspaceSession,
    PermissionDeniedError,
    WorkspaceClosedError,
    WorkspaceError,
    WorkspaceLimits,
    WorkspacePolicy,
)


def make(root: Path, policy: WorkspacePolicy | None = None, **kw: object) -> LocalWorkspaceSession:
    return LocalWorkspaceSession(root, policy=policy or WorkspacePolicy.coding(), **kw)  # type: ignore[arg-type]


class TestReadText:
    async def test_keeps_line_endings_and_counts_last_line(self, root: Path) -> None:
        (root / "f.txt").write_bytes(b"line1\nline2\r\nline3")
        r = await make(root).read_text("f.txt")
        assert r.content == "line1\nline2\r\nline3"
        assert (r.start, r.end, r.total_lines, r.truncated) == (1, 3, 3, False)

    async def test_paging(self, root: Path) -> None:
        (root / "f.txt").write_text("a\nb\nc\nd\n")
        s = make(root)
        r = await s.read_text("f.txt", start=2, end=3)
        assert r.content == "b\nc\n" and r.truncated and (r.start, r.end) == (2, 3)
        r = await s.read_text("f.txt", start=3, end=99)
        assert r.content == "c\nd\n" and not r.truncated and r.end == 4
        r = await s.read_text("f.txt", start=9)
        assert r.content == "" and r.start == 9 and r.total_lines == 4

    async def test_range_errors_in_order(self, root: Path) -> None:
        (root / "f.txt").write_text("x\n")
        s = make(root)
        with pytest.raises(WorkspaceError, match=r"^start must be >= 1\.$"):
            await s.read_text("f.txt", start=0)
        with pytest.raises(WorkspaceError, match=r"^end must be >= 1\.$"):
            await s.read_text("f.txt", end=0)
        with pytest.raises(WorkspaceError, match=r"^end must be >= start\.$"):
            await s.read_text("f.txt", start=3, end=2)
        with pytest.raises(WorkspaceError, match="Not a file: missing.txt"):
            await s.read_text("missing.txt", start=0)

    async def test_binary_is_refused_before_paging(self, root: Path) -> None:
        (root / "b.bin").write_bytes(b"ok\n" + b"\x00" * 10 + b"\nmore\n")
        with pytest.raises(WorkspaceError, match="Binary file: b.bin") as exc:
            await make(root).read_text("b.bin", start=3, end=3)
        assert "xxd" in str(exc.value)

    async def test_utf16_is_binary(self, root: Path) -> None:
        (root / "u.txt").write_bytes("hello".encode("utf-16"))
        with pytest.raises(WorkspaceError, match="Binary file"):
            await make(root).read_text("u.txt")

    async def test_gbk_is_not_utf8(self, root: Path) -> None:
        (root / "g.txt").write_bytes("中文内容，测试编码。".encode("gbk") * 5)
        with pytest.raises(WorkspaceError, match="Not UTF-8 text: g.txt") as exc:
            await make(root).read_text("g.txt")
        assert "iconv" in str(exc.value)

    async def test_stray_bytes_still_read(self, root: Path) -> None:
        (root / "s.txt").write_bytes(b"hello world, this is fine \xff text\n" * 3)
        r = await make(root).read_text("s.txt")
        assert "\ufffd" in r.content

    async def test_char_clip_keeps_header_numbers(self, root: Path) -> None:
        (root / "big.txt").write_text("0123456789\n" * 100)
        s = make(root, limits=WorkspaceLimits(max_file_read_chars=50))
        r = await s.read_text("big.txt")
        assert r.truncated and r.end == 100 and r.total_lines == 100
        assert (
            "[... truncated: showing 50 of 1100 chars. Use start/end to read the rest in pages.]"
            in r.content
        )

    async def test_oversized_reads_leading_portion(self, root: Path) -> None:
        (root / "big.txt").write_text("abc\n" * 100)
        s = make(root, limits=WorkspaceLimits(max_file_read_bytes=20))
        r = await s.read_text("big.txt")
        assert r.truncated and r.total_lines == 5
        assert "leading portion" in r.content

    async def test_empty_file(self, root: Path) -> None:
        (root / "e.txt").write_text("")
        r = await make(root).read_text("e.txt")
        assert (r.total_lines, r.start, r.end, r.content) == (0, 1, 0, "")

    async def test_not_a_file(self, root: Path) -> None:
        (root / "d").mkdir()
        with pytest.raises(WorkspaceError, match="Not a file: d"):
            await make(root).read_text("d")

    async def test_fifo_is_refused_without_hanging(self, root: Path) -> None:
        os.mkfifo(root / "pipe")
        s = make(root)
        with pytest.raises(WorkspaceError, match="Not a file: pipe"):
            await asyncio.wait_for(s.read_text("pipe"), 5)
        with pytest.raises(WorkspaceError, match="Not a file: pipe"):
            await asyncio.wait_for(s.read_bytes("pipe"), 5)
        with pytest.raises(WorkspaceError):
            await asyncio.wait_for(s.edit_text("pipe", "a", "b"), 5)
        with pytest.raises(WorkspaceError):
            await asyncio.wait_for(s.write_text("pipe", "x"), 5)
        assert stat.S_ISFIFO(os.lstat(root / "pipe").st_mode)

    async def test_symlink_to_fifo_and_device_refused(self, root: Path) -> None:
        os.mkfifo(root / "pipe")
        (root / "to_pipe").symlink_to(root / "pipe")
        (root / "to_null").symlink_to("/dev/null")
        s = make(root, WorkspacePolicy.trusted())
        for name in ("to_pipe", "to_null"):
            with pytest.raises(WorkspaceError, match="Not a file"):
                await asyncio.wait_for(s.read_text(name), 5)

    async def test_denied_and_outside(self, root: Path, outside: Path) -> None:
        (root / ".env").write_text("x")
        (root / "alias").symlink_to(root / ".env")
        s = make(root, WorkspacePolicy(denied_paths=(".env",)))
        for p in (".env", "alias", "./.env", f"{root}/.env", "sub/../.env"):
            with pytest.raises(
                PermissionDeniedError, match=r"Path '.env' is denied by workspace policy\."
            ):
                await s.read_text(p)
        with pytest.raises(
            PermissionDeniedError, match="Reading outside the workspace is not permitted"
        ) as exc:
            await s.read_text(str(outside / "secret.txt"))
        assert "readable=" in str(exc.value)

    async def test_outside_ask_is_assumed_approved(self, root: Path, outside: Path) -> None:
        r = await make(root).read_text(str(outside / "secret.txt"))
        assert r.path == (outside / "secret.txt").as_posix()


class TestReadBytes:
    async def test_cap(self, root: Path) -> None:
        (root / "img.png").write_bytes(b"x" * 2000)
        s = make(root)
        assert (await s.read_bytes("img.png")).data == b"x" * 2000
        with pytest.raises(
            FileTooLargeError, match=r"^img.png is 2,000 bytes \(limit 1,000 bytes\)\.$"
        ):
            await s.read_bytes("img.png", max_bytes=1000)


class TestWriteText:
    async def test_create_update(self, root: Path) -> None:
        s = make(root)
        r = await s.write_text("a/b/c.txt", "héllo")
        assert (r.ok, r.action, r.bytes_written, r.path) == (True, "created", 6, "a/b/c.txt")
        assert (root / "a/b/c.txt").read_text() == "héllo"
        assert stat.S_IMODE((root / "a/b/c.txt").stat().st_mode) == 0o644
        r = await s.write_text("a/b/c.txt", "héllo")
        assert r.action == "updated"

    async def test_permission_bits_preserved(self, root: Path) -> None:
        f = root / "run.sh"
        f.write_text("#!/bin/sh\n")
        f.chmod(0o750)
        await make(root).write_text("run.sh", "#!/bin/sh\necho\n")
        assert stat.S_IMODE(f.stat().st_mode) == 0o750

    async def test_create_only(self, root: Path) -> None:
        s = make(root)
        assert (await s.write_text("n.txt", "1", create_only=True)).action == "created"
        r = await s.write_text("n.txt", "2", create_only=True)
        assert not r.ok and r.action == "unchanged"
        assert r.message == "file already exists; retry without create_only to overwrite"
        assert (root / "n.txt").read_text() == "1"

    async def test_create_only_does_not_follow_a_dangling_symlink(
        self, root: Path, outside: Path
    ) -> None:
        (root / "d").symlink_to(outside / "new.txt")
        s = make(root, WorkspacePolicy.trusted())  # outside writes ask → assumed approved
        r = await s.write_text("d", "x", create_only=True)
        assert r.ok and (outside / "new.txt").read_text() == "x"  # judged and written by target

    async def test_root_and_dir(self, root: Path) -> None:
        (root / "d").mkdir()
        s = make(root)
        with pytest.raises(
            WorkspaceError, match=r"^Cannot write to the workspace root as a file\.$"
        ):
            await s.write_text(".", "x")
        with pytest.raises(WorkspaceError, match="^Is a directory: d$"):
            await s.write_text("d", "x")

    async def test_denials(self, root: Path, outside: Path) -> None:
        with pytest.raises(
            PermissionDeniedError, match="Writing outside the workspace is not permitted"
        ) as exc:
            await make(root).write_text(str(outside / "x.txt"), "x")
        assert "writable=" in str(exc.value)
        ro = make(root, WorkspacePolicy.readonly())
        with pytest.raises(
            PermissionDeniedError, match=r"Workspace policy denies writing to 'a.txt'\."
        ):
            await ro.write_text("a.txt", "x")
        assert not (outside / "x.txt").exists() and not (root / "a.txt").exists()

    async def test_write_never_goes_through_a_hard_link(self, root: Path, outside: Path) -> None:
        victim = outside / "victim.txt"
        victim.write_text("original\n")
        os.link(victim, root / "inside.txt")
        s = make(root)
        await s.write_text("inside.txt", "replaced\n")
        assert victim.read_text() == "original\n"
        assert (root / "inside.txt").read_text() == "replaced\n"
        (root / "again.txt").write_text("a")
        os.link(victim, root / "edit.txt")
        r = await s.edit_text("edit.txt", "original", "edited")
        assert r.ok and victim.read_text() == "original\n"

    async def test_no_temp_files_left(self, root: Path) -> None:
        s = make(root)
        for i in range(5):
            await s.write_text("f.txt", str(i))
        assert sorted(os.listdir(root)) == ["f.txt"]

    async def test_parent_is_a_file(self, root: Path) -> None:
        (root / "f").write_text("x")
        with pytest.raises(WorkspaceError, match="not a directory"):
            await make(root).write_text("f/g.txt", "x")


class TestCheckUseRace:
    """A symlink swapped in after the ACL check cannot redirect a write or a read."""

    async def test_swap_parent_dir_between_check_and_write(
        self, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (root / "sub").mkdir()
        s = make(root)
        original = LocalWorkspaceSession._acl

        def acl_then_swap(self: LocalWorkspaceSession, path: str, *ops: str) -> object:
            rp = original(self, path, *ops)  # type: ignore[arg-type]
            (root / "sub").rename(root / "sub.old")
            (root / "sub").symlink_to(outside)
            return rp

        monkeypatch.setattr(LocalWorkspaceSession, "_acl", acl_then_swap)
        with pytest.raises(WorkspaceError, match="changed"):
            await s.write_text("sub/pwned.txt", "x")
        assert not (outside / "pwned.txt").exists()

    async def test_swap_final_component(
        self, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (root / "f.txt").write_text("mine\n")
        s = make(root)
        original = LocalWorkspaceSession._acl

        def acl_then_swap(self: LocalWorkspaceSession, path: str, *ops: str) -> object:
            (root / "f.txt").unlink()
            (root / "f.txt").write_text("mine\n")  # a regular file at check time
            rp = original(self, path, *ops)  # type: ignore[arg-type]
            assert rp.inside
            (root / "f.txt").unlink()
            (root / "f.txt").symlink_to(outside / "secret.txt")  # swapped before use
            return rp

        monkeypatch.setattr(LocalWorkspaceSession, "_acl", acl_then_swap)
        for op in (
            s.write_text("f.txt", "pwned"),
            s.edit_text("f.txt", "outside", "pwned"),
            s.read_text("f.txt"),
        ):
            with pytest.raises(WorkspaceError):
                await op
        assert (outside / "secret.txt").read_text() == "outside secret\n"

    async def test_concurrent_swapper_never_lands_a_write_outside(
        self, root: Path, outside: Path
    ) -> None:
        (root / "sub").mkdir()
        stop = threading.Event()

        def swapper() -> None:
            while not stop.is_set():
                try:
                    os.rename(root / "sub", root / "sub.real")
                    os.symlink(outside, root / "sub")
                    os.unlink(root / "sub")
                    os.rename(root / "sub.real", root / "sub")
                except OSError:
                    pass

        t = threading.Thread(target=swapper, daemon=True)
        t.start()
        s = make(root)
        try:
            for i in range(300):
                try:
                    await s.write_text(f"sub/f{i}.txt", "x")
                except WorkspaceError:
                    pass
        finally:
            stop.set()
            t.join()
        assert sorted(os.listdir(outside)) == ["secret.txt"]


class TestEditText:
    async def test_basic(self, root: Path) -> None:
        (root / "f.py").write_text("a = 1\nb = 2\n")
        r = await make(root).edit_text("f.py", "b = 2", "b = 3")
        assert (r.ok, r.changed, r.replacements) == (True, True, 1)
        assert (root / "f.py").read_text() == "a = 1\nb = 3\n"

    async def test_empty_old_echoes_raw_path(self, root: Path) -> None:
        r = await make(root).edit_text("./nope/../x.py", "", "y")
        assert not r.ok and r.path == "./nope/../x.py"
        assert r.message == "old must not be empty; read the file and provide an exact span"

    async def test_ambiguous(self, root: Path) -> None:
        (root / "f.txt").write_text("x x x")
        before = (root / "f.txt").stat()
        r = await make(root).edit_text("f.txt", "x", "y")
        assert not r.ok and r.replacements == 3
        assert r.message is not None and r.message.startswith("old text matched 3 times;")
        assert "replace_all=true" in r.message
        after = (root / "f.txt").stat()
        assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
        r = await make(root).edit_text("f.txt", "x", "y", replace_all=True)
        assert r.ok and r.replacements == 3 and (root / "f.txt").read_text() == "y y y"

    async def test_not_found_and_noop(self, root: Path) -> None:
        (root / "f.txt").write_text("abc")
        s = make(root)
        r = await s.edit_text("f.txt", "zzz", "y")
        assert not r.ok and "old text not found" in (r.message or "")
        r = await s.edit_text("f.txt", "abc", "abc")
        assert (r.ok, r.changed, r.replacements) == (True, False, 1)

    async def test_crlf_retry(self, root: Path) -> None:
        (root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
        r = await make(root).edit_text("w.txt", "one\ntwo\n", "uno\ndos\n")
        assert r.ok
        assert (root / "w.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"

    async def test_not_utf8_untouched(self, root: Path) -> None:
        data = "中文".encode("gbk") + b"\n"
        (root / "g.txt").write_bytes(data)
        r = await make(root).edit_text("g.txt", "a", "b")
        assert not r.ok and "not valid UTF-8" in (r.message or "")
        assert (root / "g.txt").read_bytes() == data

    async def test_too_large(self, root: Path) -> None:
        (root / "big.txt").write_text("x" * 100)
        r = await make(root, limits=WorkspaceLimits(max_file_read_bytes=10)).edit_text(
            "big.txt", "x", "y"
        )
        assert not r.ok and "too large" in (r.message or "")

    async def test_needs_read_and_write(self, root: Path) -> None:
        (root / "f.txt").write_text("a")
        with pytest.raises(PermissionDeniedError, match="denies writing"):
            await make(root, WorkspacePolicy.readonly()).edit_text("f.txt", "a", "b")

    async def test_concurrent_edits_of_distinct_spans_all_land(self, root: Path) -> None:
        (root / "f.txt").write_text("".join(f"line{i}\n" for i in range(40)))
        s = make(root)
        results = await asyncio.gather(
            *(s.edit_text("f.txt", f"line{i}\n", f"LINE{i}\n") for i in range(40))
        )
        assert all(r.ok for r in results)
        assert (root / "f.txt").read_text() == "".join(f"LINE{i}\n" for i in range(40))

    async def test_reads_never_see_a_torn_write(self, root: Path) -> None:
        s = make(root, limits=WorkspaceLimits(max_file_read_chars=200_000))
        await s.write_text("f.txt", "a" * 100_000)
        seen: list[str] = []

        async def writer() -> None:
            for ch in "bcdefg":
                await s.write_text("f.txt", ch * 100_000)
                await asyncio.sleep(0)

        async def reader() -> None:
            for _ in range(30):
                content = (await s.read_text("f.txt")).content
                seen.append(content)
                await asyncio.sleep(0)

        await asyncio.gather(writer(), reader())
        assert all(len(c) == 100_000 and len(set(c)) == 1 for c in seen)


class TestLocksAndClose:
    async def test_lock_map_is_weak(self, root: Path) -> None:
        s = make(root)
        await s.write_text("a.txt", "x")
        await s.read_text("a.txt")
        gc.collect()
        assert len(s._locks) == 0

    async def test_symlink_and_target_share_a_lock(self, root: Path) -> None:
        (root / "t.txt").write_text("x")
        (root / "l.txt").symlink_to(root / "t.txt")
        s = make(root)
        a = s._resolve("t.txt").abs
        b = s._resolve("l.txt").abs
        assert s._lock_for(a) is s._lock_for(b)

    async def test_closed(self, root: Path) -> None:
        (root / "f.txt").write_text("x")
        s = make(root)
        await s.close()
        await s.close()
        msg = rf"^Workspace session {s.id} is closed\.$"
        for op in (
            s.read_text("f.txt"),
            s.write_text("f.txt", "y"),
            s.list_files(),
            s.grep("x"),
            s.run("true"),
            s.spawn("true"),
            s.read_bytes("f.txt"),
            s.edit_text("f.txt", "x", "y"),
            s.read_process_output("bg-1"),
            s.kill_process("bg-1"),
        ):
            with pytest.raises(WorkspaceClosedError, match=msg):
                await op
        assert s.decide_path("f.txt") == "allow"
        assert s.decide_command("rm f.txt") == "ask"
        assert s.decide_command("ls") == "allow"  # read-only under coding
        assert s.background_processes() == []
        assert s.id.startswith("local-") and len(s.id) == len("local-") + 8

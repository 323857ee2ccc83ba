"""Host seams: document overlay, write sink, pure apply_edit, streamed shell output."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lovia.workspace import LocalWorkspaceSession, PermissionDeniedError, Workspace, WorkspacePolicy
from lovia.workspace.edits import EditError, apply_edit


class Overlay:
    def __init__(self, docs: dict[Path, str]) -> None:
        self.docs = docs
        self.asked: list[Path] = []

    def text_for(self, path: Path) -> str | None:
        self.asked.append(path)
        return self.docs.get(path)


class TestOverlay:
    async def test_reads_see_the_unsaved_buffer(self, root: Path) -> None:
        (root / "a.py").write_text("on disk\n")
        overlay = Overlay({root / "a.py": "in editor\nsecond\n"})
        s = LocalWorkspaceSession(root, overlay=overlay)
        r = await s.read_text("a.py", start=2)
        assert r.content == "second\n" and r.total_lines == 2
        assert [m.text for m in await s.grep("editor")] == ["in editor"]
        assert await s.grep("on disk") == []

    async def test_edit_applies_to_the_buffer_text(self, root: Path) -> None:
        (root / "a.py").write_text("x = 1\n")
        s = LocalWorkspaceSession(root, overlay=Overlay({root / "a.py": "x = 2\n"}))
        r = await s.edit_text("a.py", "x = 2", "x = 3")
        assert r.ok and (root / "a.py").read_text() == "x = 3\n"

    async def test_overlay_is_consulted_after_the_acl(self, root: Path) -> None:
        (root / ".env").write_text("disk secret")
        overlay = Overlay({root / ".env": "buffer secret"})
        s = LocalWorkspaceSession(
            root, policy=WorkspacePolicy(denied_paths=(".env",)), overlay=overlay
        )
        with pytest.raises(PermissionDeniedError):
            await s.read_text(".env")
        assert "secret" not in " ".join(m.text for m in await s.grep("secret", include_hidden=True))
        assert root / ".env" not in overlay.asked

    async def test_overlay_gets_resolved_paths(self, root: Path) -> None:
        (root / "real.txt").write_text("disk")
        (root / "alias.txt").symlink_to(root / "real.txt")
        overlay = Overlay({root / "real.txt": "buffer"})
        s = LocalWorkspaceSession(root, overlay=overlay)
        assert (await s.read_text("alias.txt")).content == "buffer"

    async def test_broken_overlay_falls_back_to_disk(self, root: Path) -> None:
        class Broken:
            def text_for(self, path: Path) -> str | None:
                raise RuntimeError("boom")

        (root / "f.txt").write_text("disk\n")
        s = LocalWorkspaceSession(root, overlay=Broken())
        assert (await s.read_text("f.txt")).content == "disk\n"

    async def test_async_overlay_serves_reads_and_edits_after_the_acl(self, root: Path) -> None:
        class Remote(Overlay):
            def text_for(self, path: Path) -> str | None:
                return None  # grep reads the disk

            async def read_text_for(self, path: Path) -> str | None:
                self.asked.append(path)
                return self.docs.get(path)

        (root / "a.py").write_text("on disk\n")
        (root / ".env").write_text("disk secret")
        remote = Remote({root / "a.py": "in client\n", root / ".env": "buffer secret"})
        s = LocalWorkspaceSession(
            root, policy=WorkspacePolicy(denied_paths=(".env",)), overlay=remote
        )
        assert (await s.read_text("a.py")).content == "in client\n"
        assert await s.current_text("a.py") == "in client\n"
        r = await s.edit_text("a.py", "in client", "edited")
        assert r.ok and (root / "a.py").read_text() == "edited\n"
        with pytest.raises(PermissionDeniedError):
            await s.read_text(".env")
        assert root / ".env" not in remote.asked

    async def test_failing_async_overlay_falls_back_to_disk(self, root: Path) -> None:
        class Gone:
            def text_for(self, path: Path) -> str | None:
                return None

            async def read_text_for(self, path: Path) -> str | None:
                raise ConnectionError("client went away")

        (root / "f.txt").write_text("disk\n")
        s = LocalWorkspaceSession(root, overlay=Gone())
        assert (await s.read_text("f.txt")).content == "disk\n"

    async def test_factory_passes_overlay(self, root: Path) -> None:
        overlay = Overlay({})
        s = await Workspace.local(str(root), overlay=overlay).open()
        assert s.overlay is overlay


class Sink:
    def __init__(self, handled: bool | None) -> None:
        self.handled = handled
        self.calls: list[tuple[Path, str | None, str]] = []

    async def __call__(self, path: Path, old: str | None, new: str) -> bool | None:
        self.calls.append((path, old, new))
        return self.handled


class TestWriteSink:
    async def test_host_applies_the_write(self, root: Path) -> None:
        (root / "a.txt").write_text("old\n")
        sink = Sink(True)
        s = LocalWorkspaceSession(root, write_sink=sink)
        r = await s.write_text("a.txt", "new\n")
        assert (r.ok, r.action, r.bytes_written) == (True, "updated", 4)
        r = await s.write_text("sub/b.txt", "fresh")
        assert r.action == "created"
        assert sink.calls == [
            (root / "a.txt", "old\n", "new\n"),
            (root / "sub" / "b.txt", None, "fresh"),
        ]
        assert (root / "a.txt").read_text() == "old\n" and not (root / "sub").exists()

    async def test_edit_through_the_sink_matches_apply_edit(self, root: Path) -> None:
        (root / "a.txt").write_text("a\r\nb\r\n")
        sink = Sink(True)
        s = LocalWorkspaceSession(root, write_sink=sink)
        r = await s.edit_text("a.txt", "a\nb", "A\nB")
        expected, n = apply_edit("a\r\nb\r\n", "a\nb", "A\nB")
        assert r.ok and r.changed and r.replacements == n == 1
        assert sink.calls == [(root / "a.txt", "a\r\nb\r\n", expected)]
        assert (root / "a.txt").read_bytes() == b"a\r\nb\r\n"

    async def test_false_or_none_writes_as_usual(self, root: Path) -> None:
        for handled in (False, None):
            sink = Sink(handled)
            s = LocalWorkspaceSession(root, write_sink=sink)
            await s.write_text("f.txt", f"v{handled}")
            assert (root / "f.txt").read_text() == f"v{handled}" and sink.calls

    async def test_sink_never_sees_denied_or_failed_edits(self, root: Path) -> None:
        (root / "a.txt").write_text("x x")
        sink = Sink(True)
        s = LocalWorkspaceSession(
            root, policy=WorkspacePolicy(denied_paths=("*.key",)), write_sink=sink
        )
        with pytest.raises(PermissionDeniedError):
            await s.write_text("id.key", "k")
        assert not (await s.edit_text("a.txt", "x", "y")).ok
        assert (await s.edit_text("a.txt", "x x", "x x")).changed is False
        r = await s.write_text("a.txt", "z", create_only=True)
        assert not r.ok
        assert sink.calls == []

    async def test_sync_callable_accepted(self, root: Path) -> None:
        calls: list[str] = []

        def sink(path: Path, old: str | None, new: str) -> bool:
            calls.append(new)
            return True

        s = LocalWorkspaceSession(root, write_sink=sink)  # type: ignore[arg-type]
        await s.write_text("f.txt", "x")
        assert calls == ["x"] and not (root / "f.txt").exists()

    async def test_old_text_comes_from_the_overlay(self, root: Path) -> None:
        (root / "a.txt").write_text("disk")
        sink = Sink(True)
        s = LocalWorkspaceSession(
            root, write_sink=sink, overlay=Overlay({root / "a.txt": "buffer"})
        )
        await s.write_text("a.txt", "new")
        assert sink.calls[0][1] == "buffer"


class TestApplyEdit:
    def test_messages(self) -> None:
        with pytest.raises(EditError, match="old must not be empty"):
            apply_edit("abc", "", "x")
        with pytest.raises(EditError, match="old text not found") as exc:
            apply_edit("abc", "zz", "x")
        assert exc.value.replacements == 0
        with pytest.raises(EditError, match="old text matched 2 times") as exc:
            apply_edit("a a", "a", "b")
        assert exc.value.replacements == 2 and "replace_all=true" in str(exc.value)

    def test_results(self) -> None:
        assert apply_edit("a a", "a", "b", replace_all=True) == ("b b", 2)
        assert apply_edit("abc", "b", "b") == ("abc", 1)
        assert apply_edit("x\r\ny\r\n", "x\ny", "1\n2") == ("1\r\n2\r\n", 1)
        assert apply_edit("x\r\ny\r\n", "x\ny", "1\r\n2") == ("1\r\n2\r\n", 1)

    @given(st.text(max_size=40), st.text(min_size=1, max_size=5), st.text(max_size=5))
    def test_equivalent_to_str_replace(self, text: str, old: str, new: str) -> None:
        try:
            out, n = apply_edit(text, old, new, replace_all=True)
        except EditError:
            assert old not in text
            return
        if old in text:
            assert out == text.replace(old, new) and n == text.count(old)

    async def test_session_uses_the_same_function(self, root: Path) -> None:
        text = "def f():\n    return 1\n\ndef g():\n    return 1\n"
        (root / "m.py").write_text(text)
        s = LocalWorkspaceSession(root)
        r = await s.edit_text("m.py", "return 1", "return 2", replace_all=True)
        assert (root / "m.py").read_text() == apply_edit(
            text, "return 1", "return 2", replace_all=True
        )[0]
        assert r.replacements == 2


class ListingOverlay(Overlay):
    """An overlay that can say which files it holds (as the editor's does)."""

    def open_paths(self) -> list[Path]:
        return list(self.docs)


async def test_grep_asks_an_overlay_that_lists_its_buffers_only_about_those(root: Path) -> None:
    """A search of a big tree asked the editor's overlay about every file, and the editor's
    overlay resolves every open document's path for each question."""
    for i in range(50):
        (root / f"f{i}.py").write_text(f"x = {i}\n")
    overlay = ListingOverlay({root / "f7.py": "x = 'buffer'\n"})
    s = LocalWorkspaceSession(root, overlay=overlay)
    assert [(m.path, m.text) for m in await s.grep("x = ")][:8] == [
        *((f"f{i}.py", f"x = {i}") for i in (0, 1, 10, 11, 12, 13, 14)),
        ("f15.py", "x = 15"),
    ]
    assert [(m.path, m.text) for m in await s.grep("buffer")] == [("f7.py", "x = 'buffer'")]
    assert await s.grep("x = 7$") == []  # the buffer, not the disk
    assert set(overlay.asked) == {root / "f7.py"}

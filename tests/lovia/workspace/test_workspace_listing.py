"""list_files and grep: ordering, caps, hidden files, and every alias/special file in walks."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from lovia.workspace import (
    LocalWorkspaceSession,
    PathRule,
    WorkspaceError,
    WorkspaceLimits,
    WorkspacePolicy,
)


def make(root: Path, policy: WorkspacePolicy | None = None, **kw: object) -> LocalWorkspaceSession:
    return LocalWorkspaceSession(root, policy=policy or WorkspacePolicy.coding(), **kw)  # type: ignore[arg-type]


@pytest.fixture
def tree(root: Path, outside: Path) -> Path:
    (root / "b_dir").mkdir()
    (root / "a_dir").mkdir()
    (root / "z.txt").write_text("needle z\n")
    (root / "a.txt").write_text("needle a\nno\n   needle two   \n")
    (root / "a_dir" / "inner.txt").write_text("needle inner\n")
    (root / "a_dir" / "deep").mkdir()
    (root / "a_dir" / "deep" / "d.py").write_text("needle deep\n")
    (root / ".hidden").write_text("needle hidden\n")
    (root / ".config").mkdir()
    (root / ".config" / "c.ini").write_text("needle config\n")
    (root / ".env").write_text("needle SECRET\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "k.txt").write_text("needle KEY\n")
    (root / "env_alias").symlink_to(root / ".env")
    (root / "key_alias.txt").symlink_to(root / "secrets" / "k.txt")
    (root / "out_link.txt").symlink_to(outside / "secret.txt")
    (root / "loop").symlink_to(root / "loop")
    (root / "dir_loop").symlink_to(root)
    os.mkfifo(root / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock"))
    sock.close()
    return root


def policy_with_denied(preset: str = "coding") -> WorkspacePolicy:
    factory = getattr(WorkspacePolicy, preset)
    return factory(denied_paths=(".env", "secrets"))  # type: ignore[no-any-return]


class TestListChildren:
    async def test_order_hidden_denied_specials(self, tree: Path) -> None:
        entries = await asyncio.wait_for(make(tree, policy_with_denied()).list_files("."), 10)
        paths = [e.path for e in entries]
        assert paths[:2] == ["a_dir", "b_dir"]
        assert "a.txt" in paths and "z.txt" in paths
        assert ".hidden" not in paths and ".env" not in paths and "secrets" not in paths
        assert "env_alias" not in paths and "key_alias.txt" not in paths  # aliases of denied
        assert "fifo" not in paths and "sock" not in paths  # specials skipped
        assert "loop" not in paths  # unresolvable
        out = next(e for e in entries if e.path == "out_link.txt")  # ask target: listed
        assert out.symlink_target and out.symlink_target.endswith("outside/secret.txt")
        d = next(e for e in entries if e.path == "a_dir")
        assert d.is_dir and d.size is None and d.mtime is not None
        f = next(e for e in entries if e.path == "a.txt")
        assert not f.is_dir and f.size == (tree / "a.txt").stat().st_size

    async def test_include_hidden(self, tree: Path) -> None:
        paths = [
            e.path
            for e in await make(tree, policy_with_denied()).list_files(".", include_hidden=True)
        ]
        assert ".hidden" in paths and ".config" in paths and ".env" not in paths

    async def test_listing_a_hidden_dir_explicitly(self, tree: Path) -> None:
        entries = await make(tree).list_files(".config")
        assert [e.path for e in entries] == [".config/c.ini"]

    async def test_truncation_only_with_an_extra_entry(self, root: Path) -> None:
        for i in range(3):
            (root / f"f{i}").write_text("x")
        s = make(root)
        r = await s.list_files(".", max_results=3)
        assert len(r) == 3 and not r.truncated
        r = await s.list_files(".", max_results=2)
        assert len(r) == 2 and r.truncated

    async def test_default_cap_from_limits(self, root: Path) -> None:
        for i in range(5):
            (root / f"f{i}").write_text("x")
        r = await make(root, limits=WorkspaceLimits(max_list_results=4)).list_files()
        assert len(r) == 4 and r.truncated

    async def test_not_a_directory(self, tree: Path) -> None:
        with pytest.raises(WorkspaceError, match="^Not a directory: a.txt$"):
            await make(tree).list_files("a.txt")

    async def test_denied_dir_itself(self, tree: Path) -> None:
        from lovia.workspace import PermissionDeniedError

        with pytest.raises(PermissionDeniedError):
            await make(tree, policy_with_denied()).list_files("secrets")


class TestListGlob:
    async def test_recursive_pattern(self, tree: Path) -> None:
        entries = await asyncio.wait_for(
            make(tree, policy_with_denied()).list_files(".", pattern="**/*.txt"), 10
        )
        paths = [e.path for e in entries]
        assert paths == sorted(paths)
        assert "a.txt" in paths and "a_dir/inner.txt" in paths and "z.txt" in paths
        assert "secrets/k.txt" not in paths and "key_alias.txt" not in paths
        assert "out_link.txt" in paths

    async def test_non_recursive_pattern_and_subdir_display(self, tree: Path) -> None:
        s = make(tree)
        assert [e.path for e in await s.list_files(".", pattern="*.txt")] == [
            "a.txt",
            "key_alias.txt",
            "out_link.txt",
            "z.txt",
        ]
        assert [e.path for e in await s.list_files("a_dir", pattern="*/*.py")] == [
            "a_dir/deep/d.py"
        ]

    async def test_hidden_segments_relative_to_listed_dir(self, tree: Path) -> None:
        s = make(tree)
        assert [e.path for e in await s.list_files(".", pattern="**/*.ini")] == []
        assert [
            e.path for e in await s.list_files(".", pattern="**/*.ini", include_hidden=True)
        ] == [".config/c.ini"]
        assert [e.path for e in await s.list_files(".config", pattern="*.ini")] == [".config/c.ini"]

    @pytest.mark.parametrize("pattern", ["", ".", "/etc/*"])
    async def test_invalid(self, tree: Path, pattern: str) -> None:
        with pytest.raises(WorkspaceError, match=r"^Invalid glob pattern: "):
            await make(tree).list_files(".", pattern=pattern)

    async def test_dotdot(self, tree: Path) -> None:
        with pytest.raises(
            WorkspaceError, match=r"'\.\.' is not supported; pass the directory as path= instead"
        ):
            await make(tree).list_files(".", pattern="../*")

    async def test_symlinked_dirs_not_descended(self, tree: Path) -> None:
        paths = [e.path for e in await make(tree).list_files(".", pattern="**/*.py")]
        assert paths == ["a_dir/deep/d.py"]


class TestGrep:
    async def test_order_and_format(self, tree: Path) -> None:
        s = make(tree, policy_with_denied())
        r = await asyncio.wait_for(s.grep("needle"), 10)
        assert [(m.path, m.line) for m in r] == [
            ("a.txt", 1),
            ("a.txt", 3),
            ("z.txt", 1),
            ("a_dir/inner.txt", 1),
            ("a_dir/deep/d.py", 1),
        ]
        assert r[1].text == "needle two"
        assert not r.truncated

    async def test_cap_truncates_as_soon_as_hit(self, tree: Path) -> None:
        r = await make(tree, policy_with_denied()).grep("needle", max_matches=5)
        assert len(r) == 5 and r.truncated
        r = await make(tree, limits=WorkspaceLimits(max_grep_matches=1)).grep("needle z")
        assert len(r) == 1 and r.truncated

    async def test_line_clip(self, root: Path) -> None:
        (root / "long.txt").write_text("   " + "x" * 1000 + "   \n")
        r = await make(root).grep("x")
        assert r[0].text == "x" * 400

    async def test_invalid_regex(self, tree: Path) -> None:
        with pytest.raises(WorkspaceError, match=r"^Invalid regular expression: "):
            await make(tree).grep("(")

    async def test_ignore_case_glob_hidden(self, tree: Path) -> None:
        s = make(tree, policy_with_denied())
        assert [m.path for m in await s.grep("NEEDLE DEEP", ignore_case=True)] == [
            "a_dir/deep/d.py"
        ]
        assert [m.path for m in await s.grep("needle", glob="*.py")] == ["a_dir/deep/d.py"]
        assert [m.path for m in await s.grep("needle", glob="a_dir/*")] == [
            "a_dir/inner.txt",
            "a_dir/deep/d.py",
        ]
        hidden = [m.path for m in await s.grep("needle", include_hidden=True)]
        assert ".hidden" in hidden and ".config/c.ini" in hidden and ".env" not in hidden

    async def test_denied_and_aliases_never_searched(self, tree: Path) -> None:
        for preset in ("coding", "trusted"):
            s = make(tree, policy_with_denied(preset))
            found = " ".join(m.text for m in await s.grep("needle", include_hidden=True))
            assert "SECRET" not in found and "KEY" not in found

    async def test_outside_symlink_searched_only_on_allow(self, tree: Path) -> None:
        (tree / "out_link.txt").unlink()
        (tree / "out_link.txt").symlink_to(tree.parent / "outside" / "secret.txt")
        coding = await make(tree).grep("outside secret")
        assert coding == []
        trusted = await make(tree, WorkspacePolicy.trusted()).grep("outside secret")
        assert [m.path for m in trusted] == ["out_link.txt"]
        # a single-file target that is an approved outside symlink is searched
        single = await make(tree).grep("outside secret", path="out_link.txt")
        assert [m.path for m in single] == [(tree.parent / "outside" / "secret.txt").as_posix()]

    async def test_ask_rule_inside_a_walk_is_not_searched(self, tree: Path) -> None:
        policy = WorkspacePolicy.coding(path_rules=(PathRule("a_dir", "ask", ops={"read"}),))
        s = make(tree, policy)
        assert [m.path for m in await s.grep("needle") if m.path.startswith("a_dir")] == []
        # the walk target itself asked (approved): its contents are searched
        assert len(await s.grep("needle", path="a_dir")) == 2

    async def test_single_file_and_errors(self, tree: Path) -> None:
        s = make(tree)
        assert [m.line for m in await s.grep("needle", path="a.txt")] == [1, 3]
        with pytest.raises(WorkspaceError, match="^Not a file or directory: fifo$"):
            await asyncio.wait_for(s.grep("x", path="fifo"), 5)
        with pytest.raises(WorkspaceError, match="^Not a file or directory: nope$"):
            await s.grep("x", path="nope")

    async def test_skips_binary_and_large(self, root: Path) -> None:
        (root / "bin.dat").write_bytes(b"needle\x00\x00")
        (root / "big.txt").write_text("needle\n" * 100)
        (root / "ok.txt").write_text("needle\n")
        r = await make(root, limits=WorkspaceLimits(max_grep_file_bytes=100)).grep("needle")
        assert [m.path for m in r] == ["ok.txt"]

    async def test_anchored_patterns(self, root: Path) -> None:
        (root / "f.txt").write_bytes(b"foo\rbar\nbaz foo\n")
        r = await make(root).grep(r"foo$")
        assert [(m.line, m.text) for m in r] == [(1, "foo"), (3, "baz foo")]  # \r splits lines
        r = await make(root).grep(r"^bar")
        assert [m.line for m in r] == [2]


class CountingPolicy(WorkspacePolicy):
    """The coding policy, counting what it judges."""

    def decide_path(self, *, rel: str | None, abs_posix: str, op: str) -> str:  # type: ignore[override]
        judged.append(abs_posix)
        return super().decide_path(rel=rel, abs_posix=abs_posix, op=op)  # type: ignore[arg-type]


judged: list[str] = []


async def test_a_glob_judges_the_folders_it_walks_and_the_entries_it_matches(root: Path) -> None:
    """A ``**`` glob over a big tree judged every entry (32 s at 150,000 files): the walk
    needs only its folders judged, and a file only once it matches."""
    for d in range(10):
        folder = root / f"pkg{d}"
        folder.mkdir()
        for i in range(30):
            (folder / f"m{i}.py").write_text("")
    (root / "pkg3" / "server.pem").write_text("secret")
    (root / "pkg9" / "server.pem").write_text("secret")
    (root / "pkg5" / "keys").mkdir()
    (root / "pkg5" / "keys" / "ok.pem").write_text("")
    (root / "secret").mkdir()
    (root / "secret" / "x.pem").write_text("")
    base = WorkspacePolicy.coding()
    policy = CountingPolicy(
        write=base.write,
        read_outside=base.read_outside,
        write_outside=base.write_outside,
        denied_paths=("*.pem.bak", "server.pem", "secret"),
        shell_default=base.shell_default,
    )
    s = make(root, policy)
    judged.clear()
    found = await s.list_files(".", pattern="**/*.pem")
    assert [e.path for e in found] == ["pkg5/keys/ok.pem"]
    # the root's 11 folders, pkg5/keys, and the matches (the two denied among them)
    assert len(judged) <= 16, len(judged)
    found = await s.list_files(".", pattern="**/m1*.py")
    assert [e.path for e in found] == sorted(
        f"pkg{d}/m{i}.py" for d in range(10) for i in (1, *range(10, 20))
    )

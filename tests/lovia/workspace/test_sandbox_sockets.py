"""Unix sockets outside the root are ways out of the sandbox (tmux, ssh-agent, a bus): the
ones the kernel lists are all hidden, and the /tmp walk fails closed when that list is not
whole."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lovia.workspace import WorkspacePolicy
from lovia.workspace.sandbox import BubblewrapExecutor
from lovia.workspace.sandbox_scan import bound_unix_sockets

needs_bwrap = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not BubblewrapExecutor.available(),
    reason="needs bubblewrap with user namespaces",
)

PROBE = (
    'python3 -c "import socket, os; s = socket.socket(socket.AF_UNIX); '
    "s.connect(os.environ['S']); print('connected')\""
)


def test_the_kernel_table_lists_named_sockets_and_says_when_it_is_not_whole(
    tmp_path: Path,
) -> None:
    table = tmp_path / "unix"
    header = "Num       RefCount Protocol Flags    Type St Inode Path\n"
    rows = [
        "0000000000000000: 00000002 00000000 00010000 0001 01 11 /tmp/tmux-0/default",
        "0000000000000000: 00000002 00000000 00010000 0001 01 12 @/tmp/.X11-unix/X0",
        "0000000000000000: 00000003 00000000 00000000 0001 03 13",
        "0000000000000000: 00000002 00000000 00010000 0001 01 14 /tmp/a dir/with spaces.sock",
        "0000000000000000: 00000002 00000000 00010000 0001 01 15 /tmp/tmux-0/default",
    ]
    table.write_text(header + "\n".join(rows) + "\n")
    assert bound_unix_sockets(str(table)) == (
        ["/tmp/a dir/with spaces.sock", "/tmp/tmux-0/default"],
        True,
    )
    table.write_text(header + rows[0] + "\n0000: 00000002 00000000 00010000 0001 01 16 rel.sock\n")
    assert bound_unix_sockets(str(table)) == (["/tmp/tmux-0/default"], False)
    assert bound_unix_sockets(str(tmp_path / "missing")) == ([], False)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A stand-in for the host's /tmp, so the walk's budget does not depend on what else
    the machine keeps in its real one."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="lovia-tmp-") as d:
        yield Path(d)


@pytest.fixture
def deep_socket(shared_tmp: Path) -> Iterator[str]:
    """A listening socket deeper in /tmp than the walk reads (a dev server's run dir)."""
    deep = Path(shared_tmp, "other", "a", "b", "c", "d")
    deep.mkdir(parents=True)
    path = str(deep / "app.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    server.setblocking(False)
    try:
        yield path
    finally:
        server.close()


async def _probe(executor: BubblewrapExecutor, root: Path, sock: str, extra: str = "") -> str:
    r = await executor.run(
        f"{PROBE}; {extra}" if extra else PROBE,
        cwd=root,
        env={"PATH": os.environ["PATH"], "S": sock},
        timeout=60,
        policy=WorkspacePolicy.trusted(),
        root=root,
    )
    return r.stdout + r.stderr


@needs_bwrap
async def test_a_socket_deeper_than_the_walk_is_hidden(tmp_path: Path, deep_socket: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    out = await _probe(BubblewrapExecutor(), root, deep_socket)
    assert "connected" not in out


@needs_bwrap
async def test_without_the_kernel_table_the_unread_part_of_tmp_is_hidden(
    shared_tmp: Path, deep_socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No table (or one with relative paths): what the walk could not read is hidden."""
    monkeypatch.setattr(BubblewrapExecutor, "socket_table", staticmethod(lambda: ([], False)))
    root = shared_tmp / "ws"
    root.mkdir()
    executor = BubblewrapExecutor(tmp_dir=str(shared_tmp))
    shallow = Path(deep_socket).parents[3]  # other/a: read by the walk (depth 2)
    out = await _probe(executor, root, deep_socket, f"ls {shallow}; ls {Path(deep_socket).parent}")
    assert "connected" not in out
    assert "b\n" in out  # the shallow part stays visible
    assert "app.sock" not in out  # the unread directory is an empty tmpfs


@needs_bwrap
async def test_a_walk_cut_short_hides_all_of_tmp_but_keeps_the_root(
    shared_tmp: Path, deep_socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(BubblewrapExecutor, "socket_table", staticmethod(lambda: ([], False)))
    root = shared_tmp / "deep" / "ws"  # deeper than the walk goes: its parents count too
    root.mkdir(parents=True)
    (root / "kept.txt").write_text("still here\n")
    other = shared_tmp / "other"
    executor = BubblewrapExecutor(root_writable=True, tmp_dir=str(shared_tmp), tmp_scan_budget=3)
    out = await _probe(
        executor, root, deep_socket, f"cat kept.txt; echo new > made.txt; ls {other}"
    )
    assert "connected" not in out
    assert "still here" in out and (root / "made.txt").read_text() == "new\n"
    assert "No such file" in out  # the rest of /tmp is a private tmpfs


@needs_bwrap
async def test_a_socket_inside_the_root_stays_usable(tmp_path: Path) -> None:
    """The workspace's own sockets (a dev server it started) are not a way out."""
    root = tmp_path / "ws"
    root.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "dev.sock"))
    server.listen(1)
    try:
        r = await BubblewrapExecutor().run(
            "test -S dev.sock && echo present",
            cwd=root,
            env={"PATH": os.environ["PATH"]},
            timeout=60,
            policy=WorkspacePolicy.trusted(),
            root=root,
        )
    finally:
        server.close()
    assert r.stdout == "present\n"


@needs_bwrap
async def test_a_socket_gone_between_the_plan_and_the_start_fails_no_command(
    tmp_path: Path,
) -> None:
    """Another session's socket (its network proxy, in a folder of its own under /tmp) that
    goes away after this command's masks were planned: bubblewrap cannot mount over it, and
    the command is planned and started again instead of failing with bubblewrap's error."""
    gone = Path(tempfile.mkdtemp(dir="/tmp", prefix="lovia-net-test-"))
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(gone / "proxy.sock"))
    server.listen(1)
    plans: list[int] = []

    class Racing(BubblewrapExecutor):
        def wrap_argv(self, command: str, **kwargs: object) -> list[str]:
            argv = super().wrap_argv(command, **kwargs)  # type: ignore[arg-type]
            if not plans:  # the other session ends now
                server.close()
                shutil.rmtree(gone, ignore_errors=True)
            plans.append(len(argv))
            return argv

    root = tmp_path / "ws"
    root.mkdir()
    streamed: list[tuple[str, str]] = []
    try:
        r = await Racing().run(
            "echo hi",
            cwd=root,
            env={"PATH": os.environ["PATH"]},
            timeout=60,
            policy=WorkspacePolicy.trusted(),
            root=root,
            on_output=lambda stream, text: streamed.append((stream, text)),
        )
    finally:
        server.close()
        shutil.rmtree(gone, ignore_errors=True)
    assert (r.exit_code, r.stdout) == (0, "hi\n"), r.stderr
    assert "bwrap" not in r.stderr
    assert len(plans) == 2
    # the live output shows the command's, not the failed attempt's bubblewrap error
    assert streamed == [("stdout", "hi\n")]


def test_the_setup_gate_holds_back_only_what_can_be_bubblewraps_own_error() -> None:
    from lovia.workspace.sandbox import _SetupGate

    seen: list[tuple[str, str]] = []
    gate = _SetupGate(lambda stream, text: seen.append((stream, text)))
    gate("stderr", "warning: x\n")  # not bubblewrap's: at once
    assert seen == [("stderr", "warning: x\n")]
    seen.clear()
    gate = _SetupGate(lambda stream, text: seen.append((stream, text)))
    gate("stderr", "bwr")
    gate("stderr", "ap: Can't mkdir parents for /tmp/x")
    assert seen == []  # could still be the set-up error: held
    gate.release()  # the attempt stands (it was not started again): shown as it came
    assert seen == [("stderr", "bwr"), ("stderr", "ap: Can't mkdir parents for /tmp/x")]
    seen.clear()
    gate = _SetupGate(lambda stream, text: seen.append((stream, text)))
    gate("stderr", "bwrap: Can't find source path x\n")
    gate("stdout", "out\n")  # output of a command: no set-up error, all of it shown
    assert seen == [("stderr", "bwrap: Can't find source path x\n"), ("stdout", "out\n")]

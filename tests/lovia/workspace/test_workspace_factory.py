"""Workspace.local, LocalWorkspace, bindings and the generated instructions."""

from __future__ import annotations

from pathlib import Path

import pytest

from lovia.exceptions import UserError
from lovia.workspace import (
    CommandRule,
    LocalWorkspace,
    LocalWorkspaceSession,
    PathRule,
    Workspace,
    WorkspaceLimits,
    WorkspacePolicy,
)
from lovia.workspace.workspace import WorkspaceSessionBinding


class TestFactory:
    def test_not_instantiable_and_docker_stub(self) -> None:
        with pytest.raises(UserError):
            Workspace()
        with pytest.raises(NotImplementedError):
            Workspace.docker("img")

    def test_defaults(self, root: Path) -> None:
        ws = Workspace.local(str(root))
        assert isinstance(ws, LocalWorkspace)
        assert ws.policy == WorkspacePolicy.coding()
        assert (ws.shell_timeout, ws.inherit_env, ws.executor, ws.env, ws.close_after_run) == (
            300.0,
            False,
            None,
            None,
            True,
        )
        assert ws.limits == WorkspaceLimits()
        assert Workspace.local(str(root), mode="trusted").inherit_env is False

    def test_rule_expansion_order(self, root: Path) -> None:
        explicit = PathRule("docs", "deny")
        ws = Workspace.local(str(root), path_rules=(explicit,), readable=("/r",), writable=("/w",))
        assert ws.policy.path_rules == (
            explicit,
            PathRule("/w", "allow", ops=frozenset({"read", "write"})),
            PathRule("/r", "allow", ops=frozenset({"read"})),
        )

    def test_policy_and_shorthands_conflict(self, root: Path) -> None:
        for kw in (
            {"denied_paths": (".env",)},
            {"command_rules": (CommandRule("x", "deny"),)},
            {"readable": ("/r",)},
            {"writable": ("/w",)},
            {"path_rules": (PathRule("a", "deny"),)},
        ):
            with pytest.raises(UserError) as exc:
                Workspace.local(str(root), policy=WorkspacePolicy(), **kw)  # type: ignore[arg-type]
            assert "either policy=" in str(exc.value) and "not both" in str(exc.value)
        p = WorkspacePolicy.trusted()
        assert Workspace.local(str(root), policy=p, mode="bogus").policy is p  # type: ignore[arg-type]

    def test_modes(self, root: Path) -> None:
        assert Workspace.local(str(root), mode="readonly").policy == WorkspacePolicy.readonly()
        assert Workspace.local(str(root), mode="trusted", denied_paths=(".env",)).policy == (
            WorkspacePolicy.trusted(denied_paths=(".env",))
        )
        with pytest.raises(UserError, match="mode='readonly'"):
            Workspace.local(str(root), mode="readonly", command_rules=(CommandRule("ls", "allow"),))
        with pytest.raises(UserError, match=r"^Unknown workspace mode: 'yolo'"):
            Workspace.local(str(root), mode="yolo")  # type: ignore[arg-type]

    async def test_root_validated_at_open(self, tmp_path: Path) -> None:
        ws = Workspace.local(str(tmp_path / "missing"))
        with pytest.raises(UserError, match="Workspace root does not exist"):
            await ws.open()

    def test_value_equality_and_env_copy(self, root: Path) -> None:
        env = {"A": "1"}
        a = Workspace.local(str(root), env=env)
        env["A"] = "2"
        assert a.env == {"A": "1"}
        assert a == Workspace.local(str(root), env={"A": "1"})
        assert a != Workspace.local(str(root), mode="trusted", env={"A": "1"})

    def test_sandbox_flag(self, root: Path) -> None:
        from lovia.workspace.sandbox import BubblewrapExecutor

        with pytest.raises(UserError, match="either sandbox= or executor="):
            Workspace.local(str(root), sandbox=True, executor=object())
        auto = Workspace.local(str(root), sandbox="auto")
        assert auto.executor is None or isinstance(auto.executor, BubblewrapExecutor)


class TestLifecycle:
    async def test_open_session_bind(self, root: Path) -> None:
        ws = Workspace.local(str(root), mode="trusted", shell_timeout=5)
        s = await ws.open()
        assert isinstance(s, LocalWorkspaceSession) and s.root == root and s.shell_timeout == 5
        assert s.policy == ws.policy
        await s.close()
        async with ws.session() as bound:
            assert isinstance(bound, WorkspaceSessionBinding) and bound.close_after_run is False
            live = await bound.open()
            assert live is await bound.open()
            assert [t.name for t in bound.tools()] == [t.name for t in ws.tools()]
            assert bound.instructions() == ws.instructions()
            assert bound.view_injectors() == ws.view_injectors()
        assert live.closed

    def test_view_injectors(self, root: Path) -> None:
        from lovia.workspace.tools import background_process_reminder

        assert Workspace.local(str(root)).view_injectors() == [background_process_reminder]
        assert Workspace.local(str(root), mode="readonly").view_injectors() == []


class TestInstructions:
    def test_coding_git_repo_pip(self, root: Path) -> None:
        (root / ".git").mkdir()
        text = Workspace.local(str(root), denied_paths=(".env", "secrets/*")).instructions()
        lines = text.split("\n")
        assert lines[0] == "## Workspace"
        assert repr(root.name) in text and "'.'" in text
        assert "git repository" in text and "never commit" in text and "'tmp/'" in text
        assert "nobody asked for" in text
        assert "reading requires user approval and writing is not permitted" in text
        assert "widen" in text
        assert "'.env', 'secrets/*'" in text
        assert ".venv" in text and "python -m venv" in text
        assert "without approval" not in text
        assert "read-only" not in text
        assert sum("poetry" in ln for ln in lines) == 0

    def test_git_file_counts(self, root: Path) -> None:
        (root / ".git").write_text("gitdir: ../x")
        assert "git repository" in Workspace.local(str(root)).instructions()
        assert "topical subdirectory" not in Workspace.local(str(root)).instructions()

    def test_no_git(self, root: Path) -> None:
        assert "topical subdirectory" in Workspace.local(str(root)).instructions()

    def test_readonly(self, root: Path) -> None:
        text = Workspace.local(str(root), mode="readonly").instructions()
        assert "read-only" in text and "write_file" in text
        assert "not permitted" in text
        assert ".venv" not in text and "tmp/" not in text and "Shell" not in text

    def test_trusted(self, root: Path) -> None:
        text = Workspace.local(str(root), mode="trusted").instructions()
        assert "without approval" in text and "not sandboxed" in text and "host user" in text
        assert "reading is allowed and writing requires user approval" in text

    def test_ask_writes(self, root: Path) -> None:
        text = Workspace.local(str(root), policy=WorkspacePolicy(write="ask")).instructions()
        assert "requires user approval" in text and "batch" in text
        assert "Access outside the workspace is not permitted." in text

    @pytest.mark.parametrize(
        ("files", "flavor"),
        [
            ({"uv.lock": ""}, "uv"),
            ({"poetry.lock": ""}, "poetry"),
            ({"pyproject.toml": "[project]\n\n  [tool.uv]\nx=1\n"}, "uv"),
            ({"pyproject.toml": "[tool.uv.sources]\n"}, "uv"),
            ({"pyproject.toml": "[tool.poetry]\n"}, "poetry"),
            ({"pyproject.toml": "# [tool.uv]\n[tool.uvicorn]\n"}, "pip"),
            ({"pyproject.toml": b"\xff\xfe\x00"}, "pip"),
            ({}, "pip"),
        ],
    )
    def test_flavor(self, root: Path, files: dict[str, object], flavor: str) -> None:
        for name, content in files.items():
            if isinstance(content, bytes):
                (root / name).write_bytes(content)
            else:
                (root / name).write_text(str(content))
        text = Workspace.local(str(root)).instructions()
        lines = text.split("\n")
        if flavor == "uv":
            assert (
                "uv-managed" in text
                and "uv pip install" in text
                and "uv sync" in text
                and "uv venv" in text
            )
        elif flavor == "poetry":
            assert "poetry-managed" in text and "poetry add" in text and "poetry install" in text
            assert "poetry run" in text
        else:
            assert "python -m venv" in text
        assert sum("poetry" in ln for ln in lines) <= 1
        assert sum("python -m venv" in ln for ln in lines) <= 1

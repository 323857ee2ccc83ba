"""A task's tree: denied files are not shipped, not left in a clone, not in the patch."""

from __future__ import annotations

import functools
import io
import tarfile
from pathlib import Path

from lovia_server.batch.task import TaskSource
from lovia_server.batch.task_workspace import is_denied, task_policy
from lovia_server.batch.tree import materialise, pack, patch
from tests.support.batch_tasks import git

SECRET = "tree-secret-6e21"


def secrets_tree(root: Path) -> Path:
    for rel in (".env", "deploy/id_rsa", "certs/server.pem"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(SECRET + "\n")
    (root / "app.py").write_text("print('hi')\n")
    return root


def denied_in(root: Path) -> functools.partial[bool]:
    return functools.partial(is_denied, task_policy(root, "coding"), root)


def test_a_packed_directory_leaves_denied_files_out(tmp_path):
    src = secrets_tree(tmp_path / "src")
    packed = pack(src, denied_in(src))
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as archive:
        names = archive.getnames()
    assert "app.py" in names
    assert not {".env", "deploy/id_rsa", "certs/server.pem"} & set(names)


def test_a_clone_loses_its_denied_files_and_the_patch_never_carries_them(tmp_path):
    repo = secrets_tree(tmp_path / "repo")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "secrets")
    root = tmp_path / "tree"
    root.mkdir()
    denied = denied_in(root)
    base = materialise(TaskSource(git=str(repo)), None, root, denied)
    assert not (root / ".env").exists() and (root / "app.py").exists()
    # the agent (or a command) recreates, renames and edits around them
    (root / ".env").write_text(SECRET + " again\n")
    (root / "certs" / "other.key").write_text(SECRET + "\n")
    (root / "app.py").write_text("print('changed')\n")
    diff = patch(root, base, denied)
    assert "+print('changed')" in diff
    assert SECRET not in diff and ".env" not in diff and "id_rsa" not in diff

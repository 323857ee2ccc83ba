"""The workspace: files and a shell under one allow/ask/deny ACL.

``Agent(workspace=Workspace.local(root, mode="coding"))`` gives an agent the file and
shell tools; see ``docs/workspace.md``.
"""

from lovia.workspace.errors import (
    FileTooLargeError,
    PermissionDeniedError,
    WorkspaceClosedError,
    WorkspaceError,
)
from lovia.workspace.local import LocalWorkspaceSession
from lovia.workspace.policy import (
    CommandRule,
    Decision,
    FileOp,
    PathRule,
    WorkspaceMode,
    WorkspacePolicy,
)
from lovia.workspace.project_instructions import ProjectInstructions
from lovia.workspace.protocol import ShellExecutor, WorkspaceLike, WorkspaceSession
from lovia.workspace.types import (
    CommandResult,
    DirEntry,
    EditResult,
    FileBytes,
    FileChange,
    FileContent,
    GrepMatch,
    ProcessOutput,
    ProcessStart,
    ProcessStatus,
    WorkspaceLimits,
)
from lovia.workspace.workspace import LocalWorkspace, Workspace, WorkspaceSessionBinding
from lovia.workspace.worktree_isolation import WorktreeIsolation

__all__ = [
    "CommandResult",
    "CommandRule",
    "Decision",
    "DirEntry",
    "EditResult",
    "FileBytes",
    "FileChange",
    "FileContent",
    "FileOp",
    "FileTooLargeError",
    "GrepMatch",
    "LocalWorkspace",
    "LocalWorkspaceSession",
    "PathRule",
    "PermissionDeniedError",
    "ProcessOutput",
    "ProcessStart",
    "ProcessStatus",
    "ProjectInstructions",
    "Workspace",
    "WorkspaceClosedError",
    "WorkspaceError",
    "WorkspaceLimits",
    "WorkspaceMode",
    "WorkspacePolicy",
    "WorktreeIsolation",
]

# importable, not advertised
_ = (ShellExecutor, WorkspaceLike, WorkspaceSession, WorkspaceSessionBinding)

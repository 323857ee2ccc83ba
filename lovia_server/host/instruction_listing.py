"""What ``lovia/status.instructions`` shows: the project instruction files each workspace
folder's runs read (docs/customization.md). Shared by every host, read fresh on each call."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lovia.workspace import LocalWorkspace
from lovia.workspace.project_instructions import scoped_files
from lovia_server import protocol as p


def instruction_files(configs: Iterable[LocalWorkspace]) -> list[p.InstructionFileInfo]:
    """The files in use for each folder's workspace config: those every system prompt carries
    (the user's once), then the ``applyTo`` files that join when a matching file is reached."""
    out: list[p.InstructionFileInfo] = []
    seen: set[str] = set()
    for config in configs:
        options = config.project_instructions
        if options is None:
            continue
        root = Path(config.root).resolve()
        files = [*config.project_files(), *scoped_files(root, config.policy, options)]
        for file in files:
            path = file.path if file.scope == "user" else str(root / file.path)
            if path in seen:
                continue
            seen.add(path)
            out.append(
                p.InstructionFileInfo(
                    path=path,
                    folder=str(root),
                    scope="root" if file.scope == "folder" else file.scope,
                    apply_to=list(file.apply_to),
                    cut=file.cut,
                )
            )
    return out


__all__ = ["instruction_files"]

"""Typed server options: ``initializationOptions.lovia`` and the ``lovia`` settings section.

Parsed once (at ``initialize`` / on configuration change) with defaults in one place.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Decision = Literal["allow", "ask", "deny"]
Preset = Literal["readonly", "coding", "trusted"]

DEFAULT_DENIED_PATHS: list[str] = [
    ".env",
    ".env.*",
    "**/.git/**",
    ".git",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.netrc",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class PathRuleSetting(_Model):
    pattern: str = Field(min_length=1)
    read: Decision | None = None
    write: Decision | None = None


class CommandRuleSetting(_Model):
    pattern: str
    decision: Decision


class PermissionSettings(_Model):
    preset: Preset = "coding"
    write: Decision | None = None
    """Overrides the preset's decision for writes inside the workspace (``ask`` = review edits)."""
    pathRules: list[PathRuleSetting] = Field(default_factory=list)
    commandRules: list[CommandRuleSetting] = Field(default_factory=list)
    deniedPaths: list[str] = Field(default_factory=lambda: list(DEFAULT_DENIED_PATHS))


class LoviaSettings(_Model):
    """The ``lovia`` configuration section (protocol.md, "Settings")."""

    model: str | None = None
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    agent: str | None = None
    mcpServers: dict[str, Any] = Field(default_factory=dict)
    maxTurns: int = Field(default=50, ge=1, le=10_000)
    approvalTimeoutSeconds: float | None = Field(default=None, gt=0)

    @field_validator("model", "agent", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    def effective_model(self) -> str | None:
        return self.model or os.environ.get("LOVIA_MODEL", "").strip() or None


class InitOptions(_Model):
    """``initializationOptions.lovia``; ``present`` records whether the client sent it at all."""

    protocolVersion: int = 1
    client: str | None = None
    approvals: Literal["events", "showMessageRequest"] | None = None
    editMode: Literal["server", "workspaceEdit"] = "server"
    progress: bool = True
    stateDir: str | None = None
    trusted: bool = True
    """Workspace trust as the editor sees it; user agent files load only when trusted."""
    present: bool = False

    @property
    def approval_mode(self) -> Literal["events", "showMessageRequest"]:
        if self.approvals is not None:
            return self.approvals
        return "events" if self.present else "showMessageRequest"


def parse_init_options(raw: Any) -> InitOptions:
    """Lenient: a malformed options object falls back to defaults field by field."""
    block = raw.get("lovia") if isinstance(raw, dict) else None
    if not isinstance(block, dict):
        return InitOptions()
    try:
        return InitOptions.model_validate({**block, "present": True})
    except ValidationError:
        clean: dict[str, Any] = {"present": True}
        for key, value in block.items():
            try:
                InitOptions.model_validate({key: value})
                clean[key] = value
            except ValidationError:
                continue
        return InitOptions.model_validate(clean)


def parse_settings(raw: Any) -> tuple[LoviaSettings, list[str]]:
    """Settings plus human-readable problems (invalid keys are ignored, not fatal)."""
    if not isinstance(raw, dict):
        return LoviaSettings(), [] if raw is None else ["the lovia settings must be an object"]
    try:
        return LoviaSettings.model_validate(raw), []
    except ValidationError as exc:
        problems = [
            f"lovia.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        ]
        bad_top = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
        kept = {k: v for k, v in raw.items() if k not in bad_top}
        try:
            return LoviaSettings.model_validate(kept), problems
        except ValidationError:
            return LoviaSettings(), problems


def default_state_dir(first_folder: Path | None) -> Path:
    """``$XDG_STATE_HOME/lovia/workspaces/<name>-<hash>`` for the first workspace folder."""
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    if first_folder is None:
        return base / "lovia" / "default"
    key = hashlib.sha256(str(first_folder).encode()).hexdigest()[:12]
    return base / "lovia" / "workspaces" / f"{first_folder.name or 'root'}-{key}"


__all__ = [
    "DEFAULT_DENIED_PATHS",
    "InitOptions",
    "LoviaSettings",
    "PermissionSettings",
    "default_state_dir",
    "parse_init_options",
    "parse_settings",
]

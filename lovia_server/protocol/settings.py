"""Typed server options: ``initializationOptions.lovia`` and the ``lovia`` settings section.

Parsed once (at ``initialize`` / on configuration change) with defaults in one place.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from lovia_server.protocol.editor_requests import EditorIntelOptions

Decision = Literal["allow", "ask", "deny"]
Preset = Literal["readonly", "coding", "trusted"]
EditModeSetting = Literal["auto", "server", "workspaceEdit"]

DEFAULT_DENIED_PATHS: list[str] = [
    # environment and credential files (bare patterns: any folder, inside and outside the root)
    ".env",
    ".env.*",
    ".env-*",
    "*.env",
    ".envrc",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    "credentials.json",
    "*.tfstate",
    "*.tfstate.*",
    # keys and certificates
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    # cloud, cluster and tool credentials in the user's home
    ".kube/config",
    "~/.kube",
    "~/.ssh",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.docker/config.json",
    "~/.gnupg",
    "~/.netrc",
]
"""Matched case-insensitively. ``.git`` is not here: git needs to read it, and writes to it are
protected (:data:`lovia.workspace.protected.DEFAULT_PROTECTED_PATHS`)."""


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
    """Writes inside the workspace. Unset: review-first under ``coding`` (every write and edit
    asks, with a diff), the preset's own decision under ``readonly`` and ``trusted``."""
    pathRules: list[PathRuleSetting] = Field(default_factory=list)
    commandRules: list[CommandRuleSetting] = Field(default_factory=list)
    deniedPaths: list[str] = Field(default_factory=lambda: list(DEFAULT_DENIED_PATHS))
    protectedPaths: list[str] = Field(default_factory=list)
    """More paths whose writes always ask, added to the built-in list (which cannot be
    shortened: see docs/security.md)."""
    readOnlyCommands: bool = True
    """Commands of the read-only table (``ls``, ``git status``...) run without asking."""

    @field_validator("deniedPaths", mode="before")
    @classmethod
    def _null_keeps_defaults(cls, value: Any) -> Any:
        """VS Code's default for the setting is ``null``: the server's defaults."""
        return list(DEFAULT_DENIED_PATHS) if value is None else value


def _stringify(value: Any) -> Any:
    """``{"PORT": 8080}`` means ``"8080"``: scalars in env/header maps become strings."""
    if not isinstance(value, dict):
        return value
    return {
        k: (str(v).lower() if isinstance(v, bool) else str(v))
        if isinstance(v, (int, float, bool))
        else v
        for k, v in value.items()
    }


class _MCPServerCommon(_Model):
    includeTools: list[str] | None = None
    """Only these tools of the server (raw names, before the ``<name>__`` prefix)."""
    excludeTools: list[str] | None = None
    defer: bool = False
    """Hide the tools behind ``search_mcp_tools`` / ``call_mcp_tool`` (large servers)."""
    needsApproval: bool = True
    """Every call of the server's tools asks, until the user answers "always" for a tool (for the
    conversation) or lists it in ``approvedTools``."""
    approvedTools: list[str] = Field(default_factory=list)
    """Tools of this server (raw names) that run without asking; the paths their arguments name
    are still judged by the workspace's rules."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds per tool call."""
    connectTimeout: float = Field(default=30.0, gt=0)
    disabled: bool = False


class StdioMCPServerSetting(_MCPServerCommon):
    """A local server: ``{command, args?, env?, cwd?}``."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None

    @field_validator("env", mode="before")
    @classmethod
    def _env_strings(cls, value: Any) -> Any:
        return _stringify(value)


class HttpMCPServerSetting(_MCPServerCommon):
    """A remote server on streamable HTTP: ``{url, headers?}``."""

    type: Literal["http"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("headers", mode="before")
    @classmethod
    def _header_strings(cls, value: Any) -> Any:
        return _stringify(value)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value


MCPServerSetting = StdioMCPServerSetting | HttpMCPServerSetting

_HTTP_TYPES = {"http", "streamable-http", "streamablehttp", "streamable_http"}


def parse_mcp_server(raw: Any) -> MCPServerSetting:
    """One ``mcpServers`` entry; raises ``ValueError`` with a readable reason."""
    if not isinstance(raw, dict):
        raise ValueError("must be an object: {command, args?, env?, cwd?} or {url, headers?}")
    kind = raw.get("type")
    if isinstance(kind, str):
        kind = kind.strip().lower()
        if kind == "sse":
            raise ValueError(
                "the legacy SSE transport is not supported; use the server's streamable HTTP "
                "endpoint (type 'http')"
            )
        if kind not in _HTTP_TYPES | {"stdio"}:
            raise ValueError(f"unknown type {raw.get('type')!r} (use 'stdio' or 'http')")
    has_command, has_url = "command" in raw, "url" in raw
    if has_command and has_url:
        raise ValueError("give either 'command' (a local server) or 'url' (HTTP), not both")
    http = kind in _HTTP_TYPES if isinstance(kind, str) else has_url
    if not http and not has_command:
        raise ValueError("needs 'command' (a local server) or 'url' (an HTTP server)")
    model: type[_MCPServerCommon] = HttpMCPServerSetting if http else StdioMCPServerSetting
    data = {k: v for k, v in raw.items() if k != "type"}
    try:
        return model.model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        reasons = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: "
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors(include_url=False)
        )
        raise ValueError(reasons) from None


class InvalidMCPServerSetting(BaseModel):
    """An ``mcpServers`` entry that did not validate; a run using it fails with ``problem``."""

    problem: str


class RestorePointSettings(_Model):
    """``lovia.restorePoints``: snapshots of the workspace before each turn that may write.

    Named as it is: the editor setting that becomes
    ``lovia.workspace.restore_points.RestorePointSettings``."""

    enabled: bool = True
    maxStoreMB: float = Field(default=1024, gt=0)
    """Per workspace folder; beyond it the oldest restore points are pruned."""
    maxFileMB: float = Field(default=5, gt=0)
    """Bigger files are not stored (and a restore never touches them)."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, value: Any) -> Any:
        return {} if value is None else value


class SubagentSettings(_Model):
    """``lovia.subagents``: background children of the built-in agent, as child runs."""

    enabled: bool | None = None
    """``None`` (the default) means on in a trusted workspace, off in an untrusted one."""
    maxConcurrent: int = Field(default=3, ge=1, le=16)
    maxTurns: int = Field(default=30, ge=1, le=1000)
    maxTotalTokens: int | None = Field(default=400_000, ge=1)
    """Per child: input plus output tokens (``null`` for no cap)."""
    maxSeconds: float | None = Field(default=900, gt=0)
    """Per child: wall-clock seconds (``null`` for no cap)."""

    def active(self, trusted: bool) -> bool:
        return trusted if self.enabled is None else self.enabled


class WorktreeSettings(_Model):
    """``lovia.worktrees``: runs with ``isolation: "worktree"`` (docs/worktrees.md)."""

    maxConcurrent: int = Field(default=3, ge=1, le=16)
    """Worktree runs of one workspace running at once; more wait as ``queued``."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, value: Any) -> Any:
        return {} if value is None else value


class ModelPriceSetting(_Model):
    """A model's price in USD per million tokens (cached reads and writes default to input)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cacheRead: float | None = Field(default=None, ge=0)
    cacheWrite: float | None = Field(default=None, ge=0)


class SandboxSettings(_Model):
    """``lovia.sandbox``: how shell commands of the server's runs are confined (bubblewrap)."""

    enabled: Literal["auto", "on", "off"] = "auto"
    """``auto``: sandboxed where bubblewrap works; ``on``: commands refuse to run without it;
    ``off``: never sandboxed."""
    network: Decision = "ask"
    """``deny``: only ``allowedDomains``; ``ask``: also a network command (``pip install``,
    ``git fetch``, ``curl``...) the user approved, for that run; ``allow``: every command."""
    allowedDomains: list[str] = Field(default_factory=list)
    """Hosts every sandboxed command may reach through the proxy: ``example.com``,
    ``*.example.com``, ``host:port``, an IP address; without a port only 80 and 443."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_default(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("allowedDomains")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        from lovia.workspace.allowed_hosts import AllowedHost

        for entry in value:
            AllowedHost.parse(entry)  # a ValueError names the entry and the reason
        return [e.strip() for e in value]


_REQUEST_FIELDS = frozenset(
    {"model", "messages", "input", "instructions", "system", "tools", "stream"}
)
"""Request fields a provider option must not replace: the run sets them."""


class LoviaSettings(_Model):
    """The ``lovia`` configuration section (protocol.md, "Settings")."""

    model: str | None = None
    permissions: PermissionSettings = Field(default_factory=PermissionSettings)
    agent: str | None = None
    mcpServers: dict[str, MCPServerSetting | SkipJsonSchema[InvalidMCPServerSetting]] = Field(
        default_factory=dict
    )
    """MCP servers for the built-in agent, by name (the tools' ``<name>__`` prefix)."""
    mcpIdleTimeoutSeconds: float = Field(default=600, gt=0)
    """A pooled MCP server no run has used for this long is stopped (started again on use)."""
    subagents: SubagentSettings = Field(default_factory=SubagentSettings)
    worktrees: WorktreeSettings = Field(default_factory=WorktreeSettings)
    maxTurns: int = Field(default=50, ge=1, le=10_000)
    approvalTimeoutSeconds: float | None = Field(default=None, gt=0)
    editMode: EditModeSetting = "auto"
    restorePoints: RestorePointSettings = Field(default_factory=RestorePointSettings)
    """How approved edits land; read for every run. ``auto``: through the editor
    (``workspace/applyEdit``) when the client can apply edits, else the server writes."""
    modelPrices: dict[str, ModelPriceSetting] = Field(default_factory=dict)
    """USD per million tokens by model, over the built-in table (``lovia_server.host.prices``)."""
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    """Shell commands in a bubblewrap sandbox by default (``lovia_server.host.sandbox_setup``)."""
    diagnosticsAfterEdits: bool = True
    """With a client that answers ``lovia/editor/diagnostics``: each ``write_file`` and
    ``edit_file`` result lists the errors and warnings the edit introduced (waiting at most
    1.5 s for the language server to re-check the file)."""
    promptCaching: bool = True
    """The built-in agent's prompt caching: ``false`` turns Anthropic's cache breakpoints off
    and sends OpenAI no ``prompt_cache_key`` (OpenAI still caches long prefixes itself)."""
    promptCacheTtl: Literal["5m", "1h"] = "5m"
    """How long Anthropic keeps the cached prefix: ``1h`` writes cost 2x input, not 1.25x,
    and pay off when a conversation pauses longer than five minutes."""
    providerOptions: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Request options for the built-in agent, by provider (``anthropic``, ``openai``,
    ``openai-responses``), over the two settings above: ``ModelSettings.provider_options``."""

    @field_validator("providerOptions")
    @classmethod
    def _own_fields_only(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for provider, options in value.items():
            taken = sorted(set(options) & _REQUEST_FIELDS)
            if taken:
                raise ValueError(
                    f"{provider}: {', '.join(taken)} cannot be set here (lovia sends "
                    "the model, the conversation and the tools itself)"
                )
        return value

    def provider_options(self) -> dict[str, dict[str, Any]]:
        """What the built-in agent's ``ModelSettings.provider_options`` get: the caching
        settings as the providers' options, ``providerOptions`` merged over them."""
        merged: dict[str, dict[str, Any]] = {}
        if not self.promptCaching:
            no_key = {"prompt_cache_key": None}  # Chat Completions and Responses alike
            merged = {"anthropic": {"cache": False}, "openai": no_key, "openai-responses": no_key}
        elif self.promptCacheTtl == "1h":
            merged = {"anthropic": {"cache_ttl": "1h"}}
        for provider, options in self.providerOptions.items():
            merged[provider] = {**merged.get(provider, {}), **options}
        return merged

    def long_cache(self) -> bool:
        """Whether Anthropic writes are priced at the 1-hour TTL (2x input)."""
        options = self.provider_options().get("anthropic", {})
        return options.get("cache", True) is not False and options.get("cache_ttl") == "1h"

    @field_validator("model", "agent", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("mcpServers", mode="before")
    @classmethod
    def _mcp_entries(cls, value: Any) -> Any:
        # One bad entry must not drop the others: it is kept as a problem, reported with the
        # settings problems and raised by the runs that would use it.
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for name, raw in value.items():
            if isinstance(raw, (StdioMCPServerSetting, HttpMCPServerSetting)):
                out[str(name)] = raw
                continue
            try:
                out[str(name)] = parse_mcp_server(raw)
            except ValueError as exc:
                out[str(name)] = InvalidMCPServerSetting(problem=str(exc))
        return out

    @model_validator(mode="after")
    def _mcp_names(self) -> LoviaSettings:
        for name in list(self.mcpServers):
            if not name.strip():
                self.mcpServers[name] = InvalidMCPServerSetting(problem="the name is empty")
        return self

    def mcp_problems(self) -> list[str]:
        return [
            f"lovia.mcpServers.{name}: {entry.problem}"
            for name, entry in self.mcpServers.items()
            if isinstance(entry, InvalidMCPServerSetting)
        ]

    def effective_model(self) -> str | None:
        return self.model or os.environ.get("LOVIA_MODEL", "").strip() or None


class InitOptions(_Model):
    """``initializationOptions.lovia`` (all optional)."""

    protocolVersion: int = 1
    client: str | None = None
    approvals: Literal["events", "showMessageRequest"] | None = None
    editMode: EditModeSetting | None = None
    """The client's preferred edit mode; the ``editMode`` setting, when not ``auto``, wins."""
    progress: bool = True
    stateDir: str | None = None
    trusted: bool = True
    """Workspace trust as the editor sees it; user agent files load only when trusted."""
    editorIntel: EditorIntelOptions | None = None
    """The client answers ``lovia/editor/*`` requests (its language servers' diagnostics,
    locations and symbols); the built-in agent then gets the editor tools."""
    present: SkipJsonSchema[bool] = False  # whether the client sent the object at all

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


def _valid_permissions(raw: dict[str, Any]) -> dict[str, Any]:
    """The parts of a ``permissions`` object that validate, rule by rule: one bad rule must not
    drop the others, nor the denied paths beside them (that would loosen the ACL)."""
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        if key in ("pathRules", "commandRules", "deniedPaths") and isinstance(value, list):
            good = []
            for item in value:
                try:
                    PermissionSettings.model_validate({key: [item]})
                    good.append(item)
                except ValidationError:
                    continue
            kept[key] = good
            continue
        try:
            PermissionSettings.model_validate({key: value})
            kept[key] = value
        except ValidationError:
            continue
    return kept


def parse_settings(raw: Any) -> tuple[LoviaSettings, list[str]]:
    """Settings plus human-readable problems (invalid keys are ignored, not fatal)."""
    if not isinstance(raw, dict):
        return LoviaSettings(), [] if raw is None else ["the lovia settings must be an object"]
    try:
        settings = LoviaSettings.model_validate(raw)
        return settings, settings.mcp_problems()
    except ValidationError as exc:
        problems = [
            f"lovia.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        ]
        bad_top = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
        kept = {k: v for k, v in raw.items() if k not in bad_top}
        if "permissions" in bad_top and isinstance(raw.get("permissions"), dict):
            kept["permissions"] = _valid_permissions(raw["permissions"])
        try:
            settings = LoviaSettings.model_validate(kept)
            return settings, problems + settings.mcp_problems()
        except ValidationError:
            return LoviaSettings(), problems


UNTRUSTED_MCP = "MCP servers are not started in an untrusted workspace"


def restrict_untrusted(settings: LoviaSettings) -> LoviaSettings:
    """The settings of a client that says its workspace is untrusted (``trusted: false``): they
    may only add restrictions, whatever they say. The ``readonly`` preset; the default denied
    paths always, with the given ones added; path rules only where they deny (never an
    ``allow`` or ``ask``); no command rules, no ``write``, no agent, no MCP servers. The VS Code
    extension applies the same rule before it sends them (``restrictedSettings``); this is the
    server's own check, for another client or an extension bug."""
    perms = settings.permissions
    denied = list(DEFAULT_DENIED_PATHS)
    denied += [p for p in perms.deniedPaths if p not in denied]
    rules = [
        PathRuleSetting(
            pattern=r.pattern,
            read="deny" if r.read == "deny" else None,
            write="deny" if r.write == "deny" else None,
        )
        for r in perms.pathRules
        if "deny" in (r.read, r.write)
    ]
    permissions = PermissionSettings(
        preset="readonly", write=None, pathRules=rules, commandRules=[], deniedPaths=denied
    )
    # MCP servers stay listed (lovia/status says why they are not running), with nothing left
    # in them that could start a process or reach a URL.
    refused: dict[str, MCPServerSetting | InvalidMCPServerSetting] = {
        name: InvalidMCPServerSetting(problem=UNTRUSTED_MCP) for name in settings.mcpServers
    }
    return settings.model_copy(
        update={"permissions": permissions, "agent": None, "mcpServers": refused}
    )


def default_state_dir(first_folder: Path | None) -> Path:
    """``$XDG_STATE_HOME/lovia/workspaces/<name>-<hash>`` for the first workspace folder."""
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    if first_folder is None:
        return base / "lovia" / "default"
    key = hashlib.sha256(str(first_folder).encode()).hexdigest()[:12]
    return base / "lovia" / "workspaces" / f"{first_folder.name or 'root'}-{key}"


__all__ = [
    "DEFAULT_DENIED_PATHS",
    "UNTRUSTED_MCP",
    "HttpMCPServerSetting",
    "InitOptions",
    "InvalidMCPServerSetting",
    "LoviaSettings",
    "MCPServerSetting",
    "PermissionSettings",
    "RestorePointSettings",
    "SandboxSettings",
    "StdioMCPServerSetting",
    "SubagentSettings",
    "WorktreeSettings",
    "default_state_dir",
    "parse_init_options",
    "parse_mcp_server",
    "parse_settings",
    "restrict_untrusted",
]

"""Container engines: ``docker``/``podman`` bind mounts give the container a host path.

``-v SRC:DST``, ``--volume``, ``--mount type=bind,source=SRC`` are judged like any
other path (read or write: the container may do both), in every spelling.
"""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv
from lovia.workspace.command_guard.core import Analyzer, ClaimOp, Handler

_VALUES: dict[str, ClaimOp | None] = {
    "-v": None,
    "--volume": None,
    "--mount": None,
    "--env-file": "read",
    "--label-file": "read",
    "--cidfile": "write",
    "--iidfile": "write",
}
_MOUNT_SOURCE_KEYS = ("source", "src")


def _h_container(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    sc = scan_argv(args, _VALUES)
    for v in sc.values:
        op = _VALUES[v.opt]
        if op is not None:
            an.claim_value(v, op)
        elif v.opt in ("-v", "--volume"):
            source = v.value.text.split(":", 1)[0]
            an.claim(v.value, "either", text=source)
        else:  # --mount type=bind,source=SRC,target=DST
            for item in v.value.text.split(","):
                key, _, value = item.partition("=")
                if key.strip().lower() in _MOUNT_SOURCE_KEYS and value:
                    an.claim(v.value, "either", text=value)
    an.generic(name, args, "either")


HANDLERS: dict[str, Handler] = dict.fromkeys(("docker", "podman", "nerdctl"), _h_container)

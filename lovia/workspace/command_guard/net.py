"""Network tools: ``curl`` and ``wget`` write downloads and read uploads; ``ssh`` options
can name local files or run local commands (``-o ProxyCommand=...``)."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv
from lovia.workspace.command_guard.core import Analyzer, ClaimOp, Handler


def _h_curl(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    value_opts: dict[str, ClaimOp] = {
        "-o": "write",
        "--output": "write",
        "-c": "write",
        "--cookie-jar": "write",
        "-D": "write",
        "--dump-header": "write",
        "--trace": "write",
        "--trace-ascii": "write",
        "--stderr": "write",
        "--output-dir": "write",
        "--create-dirs": "write",
        "-T": "read",
        "--upload-file": "read",
        "-K": "read",
        "--config": "read",
        "-b": "read",
        "--cookie": "read",
        "--cacert": "read",
        "--cert": "read",
        "--key": "read",
        "--netrc-file": "read",
        "-E": "read",
    }
    data_opts = {
        "-d",
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "-F",
        "--form",
        "--json",
    }
    sc = scan_argv(args, {**value_opts, **dict.fromkeys(data_opts)})
    for v in sc.values:
        if v.opt in data_opts:
            _data_ref(an, v.value)
        if v.opt in ("-K", "--config"):
            an.uncertain("curl reads options (outputs, uploads) from a file")
    remote_name = sc.has("-O", "--remote-name", "--remote-name-all", "-J")
    an.generic(name, [w for w in args], "either", value_opts=value_opts)
    if remote_name:
        an.claim(Word(text="."), "write", text=".")


def _data_ref(an: Analyzer, word: Word) -> None:
    text = word.text
    if "@" in text:
        ref = text.split("@", 1)[1]
        if ref and ref != "-":
            an.claim(word, "read", text=ref.split(";", 1)[0])
    elif text.startswith("<"):
        an.claim(word, "read", text=text[1:])


def _h_wget(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    value_opts: dict[str, ClaimOp] = {
        "-O": "write",
        "--output-document": "write",
        "-o": "write",
        "--output-file": "write",
        "-a": "write",
        "--append-output": "write",
        "-P": "write",
        "--directory-prefix": "write",
        "-i": "read",
        "--input-file": "read",
        "--load-cookies": "read",
        "--save-cookies": "write",
        "--post-file": "read",
        "--body-file": "read",
    }
    an.generic(name, args, "either", value_opts=value_opts)
    if not any(w.text.startswith(("-O", "--output-document")) for w in args):
        an.claim(Word(text="."), "write", text=".")
    runs = dict.fromkeys(("-e", "--execute", "--config", "--use-askpass"))
    sc = scan_argv(args, {**value_opts, **runs})
    for v in sc.values:
        if v.opt == "--use-askpass":
            an.payload(v.value, "wget --use-askpass")
        elif v.opt in runs:
            an.uncertain(f"wget {v.opt} runs wgetrc commands")


# ssh -o keys whose value is a command ssh runs locally, and keys naming a local file
_SSH_COMMAND_KEYS = frozenset({"proxycommand", "localcommand", "knownhostscommand"})
_SSH_LIBRARY_KEYS = frozenset({"pkcs11provider", "securitykeyprovider"})
_SSH_FILE_KEYS = frozenset(
    {
        "identityfile",
        "certificatefile",
        "userknownhostsfile",
        "globalknownhostsfile",
        "controlpath",
        "identityagent",
        "include",
        "revokedhostkeys",
        "securitykeyprovider",
        "pkcs11provider",
    }
)
_SSH_VALUES: dict[str, ClaimOp | None] = {
    "-o": None,
    "-F": "either",
    "-i": "either",
    "-E": "write",
    "-S": "either",
    "-b": "either",
    "-J": None,
    "-l": None,
    "-p": None,
    "-P": None,
    "-c": None,
    "-D": None,
    "-L": None,
    "-R": None,
    "-W": None,
    "-w": None,
    "-m": None,
    "-O": None,
    "-Q": None,
    "-B": None,
    "-e": None,
    "-I": None,
}


def ssh_options(an: Analyzer, name: str, args: list[Word]) -> None:
    """``-o Key=Value``: commands ssh runs locally are analysed, local files claimed."""
    for v in scan_argv(args, _SSH_VALUES).values:
        if v.opt == "-F":
            an.uncertain(f"{name} -F reads a configuration that can run commands")
        if v.opt != "-o":
            continue
        text = v.value.text.strip()
        key, _, value = text.replace("=", " ", 1).partition(" ")
        value = value.strip()
        if not value:
            continue
        if key.lower() in _SSH_COMMAND_KEYS:
            an.payload(Word(text=value, expansion=v.value.expansion), f"{name} -o {key}")
        elif key.lower() in _SSH_LIBRARY_KEYS:
            an.uncertain(f"{name} -o {key} loads a library")
            an.claim(Word(text=value, expansion=v.value.expansion), "either")
        elif key.lower() in _SSH_FILE_KEYS:
            an.claim(Word(text=value, expansion=v.value.expansion), "either")


def _h_ssh(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    ssh_options(an, name, args)
    if name == "sftp":
        # -S PROGRAM connects through a local program, -D runs a local sftp server
        for v in scan_argv(args, {**_SSH_VALUES, "-S": None, "-D": None}).values:
            if v.opt in ("-S", "-D"):
                an.payload(v.value, f"sftp {v.opt}")
    an.generic(name, args, "either", value_opts=_SSH_VALUES)


HANDLERS: dict[str, Handler] = {"curl": _h_curl, "wget": _h_wget, "ssh": _h_ssh, "sftp": _h_ssh}

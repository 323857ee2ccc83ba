"""File utilities: readers, modifiers, copiers and the tools with their own argument
grammar (``sed``, ``awk``, ``find``, ``grep``, ``dd``, ``sort``, ``patch``...).

Long because it is a table of small handlers, one per program family, each read on its own.
"""

from __future__ import annotations

import re

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import Scan, scan_argv
from lovia.workspace.command_guard.core import (
    _RECURSIVE_FLAGS,
    Analyzer,
    ClaimOp,
    CommandWalk,
    Handler,
    _basename,
    _Collector,
    _is_pathish,
)
from lovia.workspace.command_guard.findexpr import find_walk
from lovia.workspace.command_guard.net import ssh_options
from lovia.workspace.command_guard.sedscript import sed_script_problem

_READERS = frozenset(
    {
        "cat",
        "tac",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "egrep",
        "fgrep",
        "zgrep",
        "rg",
        "ag",
        "ack",
        "ls",
        "dir",
        "tree",
        "wc",
        "diff",
        "cmp",
        "comm",
        "file",
        "stat",
        "du",
        "df",
        "md5sum",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "b2sum",
        "cksum",
        "sum",
        "jq",
        "cut",
        "nl",
        "od",
        "hexdump",
        "strings",
        "readlink",
        "realpath",
        "column",
        "fold",
        "fmt",
        "paste",
        "join",
        "expand",
        "unexpand",
        "rev",
        "zcat",
        "bzcat",
        "xzcat",
        "zless",
        "lsattr",
        "getfacl",
        "iconv",
        "base64",
        "base32",
        "tr",
        "pr",
        "look",
        "numfmt",
        "cd",
        "pushd",
        "sort",
        "find",
    }
)
_MODIFIERS = frozenset(
    {
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "touch",
        "mkdir",
        "mkfifo",
        "mknod",
        "chmod",
        "chown",
        "chgrp",
        "chattr",
        "setfacl",
        "chcon",
        "truncate",
        "tee",
        "sponge",
        "gzip",
        "gunzip",
        "bzip2",
        "bunzip2",
        "xz",
        "unxz",
        "zstd",
        "unzstd",
        "lz4",
        "compress",
        "uncompress",
        "shuf",
    }
)
_COPIERS = frozenset({"cp", "mv", "install", "rsync", "scp", "ln", "link", "rename"})
# each copier's options that take a value (the others are flags: cp -i, rsync -t...)
_TARGET: dict[str, ClaimOp | None] = {
    "-t": "write",
    "--target-directory": "write",
    "-S": "read",  # a backup suffix, claimed as before (strict, never looser)
    "--suffix": "read",
}
_COPIER_VALUES: dict[str, dict[str, ClaimOp | None]] = {
    "cp": _TARGET,
    "mv": _TARGET,
    "ln": _TARGET,
    "install": {
        **_TARGET,
        "-m": "read",
        "--mode": "read",
        "-o": "read",
        "--owner": "read",
        "-g": "read",
        "--group": "read",
        "--strip-program": None,
    },
    "rsync": {
        "-e": "read",
        "--rsh": "read",
        "--exclude-from": "read",
        "--include-from": "read",
        "--files-from": "read",
        "-T": "write",
        "--temp-dir": "write",
        "--log-file": "write",
        "--backup-dir": "write",
        "--partial-dir": "write",
        "--write-batch": "write",
        "--only-write-batch": "write",
        "--read-batch": "read",
        "--password-file": "either",
        "--compare-dest": "either",
        "--copy-dest": "either",
        "--link-dest": "either",
        "-f": None,
        "--filter": None,
        "--exclude": None,
        "--include": None,
        "-B": None,
        "--block-size": None,
        "--chmod": None,
        "--chown": None,
        "--port": None,
        "--timeout": None,
        "--bwlimit": None,
        "--max-size": None,
        "--min-size": None,
        "--rsync-path": None,
        "-M": None,
        "--remote-option": None,
    },
    "scp": {
        "-i": "read",
        "-F": "read",
        "-S": "read",
        "-o": None,
        "-P": None,
        "-c": None,
        "-l": None,
        "-J": None,
    },
}
_SED_WRITE_RE = re.compile(r"(?:^|[;{}\n/0-9$])\s*[wWe](?:\s|$)|/[gpIiMme0-9]*[we](?:\s|$|;)")


def _sed_effects(script: str) -> bool:
    """Whether a sed script may read, write or run something (``r``, ``w``, ``e``...)."""
    problem = sed_script_problem(script)
    if problem is not None and problem[0] == "effect":
        return True
    return problem is not None and bool(_SED_WRITE_RE.search(script))


def reader(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    an.generic(name, args, "read")


def _walked(an: Analyzer, before: int, walk: CommandWalk | None) -> None:
    """Describe how the recursive claims recorded since ``before`` walk their tree."""
    if walk is None:
        return
    for claim in an.result.claims[before:]:
        if claim.recursive:
            claim.walk = walk


def _int_value(text: str) -> int | None:
    return int(text) if text.isdigit() else None


_LS_VALUES = dict.fromkeys(
    (
        "-I",
        "--ignore",
        "-T",
        "--tabsize",
        "-w",
        "--width",
        "--block-size",
        "--format",
        "--hide",
        "--indicator-style",
        "--quoting-style",
        "--sort",
        "--time",
        "--time-style",
    )
)


def _h_ls(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """``ls -R`` lists names; dot entries only with ``-a``/``-A``; ``-L`` follows links."""
    before = len(an.result.claims)
    an.generic(name, args, "read")
    sc = scan_argv(args, _LS_VALUES, optional=("--color", "--colour", "--hyperlink"))
    if sc.has("-L", "--dereference"):
        return
    hidden = sc.has("-a", "-A", "-f", "--all", "--almost-all")
    _walked(an, before, CommandWalk(names_only=True, skip_hidden=not hidden))


_TREE_VALUES: dict[str, ClaimOp | None] = {
    "-L": None,
    "-P": None,
    "-I": None,
    "-o": "write",
    "-H": None,
    "-T": None,
    "--filelimit": None,
    "--charset": None,
    "--timefmt": None,
    "--sort": None,
    "--fromfile": "read",
}


def _h_tree(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """``tree`` lists names (dot entries with ``-a``; ``-L N`` levels; ``-l`` follows links)."""
    before = len(an.result.claims)
    an.generic(name, args, "read", value_opts=_TREE_VALUES)
    sc = scan_argv(args, _TREE_VALUES)
    if sc.has("-l", "-R", "--fromfile"):
        return
    depth = next((_int_value(v.value.text) for v in sc.values if v.opt == "-L"), None)
    walk = CommandWalk(names_only=True, skip_hidden=not sc.has("-a"), max_depth=depth)
    _walked(an, before, walk)


_DU_VALUES = dict.fromkeys(
    (
        "-d",
        "--max-depth",
        "-t",
        "--threshold",
        "-B",
        "--block-size",
        "--exclude",
        "-X",
        "--exclude-from",
        "--time-style",
    )
)


def _h_du(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """``du`` prints directory names (``-a``: files too); ``-s`` only the operands."""
    before = len(an.result.claims)
    an.generic(name, args, "read")
    sc = scan_argv(args, _DU_VALUES, optional=("--time",))
    if sc.has("-L", "--dereference"):
        return
    depth = next(
        (_int_value(v.value.text) for v in sc.values if v.opt in ("-d", "--max-depth")), None
    )
    if sc.has("-s", "--summarize"):
        depth = 0
    _walked(an, before, CommandWalk(names_only=True, max_depth=depth))


def modifier(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    an.generic(name, args, "write")


def copier(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    value_opts = _COPIER_VALUES.get(name, {})
    sc = scan_argv(args, value_opts)
    if name in ("scp", "sftp"):
        ssh_options(an, name, args)
    # commands the copier runs: rsync's remote shell, install's strip program
    an.run_values(sc, ("-e", "--rsh", "--strip-program", "--rsync-path"), name)
    collector = _Collector()
    operands = collector.collect(an, name, args, value_opts)
    flags = collector.flags
    has_target = any(v.opt in ("-t", "--target-directory") for v in sc.values)
    recursive = bool(flags & _RECURSIVE_FLAGS) or any(
        not f.startswith("--") and ("r" in f[1:] or "R" in f[1:] or "a" in f[1:]) for f in flags
    )
    if name == "rsync" and any(f.startswith("--") and "remove-source" in f for f in flags):
        source_op: ClaimOp = "write"
    else:
        source_op = "write" if name in ("mv", "rename") else "read"
    if name in ("ln", "link") and len(operands) == 1:
        # ln TARGET: a link named after TARGET is written into the cwd; the target is
        # read (a hard link to a denied file is an alias of it)
        an.claim(operands[0], "read")
        an.claim(Word(text="."), "write", text=".")
        return
    if has_target or len(operands) <= 1:
        for w in operands:
            an.claim(w, source_op if has_target else "either", recursive=recursive)
        return
    *sources, dest = operands
    for w in sources:
        an.claim(w, source_op, recursive=recursive, destructive=name == "mv")
        if not (w.expansion or w.glob):
            joined = dest.text.rstrip("/") + "/" + _basename(w.text)
            an.claim(dest, "write", text=joined)
    an.claim(dest, "write", recursive=recursive)


def _h_cd(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    operands = scan_argv(args).operands
    target = operands[0] if operands else None
    # ``cd`` alone goes home: later commands read there
    an.claim(target if target is not None else Word(text="~"), "read")
    an.cd(target)


def _h_xxd(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """``xxd [options] [infile [outfile]]``: the second operand is written."""
    values = dict.fromkeys(("-c", "-g", "-l", "-n", "-o", "-s", "-C", "-cols", "-len", "-seek"))
    operands = scan_argv(args, values).operands
    for k, w in enumerate(operands):
        an.claim(w, "write" if k >= 1 else "read")


def _h_tee(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    an.generic(name, args, "write")


def _h_dd(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    for w in args:
        key, sep, value = w.text.partition("=")
        if not sep:
            continue
        if key == "of":
            an.claim(w, "write", text=value)
        elif key == "if":
            an.claim(w, "read", text=value)


_SED_VALUES: dict[str, ClaimOp | None] = {
    "-e": None,
    "--expression": None,
    "-f": "read",
    "--file": "read",
    "-l": None,
    "--line-length": None,
}


def _h_sed(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    sc = scan_argv(args, _SED_VALUES, optional=("-i", "--in-place"))
    inplace = sc.has("-i", "--in-place")
    script_given = False
    for v in sc.values:
        script_given = True
        if v.opt in ("-f", "--file"):
            an.claim_value(v, "read")
        elif _sed_effects(v.value.text):
            an.uncertain("sed script that reads, writes or executes")
    operands = list(sc.operands)
    if not script_given and operands:
        script = operands.pop(0)
        an.claim(script, "read", bare_ok=False)
        if _sed_effects(script.text):
            an.uncertain("sed script that reads, writes or executes")
    for w in operands:
        an.claim(w, "write" if inplace else "read")


_AWK_VALUES: dict[str, ClaimOp | None] = {
    "-f": "read",
    "--file": "read",
    "-E": "read",
    "--exec": "read",
    "-i": "read",
    "--include": "read",
    "-l": "read",
    "--load": "read",
    "-v": None,
    "--assign": None,
    "-F": None,
    "--field-separator": None,
    "-e": None,
    "--source": None,
}


def _h_awk(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    inplace = any(w.text in ("inplace",) for w in args) or any(
        w.text == "-i" and i + 1 < len(args) and args[i + 1].text == "inplace"
        for i, w in enumerate(args)
    )
    sc = scan_argv(args, _AWK_VALUES)
    script_given = False
    for v in sc.values:
        if v.opt in ("-l", "--load"):
            an.uncertain("awk -l loads a compiled extension")
        if v.opt in ("-f", "--file", "-E", "--exec"):
            script_given = True
            an.claim_value(v, "read")
        elif v.opt in ("-i", "--include", "-l", "--load"):
            an.claim_value(v, "read")
        elif v.opt in ("-e", "--source"):
            script_given = True
            _awk_script(an, v.value)
    operands = list(sc.operands)
    if not script_given and operands:
        _awk_script(an, operands.pop(0))
    for w in operands:
        if "=" in w.text and not _is_pathish(w.text.split("=", 1)[0]):
            continue
        an.claim(w, "write" if inplace else "read")


def _awk_script(an: Analyzer, script: Word) -> None:
    if any(tok in script.text for tok in (">", "|", "system", "getline")):
        an.uncertain("awk script that writes, pipes or executes")
        an.code_literals(script)
    if "@load" in script.text or "@include" in script.text:
        an.uncertain("awk script that loads an extension or a file")


def _h_find(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    starts: list[Word] = []
    i = 0
    while i < len(args) and (args[i].text in ("-H", "-L", "-P", "-D") or args[i].text[:2] == "-O"):
        i += 2 if args[i].text == "-D" else 1  # -D takes debug options
    while i < len(args) and not (args[i].text.startswith(("-", "(", "!", ")"))):
        starts.append(args[i])
        i += 1
    if not starts:
        starts = [Word(text=".")]
    expr = args[i:]
    delete = any(w.text == "-delete" for w in expr)
    walk = find_walk(args[:i], expr)
    for w in starts:
        an.claim(w, "write" if delete else "read", recursive=True, destructive=delete, walk=walk)
    j = 0
    while j < len(expr):
        t = expr[j].text
        if t in ("-exec", "-execdir", "-ok", "-okdir"):
            k = j + 1
            inner: list[Word] = []
            while k < len(expr) and expr[k].text not in (";", "+"):
                inner.append(expr[k])
                k += 1
            j = k + 1
            if not inner:
                continue
            expanded: list[Word] = []
            for w in inner:
                if "{}" in w.text:
                    for s in starts:
                        expanded.append(
                            Word(
                                text=w.text.replace("{}", s.text),
                                pattern=w.text,
                                expansion=w.expansion,
                            )
                        )
                else:
                    expanded.append(w)
            before = len(an.result.claims)
            an.command(expanded)
            for c in an.result.claims[before:]:
                c.recursive = True
            continue
        if t in ("-fprint", "-fprint0", "-fprintf", "-fls") and j + 1 < len(expr):
            an.claim(expr[j + 1], "write")
            j += 2
            continue
        if t in ("-newer", "-anewer", "-cnewer", "-samefile", "-files0-from") and j + 1 < len(expr):
            an.claim(expr[j + 1], "read")
            j += 2
            continue
        j += 1


# value options of GNU grep (-E, -T, -r are flags here) and of rg/ag/ack
_GREP_VALUES = frozenset(
    {
        "-e",
        "--regexp",
        "-f",
        "--file",
        "-m",
        "--max-count",
        "-A",
        "--after-context",
        "-B",
        "--before-context",
        "-C",
        "--context",
        "-d",
        "--directories",
        "-D",
        "--devices",
        "--include",
        "--exclude",
        "--exclude-dir",
        "--exclude-from",
        "--label",
        "--group-separator",
        "--binary-files",
    }
)
_RG_VALUES = frozenset(
    {
        "-e",
        "--regexp",
        "-f",
        "--file",
        "-g",
        "--glob",
        "--iglob",
        "-t",
        "--type",
        "-T",
        "--type-not",
        "--type-add",
        "-m",
        "--max-count",
        "-A",
        "-B",
        "-C",
        "--context",
        "-j",
        "--threads",
        "-M",
        "--max-columns",
        "-d",
        "--max-depth",
        "-E",
        "--encoding",
        "-r",
        "--replace",
        "--ignore-file",
        "--pre",
        "--pre-glob",
        "--include",
        "--exclude",
        "--exclude-dir",
        "--exclude-from",
    }
)


def _h_grep(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """grep/rg/ag/ack: the first operand is the pattern unless -e/-f/--regexp give it."""
    pattern_given = False
    value_opts = _RG_VALUES if name in ("rg", "ag", "ack") else _GREP_VALUES
    recursive = name in ("rg", "ag", "ack") or any(
        w.text in ("-r", "-R", "--recursive", "--dereference-recursive")
        or (
            w.text.startswith("-")
            and not w.text.startswith("--")
            and ("r" in w.text[1:] or "R" in w.text[1:])
        )
        for w in args
    )
    sc = scan_argv(args, dict.fromkeys(value_opts), optional=("--color", "--colour"))
    if name not in ("rg", "ag", "ack") and any(
        v.opt in ("-d", "--directories") and v.value.text == "recurse" for v in sc.values
    ):
        recursive = True  # grep -d recurse is -r
    for v in sc.values:
        if v.opt in ("-e", "--regexp", "-f", "--file"):
            pattern_given = True
        if v.opt in ("-f", "--file", "--exclude-from", "--ignore-file"):
            an.claim_value(v, "read")
        if v.opt == "--pre":
            # rg runs the program with every file it searches: a command, and a path
            an.claim_value(v, "read")
            an.payload(v.value, "rg --pre")
    if name in ("rg", "ag", "ack") and sc.has("-z", "--search-zip"):
        an.uncertain(f"{name} -z runs decompression programs found on PATH")
    operands = list(sc.operands)
    if not pattern_given and operands:
        operands = operands[1:]
    before = len(an.result.claims)
    for w in operands:
        an.claim(w, "read", recursive=recursive)
    if recursive and not operands:
        an.claim(Word(text="."), "read", recursive=True, text=".")
    _walked(an, before, _search_walk(name, args, sc))


def _search_walk(name: str, args: list[Word], sc: Scan) -> CommandWalk | None:
    """What a recursive search skips: rg hidden entries, grep ``--exclude-dir`` trees."""
    if name == "rg":
        unrestricted = sum(w.text.count("u") for w in args if _is_short_cluster(w.text, "u"))
        hidden = sc.has("--hidden", "-.") or unrestricted >= 2
        if sc.has("-L", "--follow"):
            return None
        return CommandWalk(names_only=sc.has("--files"), skip_hidden=not hidden)
    if name in ("grep", "egrep", "fgrep") and not sc.has("-R", "--dereference-recursive"):
        skip = tuple(v.value.text for v in sc.values if v.opt == "--exclude-dir")
        return CommandWalk(skip_dirs=skip)
    return None


def _is_short_cluster(text: str, letter: str) -> bool:
    return text.startswith("-") and not text.startswith("--") and letter in text[1:]


_SORT_VALUES: dict[str, ClaimOp | None] = {
    "-o": "write",
    "--output": "write",
    "-T": "write",
    "--temporary-directory": "write",
    "--files0-from": "read",
    "--compress-program": None,
}


def _h_sort(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    an.run_values(scan_argv(args, _SORT_VALUES), ("--compress-program",), name)
    an.generic(name, args, "read", value_opts=_SORT_VALUES)


def _h_uniq(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    collector = _Collector()
    operands = collector.collect(an, name, args, {"-f": "read", "-s": "read", "-w": "read"})
    for k, w in enumerate(operands):
        an.claim(w, "write" if k == 1 else "read")


_SPLIT_VALUES: dict[str, ClaimOp | None] = {
    "-l": "read",
    "-b": "read",
    "-n": "read",
    "-a": "read",
    "-C": "read",
    "--filter": None,
}


def _h_split(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    an.run_values(scan_argv(args, _SPLIT_VALUES), ("--filter",), name)
    collector = _Collector()
    operands = collector.collect(an, name, args, _SPLIT_VALUES)
    for k, w in enumerate(operands):
        an.claim(w, "write" if k >= 1 else "read")
    if len(operands) < 2:
        an.claim(Word(text="."), "write", text=".")


def _h_patch(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    operands = an.generic(
        name,
        args,
        "write",
        value_opts={
            "-i": "read",
            "--input": "read",
            "-o": "write",
            "--output": "write",
            "-d": "read",
            "--directory": "read",
            "-r": "write",
            "-B": "write",
        },
    )
    if not operands:
        an.uncertain("patch writes the files named in the patch")


_MAN_VALUES: dict[str, ClaimOp | None] = {
    "-P": None,
    "--pager": None,
    "-H": None,
    "--html": None,
    "-M": "either",
    "--manpath": "either",
    "-C": "either",
    "--config-file": "either",
}


def _h_man(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    an.run_values(scan_argv(args, _MAN_VALUES), ("-P", "--pager", "-H", "--html"), name)
    an.generic(name, args, "either", value_opts=_MAN_VALUES)


HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(_COPIERS, copier),
    **dict.fromkeys(_MODIFIERS, modifier),
    **dict.fromkeys(_READERS, reader),
    "grep": _h_grep,
    "egrep": _h_grep,
    "fgrep": _h_grep,
    "zgrep": _h_grep,
    "rg": _h_grep,
    "ag": _h_grep,
    "ack": _h_grep,
    "cd": _h_cd,
    "pushd": _h_cd,
    "tee": _h_tee,
    "dd": _h_dd,
    "sed": _h_sed,
    "gsed": _h_sed,
    "awk": _h_awk,
    "gawk": _h_awk,
    "mawk": _h_awk,
    "nawk": _h_awk,
    "find": _h_find,
    "ls": _h_ls,
    "tree": _h_tree,
    "du": _h_du,
    "xxd": _h_xxd,
    "sort": _h_sort,
    "uniq": _h_uniq,
    "split": _h_split,
    "csplit": _h_split,
    "patch": _h_patch,
    "man": _h_man,
}

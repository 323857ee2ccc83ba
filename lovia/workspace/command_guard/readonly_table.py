"""The read-only table: programs, and the options with which they only read.

Data only. :mod:`.readonly` classifies commands with it and
``python -m lovia.workspace.command_guard.readonly`` writes the table in
``docs/workspace.md`` from it. An option that is not listed for a program — including an
abbreviation of a listed long option (``--ex`` for ``--exclude``) — makes the command
not read-only, so a forgotten option errs on the side of asking.

Each program lists its flags, the options that take a value (``values``; the ones
whose value is a path the program reads are also in ``paths``), options whose value is
optional and only ever glued (``--color[=WHEN]``, git's ``-M[n]``), and ``forbidden``
options with the reason they are not read-only. The last only documents: forbidden and
unknown options are refused alike.

Long because it is data: the one table, kept in one place so the generated docs match it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

OperandKind = Literal["paths", "text", "pattern, paths", "script, paths", "none"]

WRITES = "writes a file"
RUNS = "runs a program"
LIST_FILE = "reads the names of more files from a file"
SCRIPT_FILE = "reads a script from a file"
FOLLOWS = "follows symbolic links out of the tree"
PAGER = "starts a pager"
SIGNATURE = "runs gpg"
ELSEWHERE = "works on another repository or directory"
CONFIG = "changes git's configuration"
MODIFIES = "changes the repository"


@dataclass(frozen=True)
class ReadOnlyProgram:
    """The options with which a program only reads (see the module docstring)."""

    flags: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    forbidden: Mapping[str, str] = field(default_factory=dict)
    operands: OperandKind = "paths"
    max_operands: int | None = None
    #: operands are allowed only with one of these flags (``git branch --list PATTERN``)
    operands_with: frozenset[str] = frozenset()
    #: ``-NUM`` is a count (``head -20``, ``git log -5``)
    numeric: bool = False
    #: long options that take two words (jq ``--arg NAME VALUE``); in ``paths`` when the
    #: second one is a path
    pairs: frozenset[str] = frozenset()
    #: a check of the script or program operand (:mod:`.readonly` knows them by name)
    check: str | None = None
    subcommands: Mapping[str, ReadOnlyProgram] | None = None
    note: str = ""
    #: ``find`` style: start paths, then whole words (``-name X``), no clusters
    expression: bool = False


def _w(text: str) -> frozenset[str]:
    return frozenset(text.split())


def program(
    flags: str = "",
    values: str = "",
    *,
    paths: str = "",
    optional: str = "",
    forbidden: Mapping[str, str] | None = None,
    operands: OperandKind = "paths",
    max_operands: int | None = None,
    operands_with: str = "",
    numeric: bool = False,
    pairs: str = "",
    check: str | None = None,
    subcommands: Mapping[str, ReadOnlyProgram] | None = None,
    note: str = "",
    expression: bool = False,
) -> ReadOnlyProgram:
    """A table entry; option lists are whitespace-separated words."""
    return ReadOnlyProgram(
        flags=_w(flags),
        values=_w(values) | _w(paths),
        paths=_w(paths),
        optional=_w(optional),
        forbidden=dict(forbidden or {}),
        operands=operands,
        max_operands=max_operands,
        operands_with=_w(operands_with),
        numeric=numeric,
        pairs=_w(pairs),
        check=check,
        subcommands=subcommands,
        note=note,
        expression=expression,
    )


def _forbid(reason: str, options: str) -> dict[str, str]:
    return dict.fromkeys(options.split(), reason)


_GREP = program(
    "-E -F -G -P -i -y -v -w -x -c -l -L -n -h -H -o -q -s -r -a -I -U -z -Z -b -T "
    "--extended-regexp --fixed-strings --basic-regexp --perl-regexp --ignore-case "
    "--no-ignore-case --invert-match --word-regexp --line-regexp --count "
    "--files-with-matches --files-without-match --line-number --no-filename "
    "--with-filename --only-matching --quiet --silent --no-messages --recursive --text "
    "--byte-offset --initial-tab --null --null-data --line-buffered --binary "
    "--no-group-separator",
    "-e --regexp -m --max-count -A --after-context -B --before-context -C --context "
    "--include --exclude --exclude-dir --label --binary-files -d --directories -D "
    "--devices --group-separator",
    paths="-f --file --exclude-from",
    optional="--color --colour",
    forbidden=_forbid(FOLLOWS, "-R --dereference-recursive"),
    operands="pattern, paths",
    numeric=True,
    note="`-r` skips the directories `--exclude-dir` names",
)
_HASH = program(
    "-b -t -z --binary --text --tag --zero",
    forbidden=_forbid(LIST_FILE, "-c --check"),
)
_AWK = program(
    "-b --characters-as-bytes -c --traditional -P --posix -n --non-decimal-data -N "
    "--use-lc-numeric -r --re-interval -s --no-optimize -S --sandbox -M --bignum",
    "-F --field-separator -v --assign -e --source",
    forbidden={
        **_forbid(SCRIPT_FILE, "-f --file -i --include"),
        **_forbid(RUNS, "-l --load -E --exec"),
        **_forbid(WRITES, "-o --pretty-print -p --profile -d --dump-variables -D --debug"),
    },
    operands="script, paths",
    check="awk",
    note="not when the program has `system`, `getline`, `|`, `>`, `ENVIRON`, `ARGV` or `@`",
)

TABLE: dict[str, ReadOnlyProgram] = {
    "ls": program(
        "-a -A -b -B -c -C -d -D -f -F -g -G -h -H -i -k -l -m -n -N -o -p -q -Q -r -R -s "
        "-S -t -u -U -v -x -X -Z -1 --all --almost-all --author --escape --ignore-backups "
        "--directory --dired --file-type --full-time --group-directories-first --no-group "
        "--human-readable --si --dereference-command-line "
        "--dereference-command-line-symlink-to-dir --numeric-uid-gid --literal "
        "--hide-control-chars --show-control-chars --quote-name --reverse --recursive "
        "--size --context --zero",
        "-I --ignore -T --tabsize -w --width --block-size --format --hide "
        "--indicator-style --quoting-style --sort --time --time-style",
        optional="--color --colour --hyperlink --classify",
        forbidden=_forbid(FOLLOWS, "-L --dereference"),
        note="`-R` lists names; dot entries only with `-a`/`-A`",
    ),
    "cat": program(
        "-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number "
        "--squeeze-blank --show-tabs --show-nonprinting"
    ),
    "tac": program("-b -r --before --regex", "-s --separator"),
    "head": program(
        "-q -v -z --quiet --silent --verbose --zero-terminated",
        "-n --lines -c --bytes",
        numeric=True,
    ),
    "tail": program(
        "-f -F -q -v -z --retry --quiet --silent --verbose --zero-terminated",
        "-n --lines -c --bytes -s --sleep-interval --pid --max-unchanged-stats",
        optional="--follow",
        numeric=True,
        note="`-f` runs until the shell timeout",
    ),
    "wc": program(
        "-c -m -l -L -w --bytes --chars --lines --max-line-length --words",
        "--total",
        forbidden=_forbid(LIST_FILE, "--files0-from"),
    ),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": program(
        "-i --ignore-case -S --smart-case -s --case-sensitive -w --word-regexp -x "
        "--line-regexp -v --invert-match -c --count --count-matches -l "
        "--files-with-matches --files-without-match -n --line-number -N --no-line-number "
        "-H --with-filename -I --no-filename -F --fixed-strings -o --only-matching -p "
        "--pretty -q --quiet -u --unrestricted --hidden -. --no-ignore --no-ignore-vcs "
        "--no-ignore-dot --no-ignore-global --no-ignore-parent --no-ignore-exclude "
        "--no-ignore-files --no-ignore-messages --files --json --vimgrep --heading "
        "--no-heading --column --no-column -0 --null -U --multiline --multiline-dotall -P "
        "--pcre2 --no-messages --stats --trim --no-config -a --text --binary --crlf -b "
        "--byte-offset --passthru --one-file-system --no-unicode --type-list "
        "--line-buffered --block-buffered --sort-files --max-columns-preview",
        "-e --regexp -g --glob --iglob -t --type -T --type-not --type-add --type-clear -m "
        "--max-count -A --after-context -B --before-context -C --context -j --threads -M "
        "--max-columns -d --max-depth --maxdepth -E --encoding -r --replace --sort --sortr "
        "--color --colors --max-filesize --engine --field-match-separator "
        "--field-context-separator --path-separator --context-separator "
        "--dfa-size-limit --regex-size-limit",
        paths="-f --file --ignore-file",
        forbidden={
            **_forbid(RUNS, "--pre --pre-glob -z --search-zip --hostname-bin"),
            **_forbid(FOLLOWS, "-L --follow"),
        },
        operands="pattern, paths",
        check="rg",
        note="hidden entries are skipped unless `--hidden`/`-uu`; not with "
        "`RIPGREP_CONFIG_PATH` set (unless `--no-config`)",
    ),
    "find": program(
        "-print -print0 -ls -prune -quit -true -false -empty -readable -writable "
        "-executable -nouser -nogroup -depth -d -xdev -mount -noleaf -daystart "
        "-ignore_readdir_race -noignore_readdir_race -warn -nowarn -not -a -and -o -or "
        "! ( ) , -P",
        "-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname "
        "-type -xtype -maxdepth -mindepth -mtime -mmin -atime -amin -ctime -cmin -size "
        "-perm -user -group -uid -gid -links -inum -used -fstype -printf -regextype",
        paths="-newer -anewer -cnewer -samefile",
        forbidden={
            **_forbid(RUNS, "-exec -execdir -ok -okdir"),
            **_forbid(WRITES, "-delete -fprint -fprint0 -fprintf -fls"),
            **_forbid(LIST_FILE, "-files0-from"),
            **_forbid(FOLLOWS, "-L -H -follow"),
        },
        note="prints names: entries inside a denied directory only when the "
        "expression can print them",
        expression=True,
    ),
    "stat": program(
        "-L -f -t --dereference --file-system --terse",
        "-c --format --printf",
        optional="--cached",
    ),
    "file": program(
        "-b -i -L -h -k -N -n -r -s -E -0 --brief --mime --mime-type --mime-encoding "
        "--dereference --no-dereference --keep-going --no-pad --raw --special-files "
        "--print0 --no-buffer --extension --apple",
        "-F --separator -e --exclude -P --parameter",
        forbidden={
            **_forbid(RUNS, "-z -Z --uncompress --uncompress-noreport"),
            **_forbid(LIST_FILE, "-f --files-from"),
            **_forbid(WRITES, "-C --compile -p --preserve-date"),
        },
    ),
    "du": program(
        "-a -b -c -h -k -l -m -P -s -S -x -0 --all --apparent-size --bytes --total "
        "--human-readable --si --count-links --no-dereference --separate-dirs --summarize "
        "--one-file-system --null --inodes",
        "-d --max-depth -t --threshold -B --block-size --exclude --time-style",
        paths="-X --exclude-from",
        optional="--time",
        forbidden={
            **_forbid(LIST_FILE, "--files0-from"),
            **_forbid(FOLLOWS, "-L --dereference -H --dereference-args -D"),
        },
        note="prints directory names (`-s`: only the operands)",
    ),
    "diff": program(
        "-q -s -r -N -i -E -Z -b -w -B -a -t -T -d -u -c -y -p -e -n --brief "
        "--report-identical-files --recursive --new-file --unidirectional-new-file "
        "--ignore-case --ignore-file-name-case --no-ignore-file-name-case "
        "--ignore-tab-expansion --ignore-trailing-space --ignore-space-change "
        "--ignore-all-space --ignore-blank-lines --strip-trailing-cr --text --expand-tabs "
        "--initial-tab --minimal --speed-large-files --suppress-common-lines "
        "--suppress-blank-empty --left-column --show-c-function --normal --ed --rcs",
        "-U -C -W --width -x --exclude -S --starting-file -I --ignore-matching-lines -F "
        "--show-function-line --label --tabsize --horizon-lines --line-format "
        "--old-line-format --new-line-format --unchanged-line-format --old-group-format "
        "--new-group-format --changed-group-format --unchanged-group-format -D --ifdef "
        "--palette",
        paths="-X --exclude-from --from-file --to-file",
        optional="--color --unified --context",
        forbidden=_forbid(RUNS, "-l --paginate"),
    ),
    "cmp": program(
        "-b -l -s --print-bytes --verbose --quiet --silent",
        "-i --ignore-initial -n --bytes",
    ),
    "comm": program(
        "-1 -2 -3 -z --check-order --nocheck-order --total --zero-terminated",
        "--output-delimiter",
    ),
    "sort": program(
        "-b -d -f -g -h -i -M -n -R -r -V -c -C -m -s -u -z --ignore-leading-blanks "
        "--dictionary-order --ignore-case --general-numeric-sort --human-numeric-sort "
        "--ignore-nonprinting --month-sort --numeric-sort --random-sort --reverse "
        "--version-sort --merge --stable --unique --zero-terminated --debug",
        "-k --key -t --field-separator -S --buffer-size --parallel --sort --batch-size",
        paths="--random-source",
        optional="--check",
        forbidden={
            **_forbid(WRITES, "-o --output -T --temporary-directory"),
            **_forbid(RUNS, "--compress-program"),
            **_forbid(LIST_FILE, "--files0-from"),
        },
    ),
    "uniq": program(
        "-c -d -D -u -i -z --count --repeated --unique --ignore-case --zero-terminated",
        "-f --skip-fields -s --skip-chars -w --check-chars",
        optional="--all-repeated --group",
        max_operands=1,
        note="one operand (a second one is written)",
    ),
    "cut": program(
        "-s -n -z --complement --only-delimited --zero-terminated",
        "-b --bytes -c --characters -f --fields -d --delimiter --output-delimiter",
    ),
    "tr": program(
        "-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1",
        operands="text",
    ),
    "nl": program(
        "-p --no-renumber",
        "-b --body-numbering -d --section-delimiter -f --footer-numbering -h "
        "--header-numbering -i --line-increment -l --join-blank-lines -n --number-format "
        "-s --number-separator -v --starting-line-number -w --number-width",
    ),
    "tree": program(
        "-a -d -f -x -i -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -C -n --noreport "
        "--dirsfirst --du --si --prune --gitignore --matchdirs --ignore-case --inodes "
        "--device",
        "-L -P -I --filelimit --charset --timefmt --sort",
        forbidden={
            **_forbid(WRITES, "-o -R"),
            **_forbid(LIST_FILE, "--fromfile"),
            **_forbid(FOLLOWS, "-l"),
        },
        note="lists names; dot entries only with `-a`",
    ),
    "pwd": program("-L -P", operands="none"),
    "echo": program("-n -e -E", operands="text"),
    "printf": program(operands="text"),
    "true": program(operands="text"),
    "false": program(operands="text"),
    "which": program("-a -s", operands="text"),
    "type": program("-a -t -p -P", operands="text"),
    "basename": program("-a -z --multiple --zero", "-s --suffix", operands="text"),
    "dirname": program("-z --zero", operands="text"),
    "date": program(
        "-u -R --utc --universal --rfc-email",
        "-d --date --rfc-3339",
        optional="-I --iso-8601",
        forbidden={**_forbid(MODIFIES, "-s --set"), **_forbid(LIST_FILE, "-f --file")},
        operands="text",
        max_operands=1,
    ),
    "realpath": program(
        "-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical "
        "--physical --quiet --strip --no-symlinks --zero"
    ),
    "readlink": program(
        "-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing "
        "--canonicalize-missing --no-newline --quiet --silent --verbose --zero"
    ),
    "cd": program("-L -P", max_operands=1),
    "md5sum": _HASH,
    "sha1sum": _HASH,
    "sha224sum": _HASH,
    "sha256sum": _HASH,
    "sha384sum": _HASH,
    "sha512sum": _HASH,
    "b2sum": _HASH,
    "cksum": program(),
    "od": program(
        "-b -c -d -f -i -l -o -s -v -x --output-duplicates --traditional",
        "-A --address-radix -j --skip-bytes -N --read-bytes -S -t --format --endian",
        optional="-w --width --strings",
    ),
    "hexdump": program(
        "-b -c -C -d -o -x -v --canonical",
        "-e -n -s",
        forbidden=_forbid(SCRIPT_FILE, "-f"),
    ),
    "xxd": program(
        "-a -b -C -E -i -p -u -e",
        "-c -g -l -n -o -s",
        forbidden=_forbid(WRITES, "-r"),
        max_operands=1,
        note="one operand (a second one is written)",
    ),
    "strings": program(
        "-a -d -f -w --all --data --print-file-name --include-all-whitespace",
        "-n --bytes -t --radix -e --encoding -s --output-separator",
        note="no `@file` operands",
    ),
    "column": program(
        "-t -x -n -e -L --table --fillrows --keep-empty-lines",
        "-s --separator -o --output-separator -c --output-width -N --table-columns -R "
        "--table-right -H --table-hide -W --table-wrap -T --table-truncate -l "
        "--table-columns-limit",
    ),
    "paste": program("-s -z --serial --zero-terminated", "-d --delimiters"),
    "rev": program(),
    "fold": program("-b -s --bytes --spaces", "-w --width"),
    "expand": program("-i --initial", "-t --tabs"),
    "sed": program(
        "-n -E -r -s -u -z --quiet --silent --regexp-extended --separate --unbuffered "
        "--null-data --posix --debug --sandbox",
        "-e --expression -l --line-length",
        forbidden={
            **_forbid(WRITES, "-i --in-place"),
            **_forbid(SCRIPT_FILE, "-f --file"),
        },
        operands="script, paths",
        check="sed",
        note="scripts of addresses and `p d q Q = l n N s y {}` only "
        "(no `r w e`, no `s///w` or `///e`)",
    ),
    "awk": _AWK,
    "gawk": _AWK,
    "mawk": _AWK,
    "jq": program(
        "-r -j -a -c -n -s -e -S -C -M -R --tab --raw-output --join-output "
        "--ascii-output --compact-output --null-input --slurp --exit-status --sort-keys "
        "--color-output --monochrome-output --raw-input --seq --stream --unbuffered",
        "--indent",
        paths="--slurpfile --rawfile",
        pairs="--arg --argjson --slurpfile --rawfile",
        forbidden={**_forbid(SCRIPT_FILE, "-f --from-file -L")},
        operands="script, paths",
        check="jq",
        note="not when the program uses `env`, `$ENV`, `import` or `include`",
    ),
}


# ----------------------------------------------------------------------------- git

_GIT_DIFF_FLAGS = (
    "-p -u --patch -s --no-patch --raw --patch-with-raw --numstat --shortstat --summary "
    "--patch-with-stat -z --name-only --name-status --no-color --no-renames --check "
    "--full-index --binary --no-prefix --default-prefix -R -a --text --ignore-cr-at-eol "
    "--ignore-space-at-eol -b --ignore-space-change -w --ignore-all-space "
    "--ignore-blank-lines --minimal --patience --histogram -W --function-context "
    "--exit-code --quiet --no-ext-diff --no-textconv --irreversible-delete -D "
    "--indent-heuristic --no-indent-heuristic --pickaxe-all --pickaxe-regex "
    "--compact-summary --no-color-moved --no-relative"
)
_GIT_DIFF_VALUES = (
    "--diff-algorithm --diff-filter --src-prefix --dst-prefix --line-prefix "
    "--inter-hunk-context -S -G --find-object --anchored --word-diff-regex --stat-width "
    "--stat-name-width --stat-count --stat-graph-width -l --ws-error-highlight"
)
_GIT_DIFF_OPTIONAL = (
    "-U --unified --stat --dirstat --color --color-moved --word-diff --color-words --abbrev "
    "--relative --submodule --ignore-submodules -M --find-renames -C --find-copies -B "
    "--break-rewrites"
)
_GIT_LOG_FLAGS = (
    "--oneline --graph --no-decorate --abbrev-commit --no-abbrev-commit --all --reverse "
    "--first-parent --merges --no-merges --follow --relative-date --topo-order "
    "--date-order --author-date-order --left-right --cherry-pick --cherry-mark --cherry "
    "--boundary --ancestry-path --full-history --simplify-by-decoration "
    "--simplify-merges --dense --sparse --source --parents --children --do-walk -g "
    "--walk-reflogs --regexp-ignore-case -i --all-match --invert-grep -E "
    "--extended-regexp -F --fixed-strings -P --perl-regexp --basic-regexp --mailmap "
    "--use-mailmap --no-mailmap --log-size --no-notes --full-diff --no-expand-tabs -m -c "
    "--cc --combined-all-paths --remove-empty --not"
)
_GIT_LOG_VALUES = (
    "-n --max-count --skip --since --after --until --before --author --committer --grep "
    "--date --encoding --diff-merges --grep-reflog --exclude --glob"
)
_GIT_LOG_OPTIONAL = (
    "--decorate --branches --tags --remotes --no-walk --pretty --format --notes --show-notes "
    "--expand-tabs --max-parents --min-parents"
)
_GIT_SHOWS_FORBIDDEN = {
    **_forbid(RUNS, "--ext-diff --textconv"),
    **_forbid(WRITES, "--output"),
    **_forbid(SIGNATURE, "--show-signature"),
}
_GIT_LOG = program(
    f"{_GIT_DIFF_FLAGS} {_GIT_LOG_FLAGS}",
    f"{_GIT_DIFF_VALUES} {_GIT_LOG_VALUES}",
    optional=f"{_GIT_DIFF_OPTIONAL} {_GIT_LOG_OPTIONAL}",
    forbidden={**_GIT_SHOWS_FORBIDDEN, "-L": "names a file inside its value"},
    operands="text",
    numeric=True,
    note="revisions and pathspecs; patches are judged against the history scan",
)
_GIT_DIFF = program(
    f"{_GIT_DIFF_FLAGS} --cached --staged --merge-base --no-index",
    _GIT_DIFF_VALUES,
    paths="-O",
    optional=_GIT_DIFF_OPTIONAL,
    forbidden=_GIT_SHOWS_FORBIDDEN,
    operands="text",
    note="revisions and pathspecs, judged against the history scan",
)
_GIT_LISTING_FORBIDDEN = {
    **_forbid(
        MODIFIES,
        "-d -D --delete -m -M --move -c -C --copy -f --force -u --set-upstream-to "
        "--unset-upstream --edit-description -t --track --no-track --create-reflog "
        "--recurse-submodules -a --annotate -s --sign --local-user -e --edit --cleanup "
        "-F --file",
    ),
}

GIT_GLOBAL = program(
    "--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs "
    "--noglob-pathspecs --icase-pathspecs --no-replace-objects --version",
    forbidden={
        **_forbid(CONFIG, "-c --config-env --exec-path"),
        **_forbid(ELSEWHERE, "-C --git-dir --work-tree --namespace --bare"),
        **_forbid(PAGER, "-p --paginate --help"),
    },
)
#: options of ``git`` itself that take a value (so the subcommand is found after them)
GIT_GLOBAL_VALUES = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
)

GIT = program(
    subcommands={
        "status": program(
            "-s --short -b --branch --show-stash --long -v --verbose -z --null "
            "--ahead-behind --no-ahead-behind --renames --no-renames",
            optional="-u --untracked-files --ignored --ignore-submodules --porcelain "
            "--column --find-renames -M",
            operands="text",
        ),
        "diff": _GIT_DIFF,
        "log": _GIT_LOG,
        "show": _GIT_LOG,
        "branch": program(
            "-a --all -r --remotes -l --list -v -vv --verbose --show-current -i "
            "--ignore-case --no-color --no-column --omit-empty",
            "--sort --format --points-at",
            optional="--color --column --abbrev --contains --no-contains --merged --no-merged",
            forbidden=_GIT_LISTING_FORBIDDEN,
            operands="text",
            operands_with="-l --list",
            note="listing only: patterns with `--list`",
        ),
        "tag": program(
            "-l --list -i --ignore-case --no-column",
            "--sort --format",
            optional="-n --column --color --points-at --contains --no-contains --merged "
            "--no-merged",
            forbidden={**_GIT_LISTING_FORBIDDEN, "-v": SIGNATURE, "--verify": SIGNATURE},
            operands="text",
            operands_with="-l --list",
            note="listing only: patterns with `--list`",
        ),
        "rev-parse": program(
            "--show-toplevel --show-prefix --show-cdup --git-dir --git-common-dir "
            "--absolute-git-dir --is-inside-work-tree --is-inside-git-dir "
            "--is-bare-repository --is-shallow-repository --verify -q --quiet --symbolic "
            "--symbolic-full-name --all --show-superproject-working-tree",
            optional="--abbrev-ref --short --branches --tags --show-object-format",
            operands="text",
        ),
        "ls-files": program(
            "-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u "
            "--unmerged -k --killed -z --exclude-standard --directory --no-empty-directory "
            "--error-unmatch --full-name --eol --deduplicate -t -v -f",
            "-x --exclude --format",
            paths="-X --exclude-from",
            optional="--abbrev",
            operands="text",
        ),
        "blame": program(
            "-b --root --show-stats -f --show-name -n --show-number -s -e --show-email -l "
            "-t -p --porcelain --line-porcelain --incremental -w -c --score-debug --reverse "
            "--minimal --progress --color-lines --color-by-age",
            "-L --ignore-rev",
            optional="--date -M -C --abbrev",
            forbidden=_forbid(LIST_FILE, "-S --contents --ignore-revs-file"),
            operands="text",
        ),
        "shortlog": program(
            "-s --summary -n --numbered -e --email -c --committer --all --no-merges --merges",
            "--group",
            optional="--format --since --until --author",
            operands="text",
        ),
        "describe": program(
            "--all --tags --long --always --exact-match --first-parent --contains",
            "--candidates --match --exclude",
            optional="--abbrev",
            forbidden=_forbid(MODIFIES, "--dirty --broken"),
            operands="text",
        ),
        "grep": program(
            "-n --line-number -i --ignore-case -I -w --word-regexp -v --invert-match -l "
            "--files-with-matches -L --files-without-match --name-only -c --count -h -H "
            "--full-name -E --extended-regexp -G --basic-regexp -F --fixed-strings -P "
            "--perl-regexp -z --null -o --only-matching -q --quiet --break --heading -p "
            "--show-function -W --function-context --column --all-match --cached -a "
            "--text --no-textconv --and --or --not",
            "-e -A --after-context -B --before-context -C --context --max-depth -m "
            "--max-count --threads",
            optional="--color",
            forbidden={
                **_forbid(PAGER, "-O --open-files-in-pager"),
                **_forbid(RUNS, "--textconv"),
                **_forbid(LIST_FILE, "-f"),
                "--no-index": "searches files that are not in the repository",
                "--untracked": "searches files that are not in the repository",
            },
            operands="pattern, paths",
            numeric=True,
            note="tracked files and revisions, judged against the history scan",
        ),
        "stash": program(
            subcommands={
                "list": _GIT_LOG,
                "show": _GIT_DIFF,
            },
            note="`list` and `show` only",
        ),
        "remote": program(operands="none", note="names only (no `-v`: URLs may hold tokens)"),
        "version": program(operands="none"),
    },
    note="with the hardened configuration; not in a repository whose own configuration "
    "sets a program (`diff.external`, drivers, filters, `gpg.program`, `core.worktree`)",
)
TABLE["git"] = GIT

#: shell builtins in the table: ``sh`` runs them whatever ``PATH`` says
BUILTINS = frozenset({"cd", "pwd", "echo", "printf", "true", "false", "type"})


__all__ = [
    "BUILTINS",
    "GIT",
    "GIT_GLOBAL",
    "GIT_GLOBAL_VALUES",
    "TABLE",
    "OperandKind",
    "ReadOnlyProgram",
    "program",
]

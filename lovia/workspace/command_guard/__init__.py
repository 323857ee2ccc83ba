"""What a shell command touches: path claims, commands it runs, and what is uncertain.

Two layers:

* :func:`extract_path_claims` (:mod:`.lexical`) — the spec's lexical claim list
  (``shlex`` based, redirect targets are writes, path-looking words are reads). Its
  output is part of the public contract and kept exactly.
* :func:`analyze` / :func:`judge_command` — the hardened guard the session actually
  enforces. It parses the command like the shell would (:mod:`lovia.workspace._shell`),
  knows which common commands write (``tee``, ``cp``, ``mv``, ``dd of=``, ``sed -i``,
  ``<>``…), unwraps wrappers and payloads (``env``, ``xargs``, ``sudo``, ``sh -c``,
  ``eval``, ``find -exec``, ``$(...)``), follows ``cd``, expands globs against the file
  system, checks whether a glob *could* match a restricted pattern, scans the trees
  that recursive commands walk, and flags everything it cannot judge (expansions,
  brace expansion, ``#`` inside a word, unparsable input, arguments fed by
  ``xargs``...) so the result is at least ``ask``. It never loosens a decision.

Layout:

* :mod:`.argv` — the one argv scanner every handler uses (separate, glued, clustered,
  ``--opt=value``, ``--``), so an option is judged alike in every spelling;
* :mod:`.core` — claims, the analyzer that walks parsed commands, the generic scan;
* one module per program family: :mod:`.files`, :mod:`.archives`, :mod:`.net`,
  :mod:`.vcs`, :mod:`.build`, :mod:`.packages`, :mod:`.containers`, :mod:`.interpreters`,
  :mod:`.wrappers` (table-driven ones through :mod:`.programs`);
* :mod:`.dispatch` — the command name → handler table; :mod:`.judge` — the decision;
* :mod:`.readonly_table` / :mod:`.readonly` — the programs and options with which a
  command only reads (run without asking when the policy allows it), :mod:`.findexpr`
  what ``find`` prints, :mod:`.gitrepo` a repository's configuration and history.
"""

from __future__ import annotations

from lovia.workspace.command_guard.core import Analysis, Claim, ClaimOp, Invocation
from lovia.workspace.command_guard.dispatch import analyze, invocations
from lovia.workspace.command_guard.judge import GuardPolicy, decide_command, judge_command
from lovia.workspace.command_guard.lexical import extract_path_claims, is_pseudo_device


def known_programs() -> frozenset[str]:
    """Every command name the guard judges by name (its handlers and the read-only table)."""
    from lovia.workspace.command_guard.dispatch import HANDLERS
    from lovia.workspace.command_guard.readonly_table import TABLE

    return frozenset(HANDLERS) | frozenset(TABLE)


__all__ = [
    "Analysis",
    "Claim",
    "ClaimOp",
    "GuardPolicy",
    "Invocation",
    "analyze",
    "decide_command",
    "extract_path_claims",
    "invocations",
    "is_pseudo_device",
    "judge_command",
    "known_programs",
]

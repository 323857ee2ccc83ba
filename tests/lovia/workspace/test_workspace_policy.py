"""WorkspacePolicy: presets, decide_path pattern forms, decide_command and its hardening."""

from __future__ import annotations

from pathlib import Path

import pytest

from lovia.workspace import CommandRule, PathRule, WorkspacePolicy
from lovia.workspace.policy import _path_matches, merge_decisions, split_command_segments


def decide(policy: WorkspacePolicy, rel: str | None, abs_posix: str, op: str = "read") -> str:
    return policy.decide_path(rel=rel, abs_posix=abs_posix, op=op)  # type: ignore[arg-type]


class TestPresets:
    def test_preset_table(self) -> None:
        ro, co, tr = WorkspacePolicy.readonly(), WorkspacePolicy.coding(), WorkspacePolicy.trusted()
        assert (ro.write, ro.read_outside, ro.write_outside, ro.allow_shell, ro.shell_default) == (
            "deny",
            "deny",
            "deny",
            False,
            "deny",
        )
        assert (co.write, co.read_outside, co.write_outside, co.allow_shell, co.shell_default) == (
            "allow",
            "ask",
            "deny",
            True,
            "ask",
        )
        assert (tr.write, tr.read_outside, tr.write_outside, tr.allow_shell, tr.shell_default) == (
            "allow",
            "allow",
            "ask",
            True,
            "allow",
        )

    def test_bare_policy_is_stricter_than_coding(self) -> None:
        bare = WorkspacePolicy()
        assert bare.read_outside == "deny"
        assert decide(bare, None, "/etc/hosts") == "deny"
        assert decide(WorkspacePolicy.coding(), None, "/etc/hosts") == "ask"

    def test_no_shell_rewrites_default(self) -> None:
        p = WorkspacePolicy(allow_shell=False, shell_default="allow")
        assert p.shell_default == "deny"
        assert p.decide_command("ls") == "deny"

    def test_path_rule_ops_coerced(self) -> None:
        assert PathRule("x", "allow", ops=["read"]).ops == frozenset({"read"})  # type: ignore[arg-type]
        # a bare string is one op, not a set of characters
        assert PathRule("x", "allow", ops="read").ops == frozenset({"read"})  # type: ignore[arg-type]

    def test_rules_given_as_lists_become_tuples(self) -> None:
        p = WorkspacePolicy(denied_paths=[".env"], path_rules=[PathRule("a", "ask")])  # type: ignore[arg-type]
        assert p.denied_paths == (".env",) and isinstance(p.path_rules, tuple)
        hash(p)


class TestMerge:
    def test_severity(self) -> None:
        assert merge_decisions() == "allow"
        assert merge_decisions("allow", "ask") == "ask"
        assert merge_decisions("ask", "deny", "allow") == "deny"

    def test_unknown_values_fail_closed(self) -> None:
        assert merge_decisions("allow", "maybe") == "deny"  # type: ignore[arg-type]
        assert decide(WorkspacePolicy(path_rules=(PathRule("x", "bogus"),)), "x", "/r/x") == "deny"  # type: ignore[arg-type]


class TestPathMatches:
    @pytest.mark.parametrize(
        ("rel", "pattern"),
        [
            ("build", "build"),
            ("build/out.js", "build/*"),
            ("sub/.env", ".env*"),
            ("a/secrets/b", "secrets"),
            ("build/a/b/c.js", "build"),
            ("build/a/b.js", "build/"),
        ],
    )
    def test_true(self, rel: str, pattern: str) -> None:
        assert _path_matches(rel, pattern)

    @pytest.mark.parametrize(
        ("rel", "pattern"),
        [
            ("x", "/"),
            ("x", ""),
            ("secrets", "secrets/**"),
            ("x", "./x"),
            ("Build", "build"),
            ("buildx", "build"),
        ],
    )
    def test_false(self, rel: str, pattern: str) -> None:
        assert not _path_matches(rel, pattern)

    def test_absolute_rule_covers_subtree_not_siblings(self) -> None:
        p = WorkspacePolicy(path_rules=(PathRule("/srv/share", "allow"),))
        assert decide(p, None, "/srv/share/a/b.txt") == "allow"
        assert decide(p, None, "/srv/shared") == "deny"

    def test_deny_pattern_through_symlinked_prefix(self, tmp_path: Path) -> None:
        real = tmp_path / "real"
        (real / "keys").mkdir(parents=True)
        (tmp_path / "alias").symlink_to(real)
        p = WorkspacePolicy.trusted(denied_paths=(str(tmp_path / "alias" / "keys"),))
        assert decide(p, None, str((real / "keys" / "id").resolve())) == "deny"

    def test_bare_patterns_bite_outside_even_trusted(self) -> None:
        p = WorkspacePolicy.trusted(denied_paths=(".ssh",))
        assert decide(p, None, "/home/u/.ssh/id_rsa") == "deny"
        assert decide(p, "a/.ssh/x", "/r/a/.ssh/x") == "deny"

    def test_slash_patterns_never_match_outside(self) -> None:
        p = WorkspacePolicy.trusted(denied_paths=("conf/secret.yml",))
        assert decide(p, None, "/x/conf/secret.yml") == "allow"
        assert decide(p, "conf/secret.yml", "/r/conf/secret.yml") == "deny"

    def test_tilde_pattern(self) -> None:
        home = str(Path("~").expanduser())
        p = WorkspacePolicy.trusted(denied_paths=("~/.aws",))
        assert decide(p, None, f"{home}/.aws/credentials") == "deny"

    def test_denied_first_then_first_rule_then_defaults(self) -> None:
        p = WorkspacePolicy.coding(
            denied_paths=("*.key",),
            path_rules=(
                PathRule("docs", "deny", ops={"write"}),
                PathRule("docs", "allow"),
                PathRule("/opt/data", "allow", ops={"read"}),
            ),
        )
        assert decide(p, "docs/a.key", "/r/docs/a.key") == "deny"
        assert decide(p, "docs/a.md", "/r/docs/a.md", "write") == "deny"
        assert decide(p, "docs/a.md", "/r/docs/a.md", "read") == "allow"
        assert decide(p, None, "/opt/data/x", "read") == "allow"
        assert decide(p, None, "/opt/data/x", "write") == "deny"
        assert decide(p, "src/x.py", "/r/src/x.py", "write") == "allow"


class TestDecideCommand:
    def test_splitting(self) -> None:
        assert split_command_segments("a 2>&1 | b && c; d\ne & f") == [
            "a 2>&1",
            "b",
            "c",
            "d",
            "e",
            "f",
        ]
        assert split_command_segments("a &> x") == ["a &> x"]
        assert split_command_segments("echo hi >&2") == ["echo hi >&2"]

    def test_redirect_fd_forms_do_not_split(self) -> None:
        p = WorkspacePolicy.coding(command_rules=(CommandRule("git status", "allow"),))
        assert p.decide_command("git status 2>&1") == "allow"
        assert p.decide_command("git status >&2") == "allow"
        assert p.decide_command("git status &> /dev/null") == "allow"
        assert p.decide_command("git status & rm -rf x") == "ask"
        assert p.decide_command("git status\nrm -rf x") == "ask"

    def test_blank_is_shell_default(self) -> None:
        assert WorkspacePolicy.coding().decide_command("   ") == "ask"
        assert WorkspacePolicy.trusted().decide_command("") == "allow"

    def test_first_rule_wins_and_prefix_is_by_words(self) -> None:
        p = WorkspacePolicy.trusted(
            command_rules=(
                CommandRule("rm", "deny"),
                CommandRule("rm -i", "allow"),
                CommandRule("git push", "ask"),
            )
        )
        assert p.decide_command("rm -i x") == "deny"
        assert p.decide_command("git push origin main") == "ask"
        assert p.decide_command("git pushx") == "allow"

    def test_empty_pattern_matches_everything(self) -> None:
        p = WorkspacePolicy.trusted(command_rules=(CommandRule("", "ask"),))
        assert p.decide_command("ls") == "ask"

    def test_decider_first_and_invalid_falls_through(self) -> None:
        p = WorkspacePolicy.trusted(
            command_rules=(CommandRule("make", "deny"),),
            command_decider=lambda seg: "allow" if seg.startswith("make test") else "nonsense",  # type: ignore[arg-type,return-value]
        )
        assert p.decide_command("make test") == "allow"
        assert p.decide_command("make deploy") == "deny"

    def test_most_restrictive_segment(self) -> None:
        p = WorkspacePolicy.trusted(
            command_rules=(CommandRule("curl", "ask"), CommandRule("rm", "deny"))
        )
        assert p.decide_command("ls && curl x") == "ask"
        assert p.decide_command("curl x; rm y") == "deny"


class TestDenyRulesCannotBeDodged:
    """Hardening: the rules also see every command the shell would actually run."""

    policy = WorkspacePolicy.trusted(command_rules=(CommandRule("rm", "deny"),))

    @pytest.mark.parametrize(
        "command",
        [
            "rm -rf build",
            "\\rm -rf build",
            '"rm" -rf build',
            "'rm' build",
            "r\\m build",
            '"r"m build',
            "/bin/rm -rf build",
            "/usr/bin/rm build",
            "./rm build",
            "env rm build",
            "env -i FOO=1 rm build",
            "sudo -u root rm build",
            "nohup rm build &",
            "nice -n 5 rm build",
            "timeout 5 rm build",
            "command rm build",
            "exec rm build",
            "find . -name '*.pyc' | xargs rm",
            "find . -name x -print0 | xargs -0 -n 1 rm -f",
            "find . -name '*.o' -exec rm {} \\;",
            "echo $(rm -rf build)",
            "echo `rm -rf build`",
            "x=$(rm build)",
            "cat <(rm build)",
            "sh -c 'rm -rf build'",
            'bash -lc "cd x && rm -rf build"',
            "eval 'rm build'",
            "eval rm build",
            "if true; then rm build; fi",
            "{ rm build; }",
            "(rm build)",
            "true && rm build",
            "$'\\x72m' build",
            "uv run rm build",
            "poetry run rm build",
            "watch -n 1 rm build",
            "env -S 'rm build'",
            "busybox rm build",
            "cat <<EOF | sh\nrm -rf build\nEOF",
            "sh <<'EOF'\nrm -rf build\nEOF",
        ],
    )
    def test_dodge_is_denied(self, command: str) -> None:
        assert self.policy.decide_command(command) == "deny", command

    @pytest.mark.parametrize(
        "command", ["$CMD build", "${RM} build", "`echo rm` build", "r?m build", "echo 'unclosed"]
    )
    def test_unknown_command_word_is_at_least_ask(self, command: str) -> None:
        assert self.policy.decide_command(command) in ("ask", "deny")

    def test_harmless_commands_stay_allowed(self) -> None:
        for command in ("ls -la", "git status", "echo rm", "grep -r rm src", "cat rm.txt"):
            assert self.policy.decide_command(command) == "allow", command

    def test_allow_rule_is_not_widened_by_normalisation(self) -> None:
        p = WorkspacePolicy.coding(command_rules=(CommandRule("git", "allow"),))
        assert p.decide_command("git status") == "allow"
        assert p.decide_command("git log $(rm x)") == "ask"
        assert p.decide_command("/usr/bin/git status") == "ask"


class TestPatternMatcherEquivalence:
    """The precompiled matcher behaves exactly like the spec's per-segment fnmatch."""

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @staticmethod
    def naive(rel: str, pattern: str) -> bool:
        from fnmatch import fnmatchcase

        pat = pattern.rstrip("/")
        if not pat:
            return False
        if "/" in pat:
            return fnmatchcase(rel, pat) or fnmatchcase(rel, pat + "/*")
        return any(fnmatchcase(seg, pat) for seg in rel.split("/"))

    @settings(max_examples=1500, deadline=None)
    @given(
        rel=st.lists(
            st.text(alphabet="ab.-^!]x", min_size=1, max_size=4), min_size=1, max_size=4
        ).map("/".join),
        pattern=st.text(alphabet="ab.*?[]!^x/-\\", min_size=0, max_size=7),
    )
    def test_same_as_naive(self, rel: str, pattern: str) -> None:
        assert _path_matches(rel, pattern) == self.naive(rel, pattern)

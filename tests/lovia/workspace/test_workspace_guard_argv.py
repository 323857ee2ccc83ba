"""The shared argv scanner: every spelling of an option value, and where options end."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lovia.workspace._shell import Word, parse
from lovia.workspace.command_guard.argv import scan_argv

VALUES = dict.fromkeys(("-C", "-f", "--directory", "--file", "-include"))


def words(command: str) -> list[Word]:
    return parse(command).commands[0].words


def scan(
    command: str, *, stop_at_operand: bool = False, clusters: bool = True
) -> tuple[list[tuple[str, str, str]], list[str]]:
    sc = scan_argv(words(command), VALUES, stop_at_operand=stop_at_operand, clusters=clusters)
    return [(v.opt, v.value.text, v.form) for v in sc.values], [w.text for w in sc.operands]


@pytest.mark.parametrize(
    ("command", "values", "operands"),
    [
        ("-C /x a", [("-C", "/x", "separate")], ["a"]),
        ("-C/x a", [("-C", "/x", "glued")], ["a"]),
        ("-sC /x a", [("-C", "/x", "separate")], ["a"]),
        ("-sC/x a", [("-C", "/x", "glued")], ["a"]),
        ("-C=/x", [("-C", "=/x", "glued")], []),
        ("--directory /x a", [("--directory", "/x", "separate")], ["a"]),
        ("--directory=/x a", [("--directory", "/x", "equals")], ["a"]),
        ("--dir=/x", [("--directory", "/x", "equals")], []),
        ("--di /x", [("--directory", "/x", "separate")], []),  # ambiguous with nothing
        ("'-C' '/x y'", [("-C", "/x y", "separate")], []),
        ("-include /x a", [("-include", "/x", "separate")], ["a"]),
        ("-include/x", [("-include", "/x", "glued")], []),
        ("-- -C /x", [], ["-C", "/x"]),
        ("- -C /x", [("-C", "/x", "separate")], ["-"]),
        ("-xvf a.tar b", [("-f", "a.tar", "separate")], ["b"]),
        ("-xvfa.tar b", [("-f", "a.tar", "glued")], ["b"]),
        ("a -C /x", [("-C", "/x", "separate")], ["a"]),  # options after operands (GNU)
        ("-C", [], []),  # a value option at the end has no value
    ],
)
def test_spellings(command: str, values: list[tuple[str, str, str]], operands: list[str]) -> None:
    assert scan(command) == (values, operands)


def test_stop_at_operand_keeps_the_rest_verbatim() -> None:
    assert scan("-C /x cmd -f y", stop_at_operand=True) == (
        [("-C", "/x", "separate")],
        ["cmd", "-f", "y"],
    )


def test_without_clusters_only_the_first_letter_counts() -> None:
    # a compiler's -lfoo is not -l -f -o
    assert scan("-lfoo a", clusters=False) == ([], ["a"])
    assert scan("-lfoo a") == ([("-f", "oo", "glued")], ["a"])


def test_optional_values_never_take_the_next_word() -> None:
    sc = scan_argv(words("-i.bak -f s f"), VALUES, optional=("-i",))
    assert sc.has("-i")
    assert [(v.opt, v.value.text) for v in sc.values] == [("-f", "s")]
    assert [w.text for w in sc.operands] == ["f"]


def test_plus_options() -> None:
    sc = scan_argv(words("+o posix -c x"), {"+o": None}, plus_options=True)
    assert [(v.opt, v.value.text) for v in sc.values] == [("+o", "posix")]
    assert sc.has("-c")


def test_a_glued_value_keeps_its_glob() -> None:
    sc = scan_argv(words("-f.e* --file=sec*"), VALUES)
    assert [(v.value.text, v.value.glob, v.value.pattern) for v in sc.values] == [
        (".e*", True, ".e*"),
        ("sec*", True, "sec*"),
    ]


@st.composite
def argv(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """Options with values in a random spelling, flags and operands, in a random order."""
    words: list[str] = []
    pairs: list[tuple[str, str]] = []
    operands: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["short", "long", "flag", "operand"]))
        value = draw(st.sampled_from(["a", "/x", "b.c", "~/h", "../u"]))
        if kind == "short":
            opt = draw(st.sampled_from(["-C", "-f"]))
            spelling = draw(st.sampled_from(["separate", "glued", "cluster", "cluster-glued"]))
            words += {
                "separate": [opt, value],
                "glued": [opt + value],
                "cluster": ["-s" + opt[1], value],
                "cluster-glued": ["-s" + opt[1] + value],
            }[spelling]
            pairs.append((opt, value))
        elif kind == "long":
            opt = draw(st.sampled_from(["--directory", "--file"]))
            words += draw(st.sampled_from([[opt, value], [f"{opt}={value}"]]))
            pairs.append((opt, value))
        elif kind == "flag":
            words.append(draw(st.sampled_from(["-s", "-v", "--verbose"])))
        else:
            words.append(value)
            operands.append(value)
    return words, pairs, operands


@given(argv())
def test_every_spelling_recovers_the_same_options_and_operands(
    case: tuple[list[str], list[tuple[str, str]], list[str]],
) -> None:
    args, pairs, operands = case
    sc = scan_argv([Word(text=a, pattern=a) for a in args], VALUES)
    assert [(v.opt, v.value.text) for v in sc.values] == pairs
    assert [w.text for w in sc.operands] == operands

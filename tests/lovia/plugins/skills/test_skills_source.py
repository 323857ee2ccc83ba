"""SKILL.md frontmatter parsing and DirectorySkillSource (live re-scans, warnings, lookups)."""

import logging
import os
import threading
from pathlib import Path

import pytest

from lovia import SkillNotFoundError, SkillsError, UserError
from lovia.plugins.skills import DirectorySkillSource, Skill, SkillMetadata, SkillSource
from lovia.plugins.skills.source import _parse_frontmatter

LOGGER = "lovia.plugins.skills"


def write_skill(root: Path, dirname: str, frontmatter: str | None, body: str = "# Body") -> Path:
    directory = root / dirname
    directory.mkdir(parents=True, exist_ok=True)
    text = body if frontmatter is None else f"---\n{frontmatter}\n---\n{body}"
    (directory / "SKILL.md").write_text(text)
    return directory


def simple(root: Path, name: str, description: str = "A skill.", body: str = "# Body") -> Path:
    return write_skill(root, name, f"name: {name}\ndescription: {description}", body)


def tagged(caplog, tag: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.getMessage().startswith(tag)]


# ------------------------------------------------------------------ _parse_frontmatter


def test_frontmatter_and_body_are_split():
    meta, body = _parse_frontmatter("---\nname: s\ndescription: A test.\n---\n# Body\ntext")
    assert meta == {"name": "s", "description": "A test."}
    assert body == "# Body\ntext"


def test_yaml_values_are_parsed():
    text = "---\n# comment\nname: \"q\"\ndescription: 'x'\ntags: [a, b]\nversion: 1.2\n---\nB"
    assert _parse_frontmatter(text)[0] == {
        "name": "q",
        "description": "x",
        "tags": ["a", "b"],
        "version": 1.2,
    }


@pytest.mark.parametrize(
    "text",
    [
        "# Just markdown",
        "----\nname: s\n---\nbody",
        "---junk\nname: s\n---\nbody",
        "  ---\nname: s\n---\nbody",
        "---",
        "",
    ],
)
def test_no_opening_delimiter_means_no_frontmatter(text):
    assert _parse_frontmatter(text) == ({}, text)


@pytest.mark.parametrize(
    "text",
    [
        "---\nname: s\n# no closing line",
        "---\nname: a\ndescription: bar --- baz",
        "---\nname: s\ndescription: d\n  ---\nbody",
        "---\nname: s\n----\nbody",
        "---\nname: s\n---junk\nbody",
    ],
)
def test_no_closing_delimiter_returns_the_original_text(text):
    assert _parse_frontmatter(text) == ({}, text)


def test_bom_and_leading_blank_lines_are_skipped():
    text = "\ufeff\n  \n\t\r\n---\nname: s\ndescription: d\n---\nbody"
    assert _parse_frontmatter(text) == ({"name": "s", "description": "d"}, "body")
    # Without frontmatter the original text (BOM and all) comes back.
    assert _parse_frontmatter("\ufeff\n# title") == ({}, "\ufeff\n# title")


def test_delimiters_may_carry_trailing_blanks_and_crlf():
    text = "--- \t\r\nname: win\r\ndescription: windows\r\n---  \r\n\r\nbody\r\nmore"
    meta, body = _parse_frontmatter(text)
    assert meta == {"name": "win", "description": "windows"}
    assert body == "body\r\nmore"


def test_closing_delimiter_at_eof_gives_an_empty_body():
    assert _parse_frontmatter("---\nname: eof\n---") == ({"name": "eof"}, "")
    assert _parse_frontmatter("---\nname: eof\n--- \n") == ({"name": "eof"}, "")


def test_dashes_inside_an_indented_block_scalar_do_not_close():
    text = "---\nname: bs\ndescription: |\n  ---\n  inner\n  ---\n---\nbody"
    meta, body = _parse_frontmatter(text)
    assert meta == {"name": "bs", "description": "---\ninner\n---\n"}
    assert body == "body"


def test_body_keeps_later_rules_and_leading_indentation():
    meta, body = _parse_frontmatter("---\nname: s\n---\n\n\n  indented\n\n---\n\nMore.")
    assert meta == {"name": "s"}
    assert body == "  indented\n\n---\n\nMore."


@pytest.mark.parametrize(
    "block", ["", "  \n", "name: [unclosed", "- a\n- b", "just text", "date: 2024-02-30"]
)
def test_empty_broken_or_non_mapping_frontmatter_gives_no_metadata(block):
    text = f"---\n{block}\n---\nbody" if block else "---\n---\nbody"
    assert _parse_frontmatter(text) == ({}, "body")


# ------------------------------------------------------------------ DirectorySkillSource


async def test_lists_skills_in_directory_order_with_metadata(tmp_path):
    simple(tmp_path, "zeta", "Last.")
    simple(tmp_path, "alpha", "First.")
    write_skill(tmp_path, "mid", "name: mid\ndescription: '  Padded.\n'\ntags: [sql, db]\nlevel: 2")
    skills = await DirectorySkillSource(tmp_path).list_skills()
    assert skills == [
        SkillMetadata("alpha", "First."),
        SkillMetadata("mid", "Padded.", {"tags": ["sql", "db"], "level": 2}),
        SkillMetadata("zeta", "Last."),
    ]


async def test_extra_values_are_json_safe(tmp_path):
    write_skill(tmp_path, "s", "description: d\ncreated: 2024-05-01\nmeta: {1: [2024-01-02]}")
    (meta,) = await DirectorySkillSource(tmp_path).list_skills()
    assert meta.extra == {"created": "2024-05-01", "meta": {"1": ["2024-01-02"]}}


async def test_name_falls_back_to_the_directory_name(tmp_path):
    write_skill(tmp_path, "my-skill", "description: No name field.")
    (meta,) = await DirectorySkillSource(tmp_path).list_skills()
    assert (meta.name, meta.description) == ("my-skill", "No name field.")


async def test_non_skill_entries_are_skipped(tmp_path):
    (tmp_path / "README.md").write_text("hello")
    (tmp_path / "empty-dir").mkdir()
    (tmp_path / "dir-skill" / "SKILL.md").mkdir(parents=True)  # SKILL.md is a directory
    simple(tmp_path, "real")
    assert [m.name for m in await DirectorySkillSource(tmp_path).list_skills()] == ["real"]


async def test_roots_are_absolute_and_expanded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    simple(tmp_path / "skills", "rel")
    simple(tmp_path / "home" / "my-skills", "homed")
    source = DirectorySkillSource("./skills", "~/my-skills")
    assert source.roots == (tmp_path / "skills", tmp_path / "home" / "my-skills")
    skill = await source.load_skill("rel")
    assert skill.path == tmp_path / "skills" / "rel" and skill.path.is_absolute()
    assert (await source.load_skill("homed")).path == tmp_path / "home" / "my-skills" / "homed"


def test_a_source_needs_a_root():
    with pytest.raises(UserError, match="at least one root"):
        DirectorySkillSource()


async def test_load_returns_body_without_frontmatter(tmp_path):
    write_skill(
        tmp_path, "s", "name: s\ndescription: d\nlevel: advanced", "# Skill\r\nBe polite.\n"
    )
    skill = await DirectorySkillSource(tmp_path).load_skill("s")
    assert skill == Skill(
        "s", "d", "# Skill\r\nBe polite.\n", tmp_path / "s", {"level": "advanced"}
    )


async def test_first_root_wins_on_duplicates_and_warns(tmp_path, caplog):
    one, two = tmp_path / "one", tmp_path / "two"
    write_skill(one, "b-dir", "name: dup\ndescription: From one.")
    write_skill(one, "c-dir", "name: dup\ndescription: Also one, later.")
    write_skill(two, "a-dir", "name: dup\ndescription: From two.")
    source = DirectorySkillSource(one, two)
    with caplog.at_level(logging.WARNING, LOGGER):
        assert await source.list_skills() == [SkillMetadata("dup", "From one.")]
    assert (await source.load_skill("dup")).body == "# Body"
    assert (await source.load_skill("dup")).path == one / "b-dir"
    assert len(tagged(caplog, "skill.duplicate")) == 2


async def test_one_bad_skill_never_hides_the_others(tmp_path, caplog):
    simple(tmp_path, "good")
    write_skill(tmp_path, "bad.name", "name: bad.name\ndescription: Invalid name.")
    write_skill(tmp_path, "nodesc", "name: nodesc")
    write_skill(tmp_path, "nofm", None, "# no frontmatter at all")
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / "SKILL.md").write_bytes(b"---\nname: \xff\n---\n")
    with caplog.at_level(logging.WARNING, LOGGER):
        skills = await DirectorySkillSource(tmp_path).list_skills()
    assert [m.name for m in skills] == ["good"]
    invalid = tagged(caplog, "skill.invalid")
    assert len(invalid) == 3
    assert any("bad.name" in r.getMessage() and "is invalid" in r.getMessage() for r in invalid)
    assert any("empty description" in r.getMessage() for r in invalid)
    assert len(tagged(caplog, "skill.unreadable")) == 1
    assert all(r.levelno == logging.WARNING for r in caplog.records if r.name == LOGGER)


async def test_missing_and_unreadable_roots_warn_and_are_skipped(tmp_path, caplog, monkeypatch):
    ok, locked = tmp_path / "ok", tmp_path / "locked"
    simple(ok, "s")
    locked.mkdir()
    real_iterdir = Path.iterdir

    def iterdir(self):
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_iterdir(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    source = DirectorySkillSource(tmp_path / "missing", locked, ok)
    with caplog.at_level(logging.WARNING, LOGGER):
        assert [m.name for m in await source.list_skills()] == ["s"]
    assert len(tagged(caplog, "skill.root_missing")) == 1
    assert len(tagged(caplog, "skill.root_unreadable")) == 1
    assert {r.tag for r in caplog.records if r.name == LOGGER} == {
        "skill.root_missing",
        "skill.root_unreadable",
    }


async def test_a_root_that_cannot_even_be_checked_is_unreadable(tmp_path, caplog, monkeypatch):
    simple(tmp_path / "ok", "s")
    blocked = tmp_path / "blocked" / "skills"
    real_is_dir = Path.is_dir

    def is_dir(self):
        if self == blocked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_dir(self)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    with caplog.at_level(logging.WARNING, LOGGER):
        skills = await DirectorySkillSource(blocked, tmp_path / "ok").list_skills()
    assert [m.name for m in skills] == ["s"]
    assert len(tagged(caplog, "skill.root_unreadable")) == 1


async def test_each_problem_is_logged_once_across_scans(tmp_path, caplog):
    write_skill(tmp_path / "a", "x", "name: dup\ndescription: d")
    write_skill(tmp_path / "a", "y", "name: dup\ndescription: d")
    write_skill(tmp_path / "a", "bad", "name: b/ad\ndescription: d")
    source = DirectorySkillSource(tmp_path / "nowhere", tmp_path / "a")
    with caplog.at_level(logging.WARNING, LOGGER):
        for _ in range(3):
            await source.list_skills()
        await DirectorySkillSource(tmp_path / "a").list_skills()  # same keys, new instance
    for tag in ("skill.root_missing", "skill.duplicate", "skill.invalid"):
        assert len(tagged(caplog, tag)) == 1, tag
    # A new problem (another key) is still reported.
    write_skill(tmp_path / "a", "z", "name: dup\ndescription: d")
    with caplog.at_level(logging.WARNING, LOGGER):
        await source.list_skills()
    assert len(tagged(caplog, "skill.duplicate")) == 2


async def test_list_is_live_additions_edits_and_removals(tmp_path):
    source = DirectorySkillSource(tmp_path)
    assert await source.list_skills() == []
    simple(tmp_path, "a", "First.")
    assert [m.name for m in await source.list_skills()] == ["a"]
    simple(tmp_path, "b", "Second.")
    simple(tmp_path, "a", "Edited.")
    assert await source.list_skills() == [
        SkillMetadata("a", "Edited."),
        SkillMetadata("b", "Second."),
    ]
    (tmp_path / "a" / "SKILL.md").unlink()
    assert [m.name for m in await source.list_skills()] == ["b"]


async def test_body_is_reread_on_every_load(tmp_path):
    simple(tmp_path, "s", body="# Version 1")
    source = DirectorySkillSource(tmp_path)
    assert (await source.load_skill("s")).body == "# Version 1"
    simple(tmp_path, "s", "New description.", body="# Version 2")
    skill = await source.load_skill("s")
    assert (skill.body, skill.description) == ("# Version 2", "New description.")


async def test_load_rescans_once_for_a_name_it_has_not_seen(tmp_path):
    source = DirectorySkillSource(tmp_path)
    await source.list_skills()
    simple(tmp_path, "late", body="# Late")
    assert (await source.load_skill("late")).body == "# Late"


async def test_unknown_names_raise_not_found_with_sorted_available(tmp_path):
    simple(tmp_path, "zed")
    simple(tmp_path, "abe")
    source = DirectorySkillSource(tmp_path)
    with pytest.raises(SkillNotFoundError) as info:
        await source.load_skill("nope")
    assert info.value.available == ["abe", "zed"]
    assert str(info.value) == "Unknown skill: 'nope'.  Available: abe, zed"


async def test_removed_or_renamed_skills_are_no_longer_loadable(tmp_path):
    simple(tmp_path, "gone")
    simple(tmp_path, "old")
    source = DirectorySkillSource(tmp_path)
    await source.list_skills()
    (tmp_path / "gone" / "SKILL.md").unlink()
    with pytest.raises(SkillNotFoundError, match="'gone'"):
        await source.load_skill("gone")
    write_skill(tmp_path, "old", "name: new\ndescription: Renamed.")
    with pytest.raises(SkillNotFoundError) as info:
        await source.load_skill("old")
    assert info.value.available == ["new"]
    assert (await source.load_skill("new")).description == "Renamed."


async def test_a_skill_broken_after_listing_reports_why(tmp_path):
    simple(tmp_path, "s")
    source = DirectorySkillSource(tmp_path)
    await source.list_skills()
    write_skill(tmp_path, "s", "name: s\ndescription: ''")
    with pytest.raises(SkillsError, match="has an empty description"):
        await source.load_skill("s")


async def test_scans_run_off_the_event_loop_thread(tmp_path, monkeypatch):
    simple(tmp_path, "s")
    threads = []
    real_scan = DirectorySkillSource._scan

    def scan(self):
        threads.append(threading.current_thread())
        return real_scan(self)

    monkeypatch.setattr(DirectorySkillSource, "_scan", scan)
    await DirectorySkillSource(tmp_path).list_skills()
    assert threads and threads[0] is not threading.main_thread()


async def test_symlinked_skill_directories_are_listed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    simple(elsewhere, "linked", body="# Linked")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(elsewhere / "linked", root / "linked")
    source = DirectorySkillSource(root)
    assert [m.name for m in await source.list_skills()] == ["linked"]
    assert (await source.load_skill("linked")).body == "# Linked"


def test_protocol_conformance(tmp_path):
    assert isinstance(DirectorySkillSource(tmp_path), SkillSource)

    class Custom:
        async def list_skills(self):
            return []

        async def load_skill(self, name):
            raise SkillNotFoundError(name)

    class ListOnly:
        async def list_skills(self):
            return []

    assert isinstance(Custom(), SkillSource)
    assert not isinstance(ListOnly(), SkillSource)

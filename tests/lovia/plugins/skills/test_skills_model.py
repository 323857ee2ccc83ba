"""Skill errors, name/description validation, SkillMetadata and Skill.read_file safety."""

import os
import pickle
from pathlib import Path

import pytest

from lovia import LoviaError, SkillNotFoundError, SkillsError
from lovia.plugins.skills import Skill, SkillMetadata
from lovia.plugins.skills.model import _validate_description, _validate_name

# ------------------------------------------------------------------ errors


def test_skills_error_str_is_message_plus_hint_after_two_spaces():
    assert str(SkillsError("Broken.")) == "Broken."
    err = SkillsError("Broken.", skill_name="s", path="/x", hint="Fix it.")
    assert str(err) == "Broken.  Fix it."
    assert (err.skill_name, err.path, err.hint) == ("s", "/x", "Fix it.")
    assert isinstance(err, LoviaError)
    plain = SkillsError("m")
    assert plain.skill_name is None and plain.path is None and plain.hint is None


def test_skill_not_found_error_lists_available_names():
    err = SkillNotFoundError("nope", available=("a", "b"))
    assert str(err) == "Unknown skill: 'nope'.  Available: a, b"
    assert err.skill_name == "nope"
    assert err.available == ["a", "b"]
    assert isinstance(err, SkillsError)
    assert str(SkillNotFoundError("x")) == "Unknown skill: 'x'.  Available: (none)"
    assert SkillNotFoundError("x").available == []


def test_skill_not_found_error_survives_pickling():
    err = pickle.loads(pickle.dumps(SkillNotFoundError("n", available=["a"])))
    assert type(err) is SkillNotFoundError
    assert str(err) == "Unknown skill: 'n'.  Available: a"
    assert err.available == ["a"] and err.skill_name == "n"
    other = pickle.loads(pickle.dumps(SkillsError("m", skill_name="s", hint="h")))
    assert str(other) == "m  h" and other.skill_name == "s"


# ------------------------------------------------------------------ name validation


@pytest.mark.parametrize(
    "name", ["a", "deploy", "refund-policy", "refund_policy", "RefundPolicy", "a1-b2_c3", "x" * 64]
)
def test_valid_names_are_returned_unchanged(name):
    assert _validate_name(name) == name


@pytest.mark.parametrize("name", [None, ""])
def test_empty_name_is_rejected(name):
    with pytest.raises(SkillsError, match="must not be empty"):
        _validate_name(name)


@pytest.mark.parametrize("name", [0, False, 123, 1.5, ["a"]])
def test_non_string_name_is_rejected_as_such(name):
    with pytest.raises(SkillsError, match="must be a string"):
        _validate_name(name)


def test_name_longer_than_64_chars_is_rejected():
    with pytest.raises(SkillsError, match="too long"):
        _validate_name("a" * 65)


@pytest.mark.parametrize("name", ["a/b", "a\\b", "..", "a..b", "../etc"])
def test_name_with_path_parts_is_rejected(name):
    with pytest.raises(SkillsError, match=r"must not contain path separators or '\.\.'"):
        _validate_name(name)


@pytest.mark.parametrize(
    "name", ["refund--policy", "-refund", "refund-", "_a", "a_", "a.b", "a b", "abc\n", "é", "a-_b"]
)
def test_name_outside_the_pattern_is_invalid(name):
    with pytest.raises(SkillsError, match="is invalid: "):
        _validate_name(name)


# ------------------------------------------------------------------ description validation


def test_description_is_returned_stripped():
    assert _validate_description("s", "  A test skill.\n") == "A test skill."


@pytest.mark.parametrize("description", [None, "", "   ", "\n\t "])
def test_empty_description_is_rejected(description):
    with pytest.raises(SkillsError, match="has an empty description") as info:
        _validate_description("s", description)
    assert info.value.skill_name == "s"


@pytest.mark.parametrize("description", [2024, 0, False, ["a"]])
def test_non_string_description_is_rejected_as_such(description):
    with pytest.raises(SkillsError, match="must be a string"):
        _validate_description("s", description)


def test_description_length_is_checked_before_stripping():
    assert _validate_description("s", "x" * 1024) == "x" * 1024
    with pytest.raises(SkillsError, match="too long"):
        _validate_description("s", "x" * 1025)
    with pytest.raises(SkillsError, match="too long"):
        _validate_description("s", "  " + "x" * 1023)


# ------------------------------------------------------------------ SkillMetadata / Skill


def test_metadata_is_frozen_and_hashable_with_default_extra():
    meta = SkillMetadata("s", "d")
    assert meta.extra == {}
    with pytest.raises(AttributeError):
        meta.name = "other"  # type: ignore[misc]
    assert hash(meta) == hash(SkillMetadata("s", "d", {"tags": ["x"]}))
    assert SkillMetadata("s", "d", {"a": 1}) != meta


def test_skill_metadata_property_carries_extra():
    skill = Skill("s", "Does stuff.", "body", extra={"level": "advanced"})
    assert skill.metadata == SkillMetadata("s", "Does stuff.", {"level": "advanced"})


@pytest.fixture
def skill_dir(tmp_path):
    root = tmp_path / "s"
    (root / "references").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\nbody")
    return root


def test_read_file_returns_the_exact_text(skill_dir):
    data = "line one\r\nline two\n\tünïcode ✓\n"
    (skill_dir / "references" / "info.md").write_bytes(data.encode())
    skill = Skill("s", "d", "body", path=skill_dir)
    assert skill.read_file("references/info.md") == data
    assert skill.read_file("./references/../references/info.md") == data
    assert skill.read_file("SKILL.md").startswith("---\nname: s")


def test_read_file_without_path_fails():
    with pytest.raises(SkillsError, match="has no on-disk path"):
        Skill("s", "d", "body").read_file("references/x.md")


@pytest.mark.parametrize("relpath", ["../outside.txt", "references/../../outside.txt", "../s2/x"])
def test_read_file_refuses_dot_dot_escapes(skill_dir, relpath):
    (skill_dir.parent / "outside.txt").write_text("secret")
    (skill_dir.parent / "s2").mkdir()
    (skill_dir.parent / "s2" / "x").write_text("secret")
    skill = Skill("s", "d", "body", path=skill_dir)
    with pytest.raises(SkillsError) as info:
        skill.read_file(relpath)
    assert str(info.value) == f"Path {relpath!r} escapes skill directory."


def test_read_file_refuses_absolute_paths(skill_dir):
    outside = skill_dir.parent / "outside.txt"
    outside.write_text("secret")
    skill = Skill("s", "d", "body", path=skill_dir)
    with pytest.raises(SkillsError, match="escapes skill directory"):
        skill.read_file(str(outside))
    with pytest.raises(SkillsError, match="escapes skill directory"):
        skill.read_file("/etc/passwd")


def test_read_file_refuses_symlinks_that_leave_the_directory(skill_dir):
    outside = skill_dir.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside / "secret.txt", skill_dir / "references" / "link.md")
    os.symlink(outside, skill_dir / "assets")
    skill = Skill("s", "d", "body", path=skill_dir)
    with pytest.raises(SkillsError, match="escapes skill directory"):
        skill.read_file("references/link.md")
    with pytest.raises(SkillsError, match="escapes skill directory"):
        skill.read_file("assets/secret.txt")


def test_read_file_follows_symlinks_that_stay_inside(skill_dir):
    (skill_dir / "references" / "real.md").write_text("inside")
    os.symlink(skill_dir / "references" / "real.md", skill_dir / "alias.md")
    assert Skill("s", "d", "body", path=skill_dir).read_file("alias.md") == "inside"


def test_read_file_through_a_symlinked_skill_directory(tmp_path, skill_dir):
    (skill_dir / "references" / "a.md").write_text("A")
    link = tmp_path / "linked"
    os.symlink(skill_dir, link)
    assert Skill("s", "d", "body", path=link).read_file("references/a.md") == "A"


@pytest.mark.parametrize(
    "relpath",
    ["missing.md", "references", "", "bad\x00name", "n" * 300, "references/x/" + "n" * 300],
)
def test_read_file_missing_or_not_a_file(skill_dir, relpath):
    skill = Skill("s", "d", "body", path=skill_dir)
    with pytest.raises(SkillsError) as info:
        skill.read_file(relpath)
    assert str(info.value) == f"Skill file not found: {relpath!r}"


def test_not_found_message_stays_on_one_line(skill_dir):
    with pytest.raises(SkillsError) as info:
        Skill("s", "d", "body", path=skill_dir).read_file("a\nb.md")
    assert "\n" not in str(info.value)


def test_read_file_binary_is_not_utf8(skill_dir):
    (skill_dir / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(SkillsError, match="is not UTF-8 text"):
        Skill("s", "d", "body", path=skill_dir).read_file("blob.bin")


def test_read_file_other_os_errors(skill_dir, monkeypatch):
    (skill_dir / "locked.md").write_text("x")

    def deny(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", deny)
    with pytest.raises(SkillsError, match="Failed to read skill file 'locked.md'"):
        Skill("s", "d", "body", path=skill_dir).read_file("locked.md")

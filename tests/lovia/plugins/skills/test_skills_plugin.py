"""The Skills plugin: construction rules, setup, and whole agent runs."""

from pathlib import Path

import pytest

import lovia
from lovia import Agent, Runner, Skills, UserError, tool
from lovia.plugins import DirectorySkillSource, Plugin, SkillCatalog, SkillMetadata
from lovia.plugins.skills.catalog import _SKILL_BEGIN, _SKILL_END
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import ToolCallEntry, ToolResultEntry


def write_skill(root: Path, name: str, description: str = "A skill.", body: str = "# Body"):
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n{body}"
    )
    return directory


class Source:
    async def list_skills(self):
        return [SkillMetadata("m", "In memory.")]

    async def load_skill(self, name):
        raise AssertionError("not used")


def test_exports():
    for name in ("Skills", "SkillsError", "SkillNotFoundError"):
        assert name in lovia.__all__
    import lovia.plugins as plugins

    for name in (
        "DirectorySkillSource",
        "Skill",
        "SkillCatalog",
        "SkillFilter",
        "SkillMetadata",
        "SkillNotFoundError",
        "SkillSource",
        "Skills",
        "SkillsError",
    ):
        assert name in plugins.__all__ and hasattr(plugins, name)


# ------------------------------------------------------------------ construction


def test_needs_a_source():
    with pytest.raises(UserError, match="at least one"):
        Skills()


def test_directories_become_a_directory_catalog(tmp_path):
    plugin = Skills(tmp_path / "a", str(tmp_path / "b"), usage_rules="", filter=bool)
    assert isinstance(plugin.catalog.source, DirectorySkillSource)
    assert plugin.catalog.source.roots == (tmp_path / "a", tmp_path / "b")
    assert plugin.catalog.usage_rules == "" and plugin.catalog.filter is bool
    assert plugin.name == "skills"
    assert isinstance(plugin, Plugin)


def test_a_single_source_is_wrapped():
    source = Source()
    plugin = Skills(source, usage_rules="rules", filter=bool, name="kb")
    assert plugin.catalog.source is source
    assert (plugin.catalog.usage_rules, plugin.catalog.filter) == ("rules", bool)
    assert plugin.name == "kb"


def test_a_catalog_is_used_as_is(tmp_path):
    catalog = SkillCatalog.from_dir(tmp_path)
    assert Skills(catalog).catalog is catalog


@pytest.mark.parametrize("kwargs", [{"usage_rules": "x"}, {"usage_rules": ""}, {"filter": bool}])
def test_a_catalog_refuses_its_own_options(tmp_path, kwargs):
    with pytest.raises(UserError, match="usage_rules="):
        Skills(SkillCatalog.from_dir(tmp_path), **kwargs)


@pytest.mark.parametrize(
    "sources",
    [
        lambda p: (p, Source()),
        lambda p: (Source(), str(p)),
        lambda p: (SkillCatalog.from_dir(p), p),
        lambda p: (Source(), Source()),
        lambda p: (42,),
    ],
)
def test_anything_else_is_refused(tmp_path, sources):
    with pytest.raises(UserError, match="not a mix"):
        Skills(*sources(tmp_path))


# ------------------------------------------------------------------ setup


async def test_setup_without_arguments_contributes_index_and_tools(tmp_path):
    write_skill(tmp_path, "s")
    inst = await Skills(tmp_path).setup()
    assert [t.name for t in inst.tools] == ["load_skill", "read_skill_file"]
    assert inst.instructions.startswith("## Skills\n- `s` — A skill.\n\n## Using skills")


async def test_empty_catalog_still_contributes_both_tools(tmp_path):
    inst = await Skills(tmp_path).setup()
    assert inst.instructions is None
    assert [t.name for t in inst.tools] == ["load_skill", "read_skill_file"]


# ------------------------------------------------------------------ agent runs


def make(tmp_path, script, **kw):
    provider = ScriptedProvider(script)
    agent = Agent(
        name="a",
        model=provider,
        instructions="Help the user.",
        plugins=[Skills(tmp_path)],
        **kw,
    )
    return agent, provider


async def test_agent_loads_a_skill_then_reads_one_of_its_files(tmp_path):
    directory = write_skill(tmp_path, "refunds", "Process refunds.", "# Refunds\nSee the table.\n")
    (directory / "references").mkdir()
    (directory / "references" / "table.md").write_text("| a | b |\n")
    agent, provider = make(
        tmp_path,
        [
            call("load_skill", {"name": "refunds"}),
            call("read_skill_file", {"name": "refunds", "relpath": "references/table.md"}),
            text("done"),
        ],
    )
    result = await Runner.run(agent, "I want a refund")
    assert result.output == "done"

    system = provider.calls[0][0]
    assert system.role == "system"
    assert system.content.startswith("Help the user.\n\n## Skills\n- `refunds` — Process refunds.")
    assert "## Using skills" in system.content
    tool_names = {t["function"]["name"] for t in provider.requests[0]["tools"]}
    assert {"load_skill", "read_skill_file"} <= tool_names

    loaded, read = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert loaded == (
        f"[skill: refunds  path: {directory}]\n{_SKILL_BEGIN}\n# Refunds\nSee the table.\n\n"
        f"{_SKILL_END}"
    )
    assert read == (
        f"[skill: refunds  file: references/table.md]\n{_SKILL_BEGIN}\n| a | b |\n\n{_SKILL_END}"
    )
    # The model saw both results on its later turns.
    assert provider.calls[2][-1].content == read


async def test_tool_errors_reach_the_model_as_plain_results(tmp_path):
    write_skill(tmp_path, "s")
    agent, provider = make(
        tmp_path,
        [
            call("read_skill_file", {"name": "s", "relpath": "../../etc/passwd"}),
            call("load_skill", {"name": "ghost"}),
            text("ok"),
        ],
    )
    result = await Runner.run(agent, "x")
    results = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert [e.output for e in results] == [
        "Path '../../etc/passwd' escapes skill directory.",
        "Unknown skill: 'ghost'.  Available: s",
    ]
    assert not any(e.is_error for e in results)


async def test_a_skill_added_mid_run_is_loadable_and_indexed_next_run(tmp_path):
    write_skill(tmp_path, "first")

    @tool
    async def author_skill() -> str:
        """Write a new skill to disk."""
        write_skill(tmp_path, "late", "Added during the run.", "# Late body")
        return "written"

    script = [call("author_skill", {}), call("load_skill", {"name": "late"}), text("ok")]
    agent, provider = make(tmp_path, script, tools=[author_skill])
    result = await Runner.run(agent, "x")
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert framed_body(outputs[1]) == "# Late body"
    assert all("`late`" not in call_[0].content for call_ in provider.calls)

    agent2, provider2 = make(tmp_path, [text("again")])
    await Runner.run(agent2, "y")
    assert "- `late` — Added during the run." in provider2.calls[0][0].content


def framed_body(output: str) -> str:
    return output.split(_SKILL_BEGIN + "\n", 1)[1].rsplit("\n" + _SKILL_END, 1)[0]


async def test_without_skills_the_prompt_has_no_index_but_tools_exist(tmp_path):
    agent, provider = make(tmp_path, [call("load_skill", {"name": "x"}), text("ok")])
    result = await Runner.run(agent, "x")
    assert provider.calls[0][0].content == "Help the user."
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outputs == ["Unknown skill: 'x'.  Available: (none)"]


async def test_two_skills_plugins_need_distinct_names(tmp_path):
    provider = ScriptedProvider([text("x")])
    agent = Agent(name="a", model=provider, plugins=[Skills(tmp_path), Skills(tmp_path)])
    with pytest.raises(UserError, match="Duplicate plugin name 'skills'"):
        await Runner.run(agent, "x")


async def test_load_skill_clashes_with_an_agent_tool_of_the_same_name(tmp_path):
    @tool
    async def load_skill(name: str) -> str:
        return name

    agent, _ = make(tmp_path, [text("x")], tools=[load_skill])
    with pytest.raises(UserError, match="Tool name conflict for 'load_skill'"):
        await Runner.run(agent, "x")


async def test_filtered_catalog_in_a_run_hides_and_refuses(tmp_path):
    write_skill(tmp_path, "public", "Public.")
    write_skill(tmp_path, "secret", "Secret.")
    provider = ScriptedProvider([call("load_skill", {"name": "secret"}), text("ok")])
    plugin = Skills(tmp_path, filter=lambda m: m.name != "secret")
    agent = Agent(name="a", model=provider, plugins=[plugin])
    result = await Runner.run(agent, "x")
    assert "secret" not in provider.calls[0][0].content.lower()
    (output,) = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert output == "Unknown skill: 'secret'.  Available: public"
    assert any(isinstance(e, ToolCallEntry) for e in result.entries)

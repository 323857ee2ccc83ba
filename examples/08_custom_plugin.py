"""A custom plugin: a tool, instructions and a per-turn reminder, packaged together."""

from dataclasses import dataclass, field
from typing import Any

from lovia import Agent, PluginInstance, RunContext, Runner, Todo, model_from_env, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry, TranscriptEntry


@dataclass
class Glossary:
    """Terms the user explains, kept across runs (shared state lives on the plugin object)."""

    terms: dict[str, str] = field(default_factory=dict)
    name: str = "glossary"

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        terms = self.terms

        @tool
        async def define(term: str, meaning: str) -> str:
            """Remember what a domain term means."""
            terms[term.lower()] = meaning
            return f"Noted: {term}."

        def reminder(run_ctx: RunContext[Any]) -> list[TranscriptEntry] | None:
            if not terms:
                return None
            known = "; ".join(f"{k}: {v}" for k, v in sorted(terms.items()))
            return [InputEntry("user", f"<system-reminder>Known terms: {known}</system-reminder>")]

        return PluginInstance(
            tools=[define],
            instructions="Record domain terms the user explains with `define`.",
            view_injectors=[reminder],
        )


def build_agent(glossary: Glossary) -> Agent:
    model = model_from_env(required=False) or ScriptedProvider(
        [
            call("define", {"term": "SLO", "meaning": "service level objective"}),
            text("Got it: an SLO is a service level objective."),
        ]
    )
    return Agent(name="helper", model=model, plugins=[glossary, Todo()])


if __name__ == "__main__":
    glossary = Glossary()
    print(Runner.run_sync(build_agent(glossary), "An SLO is a service level objective.").output)
    print(glossary.terms)

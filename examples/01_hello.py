"""The smallest agent: one instruction, one answer.

Runs offline with a scripted model; set LOVIA_MODEL (e.g. openai:gpt-4.1-mini) to use a real one.
"""

from lovia import Agent, Runner, model_from_env
from lovia.testing import ScriptedProvider, text


def build_agent() -> Agent:
    model = model_from_env(required=False) or ScriptedProvider([text("Hello! How can I help?")])
    return Agent(name="greeter", instructions="You are a friendly assistant.", model=model)


if __name__ == "__main__":
    result = Runner.run_sync(build_agent(), "Say hello.")
    print(result.output)

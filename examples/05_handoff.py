"""Handoffs: a triage agent transfers the conversation to a specialist."""

from lovia import Agent, Runner, model_from_env
from lovia.testing import ScriptedProvider, call, text


def build_agents() -> tuple[Agent, Agent]:
    real = model_from_env(required=False)
    spanish = Agent(
        name="Spanish",
        instructions="Answer in Spanish.",
        model=real or ScriptedProvider([text("¡Hola! ¿En qué puedo ayudarte?")]),
    )
    triage = Agent(
        name="triage",
        instructions="Transfer Spanish speakers to the Spanish agent.",
        model=real
        or ScriptedProvider([call("transfer_to_spanish", {"reason": "the user wrote Spanish"})]),
        handoffs=[spanish],
    )
    return triage, spanish


if __name__ == "__main__":
    triage, _ = build_agents()
    result = Runner.run_sync(triage, "Hola, necesito ayuda.")
    print(f"{result.final_agent.name}: {result.output}")

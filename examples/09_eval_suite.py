"""An eval suite: cases with checks, run by evaluate(); pass --ray to run it on Ray.

Offline, a scripted model stands in (each sample gets a fresh one from the factory).
"""

import asyncio
import sys
from typing import Annotated

from lovia import Agent, model_from_env, tool
from lovia.eval import Case, contains, evaluate, max_turns, not_contains, tool_called
from lovia.testing import ScriptedProvider, call, text


@tool
async def convert(
    amount: Annotated[float, "The amount to convert"],
    rate: Annotated[float, "Units of the target currency per unit of the source"],
) -> float:
    """Convert an amount of money with an exchange rate."""
    return round(amount * rate, 2)


def build_agent() -> Agent:
    """A fresh agent per sample: a scripted model is used up by one run."""
    model = model_from_env(required=False) or ScriptedProvider(
        [call("convert", {"amount": 12.5, "rate": 1.1}), text("12.50 EUR is 13.75 USD.")],
        record=False,
    )
    return Agent(
        name="banker",
        instructions="Use the convert tool for any currency arithmetic.",
        model=model,
        tools=[convert],
    )


def suite() -> list[Case]:
    question = "How much is 12.50 EUR in USD at 1.1?"
    return [
        Case(question, [contains("13.75"), tool_called("convert")], name="converts"),
        Case(question, [max_turns(2)], name="two turns", samples=3),
        Case(question, [not_contains("EUR")], name="answers in USD only"),
    ]


async def main(executor=None) -> None:
    report = await evaluate(build_agent, suite(), executor=executor)
    print(report)


if __name__ == "__main__":
    chosen = None
    if "--ray" in sys.argv:
        from lovia.executor import RayExecutor

        chosen = RayExecutor()
    asyncio.run(main(chosen))

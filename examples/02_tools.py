"""Tools are plain functions: the signature becomes the JSON Schema the model sees."""

from typing import Annotated

from lovia import Agent, Runner, model_from_env, tool
from lovia.testing import ScriptedProvider, call, text


@tool
async def convert(
    amount: Annotated[float, "The amount to convert"],
    rate: Annotated[float, "Units of the target currency per unit of the source"],
) -> float:
    """Convert an amount of money with an exchange rate."""
    return round(amount * rate, 2)


def build_agent() -> Agent:
    model = model_from_env(required=False) or ScriptedProvider(
        [call("convert", {"amount": 12.5, "rate": 1.1}), text("12.50 EUR is 13.75 USD.")]
    )
    return Agent(
        name="banker",
        instructions="Use the convert tool for any currency arithmetic.",
        model=model,
        tools=[convert],
    )


if __name__ == "__main__":
    result = Runner.run_sync(build_agent(), "How much is 12.50 EUR in USD at 1.1?")
    print(result.output)

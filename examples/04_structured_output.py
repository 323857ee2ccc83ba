"""Structured output: ask for a pydantic model and get a validated instance back."""

from pydantic import BaseModel

from lovia import Agent, Runner, model_from_env
from lovia.testing import ScriptedProvider, text


class Recipe(BaseModel):
    title: str
    minutes: int
    ingredients: list[str]


def build_agent() -> Agent:
    model = model_from_env(required=False) or ScriptedProvider(
        [text('{"title": "Pancakes", "minutes": 20, "ingredients": ["flour", "milk", "eggs"]}')]
    )
    return Agent(name="chef", instructions="Suggest one recipe.", model=model, output_type=Recipe)


if __name__ == "__main__":
    recipe = Runner.run_sync(build_agent(), "Something quick for breakfast.").output
    print(f"{recipe.title} ({recipe.minutes} min): {', '.join(recipe.ingredients)}")

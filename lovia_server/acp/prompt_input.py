"""A ``session/prompt``'s content blocks as a run's input: the text is the message, linked and
embedded resources follow it as ``<context>`` blocks (as the editor's attachments do), images
become image parts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from acp import schema as a

PromptBlock: TypeAlias = (
    a.TextContentBlock
    | a.ImageContentBlock
    | a.AudioContentBlock
    | a.ResourceContentBlock
    | a.EmbeddedResourceContentBlock
)


@dataclass(frozen=True)
class PromptInput:
    """A ``session/prompt`` as a run's input: what the transcript shows and what the model gets
    (the text plus the attached resources and images)."""

    display: str
    model_input: str | list[Any]


def prompt_input(blocks: Sequence[PromptBlock]) -> PromptInput:
    """Text blocks are the message; resource links and embedded resources follow it as
    ``<context>`` blocks (as the editor's attachments do); images become image parts."""
    from lovia.messages import user
    from lovia.parts import ImagePart, TextPart

    texts: list[str] = []
    context: list[str] = []
    images: list[Any] = []
    for block in blocks:
        if isinstance(block, a.TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, a.ResourceContentBlock):
            label = block.title or block.name
            context.append(
                f'<context uri="{block.uri}" name="{label}">(linked: read it with read_file '
                "if it matters)</context>"
            )
        elif isinstance(block, a.EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, a.TextResourceContents):
                context.append(f'<context uri="{resource.uri}">\n{resource.text}\n</context>')
            else:
                context.append(f'<context uri="{resource.uri}">(binary, not inlined)</context>')
        elif isinstance(block, a.ImageContentBlock):
            images.append(ImagePart(data=block.data, mime_type=block.mime_type))
    display = "\n".join(texts).strip()
    text = display if not context else f"{display}\n\n" + "\n\n".join(context)
    if not images:
        return PromptInput(display=display, model_input=text)
    return PromptInput(display=display, model_input=[user([TextPart(text), *images])])


__all__ = ["PromptBlock", "PromptInput", "prompt_input"]

"""The Markdown instruction text of a tag definition (`llmInstructionsMd` / `llmInstructions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tags.models import TagDefinition


def render_instruction_items(items: list[dict[str, Any]] | None) -> str:
    """Structured instructions as Markdown: a `line` is a line of text; a `block` is a `### title`
    heading followed by one `- ` bullet per line. Blocks are set off by blank lines, since a line
    written right after a bullet list would otherwise continue its last bullet."""
    groups: list[list[str]] = []
    open_lines: list[str] | None = None
    for item in items or []:
        if item.get("type") == "block":
            open_lines = None
            groups.append([f"### {item['title']}", *(f"- {line['text']}" for line in item.get("lines", []))])
        else:
            if open_lines is None:
                open_lines = []
                groups.append(open_lines)
            open_lines.append(item["text"])
    return "\n\n".join("\n".join(group) for group in groups)


def instruction_text(definition: TagDefinition) -> str:
    """What the model is told about a tag: `llmInstructionsMd`, else the rendered `llmInstructions`."""
    if definition.llm_instructions_md and definition.llm_instructions_md.strip():
        return definition.llm_instructions_md.strip()
    return render_instruction_items(definition.llm_instructions)

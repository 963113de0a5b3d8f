"""``ScriptedModel``: a browser-use chat model that plays a script, never a provider.

browser-use ships no fake chat model (its own tests use a mock); its model
interface is the ``BaseChatModel`` protocol: ``model``, ``provider``,
``name``, and ``ainvoke(messages, output_format)``, answered with a
``ChatInvokeCompletion`` whose ``completion`` is an instance of
``output_format`` (the agent's output: ``thinking``, ``memory``,
``next_goal``, and the ``action`` list). A scripted model answers from a
list of steps: each is one action (``{"click": {"index": 3}}``), a list of
actions, or a function of the prompt the agent sent (its text) returning
either — to find an element's index in the page, as a model would. When the
script runs out it answers ``done``. No network, no key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ScriptedModel", "Step", "element_index"]

Action = Mapping[str, Any]
Step = Action | Sequence[Action] | Callable[[str], Action | Sequence[Action]]
"""One turn of the script: an action, several, or a function of the prompt's text."""

_DONE: dict[str, Any] = {"done": {"text": "script finished", "success": True}}


def element_index(
    prompt: str, text: str | None = None, *, tag: str | None = None, attr: str | None = None
) -> int:
    """The index browser-use gave an element of the page, read from ``prompt``.

    browser-use lists a page's interactive elements as ``[index]<tag attr=… />``
    with their text on the next line. Match by that ``text``, by ``tag``
    (``"button"``, ``"textarea"``) and by ``attr`` (a part of the tag, e.g.
    ``"id=editor"``); the last page described wins. Raises ``LookupError``
    when nothing matches.
    """
    page = prompt[prompt.rfind("<browser_state>") :]
    kind = re.escape(tag) if tag else r"[a-z][a-z0-9-]*"
    found = []
    for match in re.finditer(rf"\[(\d+)\]<{kind}\b([^>]*)/>[ \t]*(?:\n[ \t]*([^\n\[<|]*))?", page):
        if attr is not None and attr not in match.group(2):
            continue
        if text is not None and (match.group(3) or "").strip() != text:
            continue
        found.append(int(match.group(1)))
    if not found:
        raise LookupError(f"no element (text={text!r}, tag={tag!r}, attr={attr!r}) in the page")
    return found[-1]


class ScriptedModel:
    """A ``browser_use.llm.BaseChatModel`` that plays ``steps`` in order.

    ``prompts`` keeps the text of every prompt the agent sent (what a model
    would have read: the page, the results of earlier actions), ``replies``
    every answer, as the actions it named.
    """

    model = "actonce-scripted"
    _verified_api_keys = True  # there is no key to check

    def __init__(self, steps: Iterable[Step]) -> None:
        self._steps = list(steps)
        self.prompts: list[str] = []
        self.replies: list[list[dict[str, Any]]] = []

    @property
    def provider(self) -> str:
        """The provider's name, as browser-use logs it."""
        return "actonce-scripted"

    @property
    def name(self) -> str:
        """The model's name."""
        return self.model

    @property
    def model_name(self) -> str:
        """The model's name (browser-use's older spelling)."""
        return self.model

    async def ainvoke(
        self, messages: Sequence[Any], output_format: Any = None, **kwargs: Any
    ) -> Any:
        """The next step of the script, as the agent's structured output."""
        from browser_use.llm.views import ChatInvokeCompletion

        text = "\n".join(_text(m) for m in messages)
        self.prompts.append(text)
        step: Step = self._steps.pop(0) if self._steps else _DONE
        made = step(text) if callable(step) else step
        actions = [dict(made)] if isinstance(made, Mapping) else [dict(a) for a in made]
        self.replies.append(actions)
        output = {
            "thinking": "",
            "evaluation_previous_goal": "",
            "memory": "",
            "next_goal": "",
            "action": actions,
        }
        if output_format is None:
            import json

            return ChatInvokeCompletion(completion=json.dumps(output), usage=None)
        return ChatInvokeCompletion(completion=output_format.model_validate(output), usage=None)


def _text(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    parts = []
    for part in content or ():
        text = getattr(part, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)

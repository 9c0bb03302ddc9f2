"""Reflection's wording through an OpenAI-compatible chat endpoint, with the rules' wording as the safety net.

The evidence stays rule-based (governance/reflection.py decides the groups, their counts and provenance);
the model is asked only to phrase each group's insight better: one JSON object matching `REFLECTION_SCHEMA`,
an entry per given key with a title and a content. A key it was not given, a missing key or any failure
(endpoint down, timeout, malformed answer) keeps the rules' text for that insight, and the reason is
reported. So a model cannot invent provenance, and a broken one cannot block a reflection.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from governance.config import Settings
from governance.reflection import Insight

__all__ = ["REFLECTION_SCHEMA", "SCHEMA_NAME", "LLMReflector", "WordingOutcome", "make_reflector", "word"]

SCHEMA_NAME = "reflection_insights"
_MAX_PROMPT_CHARS = 32_000
_TITLE_CHARS = 80
_CONTENT_CHARS = 1200

REFLECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["insights"],
    "properties": {
        "insights": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["key", "title", "content"],
                "properties": {
                    "key": {"type": "string"},
                    "title": {"type": "string"},
                    "content": {"type": "string"},
                },
            },
        }
    },
}

_SYSTEM = (
    "You distil a software team's past task episodes into short, actionable insights. For each group "
    "given (its key, kind and the facts counted from the episodes), write a title (under 80 characters) and "
    "a content (2-4 sentences) saying what tends to work, what tends to fail and under which conditions. "
    "Keep every number and every fix exactly as given; add no facts. Answer one entry per key."
)


class _Worded(BaseModel):
    key: str
    title: str = Field(min_length=1)
    content: str = Field(min_length=1)


class _Answer(BaseModel):
    insights: list[_Worded]


@dataclass(frozen=True)
class WordingOutcome:
    """The insights to stage, the engine that worded them and why the model's wording was not used."""

    insights: list[Insight]
    engine: str = "rule_based"
    fallback_reason: str | None = None


class LLMReflector:
    """Calls `chat.completions` once per reflection."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None, timeout: float) -> None:
        from openai import AsyncOpenAI

        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=0
        )
        self.model = model

    async def reword(self, insights: list[Insight]) -> dict[str, tuple[str, str]]:
        """key → (title, content) from the model; raises on any transport or schema problem."""
        groups = [
            {
                "key": i.key,
                "kind": i.kind,
                "episodes": i.support,
                "succeeded": i.successes,
                "facts": i.content,
            }
            for i in insights
        ]
        response = await self._client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": _SYSTEM},
                {"role": "user", "content": json.dumps({"groups": groups})[:_MAX_PROMPT_CHARS]},
            ],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "schema": REFLECTION_SCHEMA, "strict": True},
            },
            temperature=0,
        )
        content = response.choices[0].message.content if response.choices else None
        if not content:
            raise ValueError("empty answer")
        answer = _Answer.model_validate(json.loads(content))
        return {
            w.key: (w.title.strip()[:_TITLE_CHARS], w.content.strip()[:_CONTENT_CHARS])
            for w in answer.insights
        }


def make_reflector(settings: Settings) -> LLMReflector | None:
    """The configured LLM (the one cognify uses), or None: the rules word insights themselves."""
    if not settings.llm_base_url or not settings.llm_model:
        return None
    return LLMReflector(
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout_seconds,
    )


async def word(insights: list[Insight], llm: LLMReflector | None) -> WordingOutcome:
    """The model's wording for the keys it answered (rules' for the rest), or the rules' on any failure."""
    if llm is None or not insights:
        return WordingOutcome(insights)
    try:
        worded = await llm.reword(insights)
    except (ValidationError, json.JSONDecodeError, ValueError, KeyError) as exc:
        return WordingOutcome(insights, fallback_reason=f"malformed LLM answer: {type(exc).__name__}")
    except Exception as exc:  # noqa: BLE001 - any endpoint failure must fall back, by design
        return WordingOutcome(insights, fallback_reason=f"LLM call failed: {type(exc).__name__}: {exc}"[:300])
    out = [
        replace(i, title=worded[i.key][0], content=worded[i.key][1]) if i.key in worded else i
        for i in insights
    ]
    missing = sum(1 for i in insights if i.key not in worded)
    reason = f"the model left out {missing} of {len(insights)} insights" if missing else None
    return WordingOutcome(out, engine=f"llm:{llm.model}", fallback_reason=reason)

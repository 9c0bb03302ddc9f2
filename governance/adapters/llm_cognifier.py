"""Cognify through any OpenAI-compatible chat endpoint, with the rule-based extractor as the safety net.

The model is asked for one JSON object matching `ANALYSIS_SCHEMA` (`response_format` json_schema). Any
failure — endpoint down, timeout, refusal, malformed or out-of-schema answer — returns the rule-based
analysis plus the reason, which the caller records in the promotion's event. A broken LLM can make
memories poorer, never block or crash a promotion. No retries here: one attempt, then fall back.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from governance.bug_signature import error_signature, split_bug_pattern
from governance.cognify import Analysis, Candidate, StagedEntry, canonical_key_of, rule_based_analysis
from governance.config import Settings
from governance.scopes import MemoryType

__all__ = ["ANALYSIS_SCHEMA", "LLMCognifier", "CognifyOutcome", "make_llm", "cognify"]

_MAX_PROMPT_CHARS = 48_000

ANALYSIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["success", "reward", "critique", "key_decisions", "repeatable", "summary", "candidates"],
    "properties": {
        "success": {"type": "boolean"},
        "reward": {"type": "number", "minimum": 0, "maximum": 1},
        "critique": {"type": "string"},
        "key_decisions": {"type": "array", "items": {"type": "string"}},
        "repeatable": {"type": "boolean"},
        "summary": {"type": "string"},
        "candidates": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["memory_type", "title", "content", "canonical_key", "importance", "source_seqs"],
                "properties": {
                    "memory_type": {
                        "type": "string",
                        "enum": [t.value for t in MemoryType if t != "episode"],
                    },
                    "title": {"type": "string"},
                    "content": {"type": "string"},
                    "canonical_key": {"type": ["string", "null"]},
                    "importance": {"type": "number", "minimum": 0, "maximum": 1},
                    "source_seqs": {"type": "array", "items": {"type": "integer"}},
                },
            },
        },
    },
}

_SYSTEM = (
    "You distil an AI agent's task log into durable team memory. Answer with one JSON object matching the "
    "schema. success/reward (0-1) judge the outcome; critique says what to do differently; candidates are "
    "facts, preferences, skills, bug patterns, insights or code rules worth sharing, each with source_seqs "
    "(the seq numbers of the entries it comes from). canonical_key names what a fact is about as a dotted "
    "lowercase key (e.g. db.driver) or null. Never include secrets."
)


def _key_of(memory_type: str, content: str, key: str | None) -> str | None:
    # a bug pattern is keyed by its error's signature whatever the model named it: recurrences merge
    if memory_type == MemoryType.BUG_PATTERN.value:
        return error_signature(split_bug_pattern(content)[0]).key
    return canonical_key_of("", {"key": key}) if key else None


class _LLMCandidate(BaseModel):
    memory_type: Literal["skill", "fact", "preference", "profile", "insight", "bug_pattern", "code_rule"]
    title: str = Field(min_length=1, max_length=200)
    content: str = Field(min_length=1)
    canonical_key: str | None = None
    importance: float = Field(ge=0, le=1)
    source_seqs: list[int] = Field(default_factory=list)


class _LLMAnalysis(BaseModel):
    success: bool
    reward: float = Field(ge=0, le=1)
    critique: str
    key_decisions: list[str]
    repeatable: bool
    summary: str
    candidates: list[_LLMCandidate]


@dataclass(frozen=True)
class CognifyOutcome:
    """The analysis used, and why the LLM's was not (None when it was used or none is configured)."""

    analysis: Analysis
    fallback_reason: str | None = None


class LLMCognifier:
    """Calls `chat.completions` on an OpenAI-compatible endpoint once per task."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None, timeout: float) -> None:
        from openai import AsyncOpenAI

        # Temporal owns retries of the activity; a failed call falls back instead of retrying here
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=0
        )
        self._model = model

    async def analyze(self, task_description: str, entries: list[StagedEntry], *, success: bool) -> Analysis:
        """The model's analysis; raises on any transport, refusal or schema problem."""
        log = "\n".join(f"[{e.seq}] {e.kind}: {e.content}" for e in entries)[:_MAX_PROMPT_CHARS]
        outcome = "success" if success else "failure"
        user = f"Task: {task_description}\nVerified outcome: {outcome}\n\nLog:\n{log}"
        response = await self._client.chat.completions.create(
            model=self._model,
            messages=[{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "task_analysis", "schema": ANALYSIS_SCHEMA, "strict": True},
            },
            temperature=0,
        )
        content = response.choices[0].message.content if response.choices else None
        if not content:
            raise ValueError("empty answer")
        parsed = _LLMAnalysis.model_validate(json.loads(content))
        by_seq = {e.seq: e.id for e in entries}
        candidates = [
            Candidate(
                memory_type=c.memory_type,
                title=c.title,
                content=c.content,
                canonical_key=_key_of(c.memory_type, c.content, c.canonical_key),
                importance=c.importance,
                source_entry_ids=[by_seq[s] for s in c.source_seqs if s in by_seq],
            )
            for c in parsed.candidates
            # evidence wins over the model: an unverified task yields no skill
            if success or c.memory_type != MemoryType.SKILL.value
        ]
        return Analysis(
            # the verification evidence decides success, not the model's opinion
            success=success,
            reward=parsed.reward if success else min(parsed.reward, 0.3),
            critique=parsed.critique,
            key_decisions=parsed.key_decisions,
            candidates=candidates if success else [],
            repeatable=success and parsed.repeatable,
            summary=parsed.summary or task_description,
            engine=f"llm:{self._model}",
        )


def make_llm(settings: Settings) -> LLMCognifier | None:
    """The configured LLM, or None (rule-based only) when no endpoint is set."""
    if not settings.llm_base_url or not settings.llm_model:
        return None
    return LLMCognifier(
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout_seconds,
    )


async def cognify(
    task_description: str, entries: list[StagedEntry], *, success: bool, llm: LLMCognifier | None
) -> CognifyOutcome:
    """LLM analysis when configured and well-formed, else the rule-based one (with the reason)."""
    # CPU work (seconds for a big task's staging): off the caller's event loop
    fallback = await asyncio.to_thread(rule_based_analysis, task_description, entries, success=success)
    if llm is None:
        return CognifyOutcome(analysis=fallback)
    try:
        return CognifyOutcome(analysis=await llm.analyze(task_description, entries, success=success))
    except (ValidationError, json.JSONDecodeError, ValueError, KeyError) as exc:
        return CognifyOutcome(
            analysis=fallback, fallback_reason=f"malformed LLM answer: {type(exc).__name__}"
        )
    except Exception as exc:  # noqa: BLE001 - any endpoint failure must fall back, by design
        return CognifyOutcome(
            analysis=fallback, fallback_reason=f"LLM call failed: {type(exc).__name__}: {exc}"[:300]
        )

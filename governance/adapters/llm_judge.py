"""The contradiction judge over an OpenAI-compatible chat endpoint, and the factory that picks a judge.

The model answers JSON `{"contradicts": bool, "reason": str}`; on any failure (network, timeout, malformed
answer) the rule-based judge of governance/supersession.py decides instead and the note says so, so a flaky
endpoint never blocks a promotion.
"""

from __future__ import annotations

import json
from typing import Any

from governance.config import Settings
from governance.supersession import ContradictionJudge, RuleBasedJudge, Verdict

__all__ = ["LLMJudge", "make_judge"]

_PROMPT = (
    "You compare two statements from a software team's shared memory. Answer with JSON only: "
    '{"contradicts": true|false, "reason": "<one sentence>"}. '
    "contradicts is true only if both are about the same subject and cannot both be true now "
    "(e.g. a changed value, version, decision or a negation). Paraphrases, elaborations and statements "
    "about different subjects do not contradict."
)


class LLMJudge:
    """A judge asking an OpenAI-compatible chat endpoint; any failure falls back to `RuleBasedJudge`."""

    blocking = True  # a network round trip per pair

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        fallback: ContradictionJudge | None = None,
        client: Any | None = None,
    ) -> None:
        if client is None:
            from openai import OpenAI

            client = OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=1)
        self._client = client
        self._model = model
        self._fallback = fallback or RuleBasedJudge()

    def judge(self, *, new: str, old: str, similarity: float) -> Verdict:
        try:
            response = self._client.chat.completions.create(
                model=self._model,
                temperature=0,
                response_format={"type": "json_object"},
                messages=[
                    {"role": "system", "content": _PROMPT},
                    {"role": "user", "content": json.dumps({"old": old, "new": new}, ensure_ascii=False)},
                ],
            )
            answer = json.loads(response.choices[0].message.content or "")
            contradicts = answer["contradicts"]
            if not isinstance(contradicts, bool):
                raise ValueError("contradicts is not a boolean")
            return Verdict(contradicts, str(answer.get("reason") or "judged by the language model"))
        except Exception as exc:  # noqa: BLE001 - any endpoint failure degrades to the offline judge by design
            verdict = self._fallback.judge(new=new, old=old, similarity=similarity)
            # the note (and the SUPERSEDED event) says the rules decided, and why the model did not
            why = f"{type(exc).__name__}: {exc}"[:200]
            return Verdict(
                verdict.contradicts, f"{verdict.reason} (rule-based; the language model failed: {why})"
            )


def make_judge(settings: Settings, *, timeout: float | None = None) -> ContradictionJudge:
    """The LLM judge when an endpoint and model are configured, else the rule-based one.

    `timeout` (seconds) lowers the configured LLM timeout where a caller cannot wait long.
    """
    if settings.llm_base_url and settings.llm_model:
        limit = (
            settings.llm_timeout_seconds if timeout is None else min(timeout, settings.llm_timeout_seconds)
        )
        return LLMJudge(
            base_url=settings.llm_base_url,
            model=settings.llm_model,
            api_key=settings.llm_api_key,
            timeout=limit,
        )
    return RuleBasedJudge()

"""Query intent by rules: what a reader asks for weights the memory types it prefers (never a filter).

The intents, the kinds of memory each asks for, and loregate's memory types for them:

    intent      kind of memory         loregate memory types
    profile     PROFILE                profile
    preference  PREFERENCE             preference, code_rule
    recall      EPISODIC               episode
    knowledge   SEMANTIC, FACT         fact, insight, skill, code_rule, bug_pattern
    debug       EPISODIC, SEMANTIC     episode, insight, bug_pattern
    general     all                    (no preference)

The intent's types are *weighted up* in the ranking (`governance.ranking.TypePreference`); the other types
are still searched, because cue words misroute: "When did Mina move to Busan?" reads as `recall` (episodes),
yet a fact answers it. Only a caller's explicit `types` filter.

Cues are English words (matched on word boundaries) and Korean stems (matched as substrings, because Korean
attaches particles and endings to the stem: `에러가`, `선호하는`). Each intent scores the number of its
cues found; the highest wins, ties go to the more specific intent (`_PRIORITY`), and no cue at all means
`general`. The rules are deliberately cheap (microseconds) so they run on every search; an LLM classifier
can replace `detect_intent` later without changing callers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from governance.scopes import MemoryType

__all__ = ["Intent", "IntentDecision", "INTENT_TYPES", "detect_intent", "types_for_intent"]


class Intent(StrEnum):
    """What a query asks for."""

    PROFILE = "profile"
    PREFERENCE = "preference"
    RECALL = "recall"
    KNOWLEDGE = "knowledge"
    DEBUG = "debug"
    GENERAL = "general"


INTENT_TYPES: dict[Intent, tuple[MemoryType, ...] | None] = {
    Intent.PROFILE: (MemoryType.PROFILE,),
    Intent.PREFERENCE: (MemoryType.PREFERENCE, MemoryType.CODE_RULE),
    Intent.RECALL: (MemoryType.EPISODE,),
    Intent.KNOWLEDGE: (
        MemoryType.FACT,
        MemoryType.INSIGHT,
        MemoryType.SKILL,
        MemoryType.CODE_RULE,
        MemoryType.BUG_PATTERN,
    ),
    Intent.DEBUG: (MemoryType.EPISODE, MemoryType.INSIGHT, MemoryType.BUG_PATTERN),
    Intent.GENERAL: None,
}

# English cues: whole words or phrases (case-insensitive). Korean cues: stems matched anywhere.
_EN_CUES: dict[Intent, tuple[str, ...]] = {
    Intent.DEBUG: (
        "error",
        "errors",
        "exception",
        "traceback",
        "stack trace",
        "stacktrace",
        "bug",
        "bugs",
        "crash",
        "crashes",
        "crashed",
        "failing",
        "fails",
        "failed",
        "failure",
        "broken",
        "debug",
        "debugging",
        "timeout",
        "timed out",
        "segfault",
        "panic",
        "regression",
        "flaky",
        "deadlock",
        "leak",
        "doesn't work",
        "does not work",
        "not working",
        "fix",
        "fixing",
        "root cause",
    ),
    Intent.PREFERENCE: (
        "prefer",
        "prefers",
        "preferred",
        "preference",
        "preferences",
        "favorite",
        "favourite",
        "style",
        "convention",
        "conventions",
        "naming",
        "formatting",
        "like to",
        "rather",
        "should i use",
        "should we use",
        # not "do we use": "which driver do we use" asks for a fact (a decision taken), not a taste
        "usually use",
        "always use",
        "never use",
        "habit",
    ),
    Intent.PROFILE: (
        "who am i",
        "who is",
        "my name",
        "my role",
        "our team",
        "tech stack",
        "stack",
        "profile",
        "about me",
        "owner",
        "owns",
        "maintainer",
        "maintains",
        "responsible for",
        "what language",
        "which language",
    ),
    Intent.RECALL: (
        "last time",
        "previously",
        "earlier",
        "yesterday",
        "last week",
        "remember",
        "recall",
        "did we",
        "did i",
        "what happened",
        "history",
        "session",
        "already tried",
        "have we",
        "when did",
    ),
    Intent.KNOWLEDGE: (
        "what is",
        "what are",
        "what's",
        "how does",
        "how do",
        "how to",
        "explain",
        "why",
        "architecture",
        "design",
        "documentation",
        "docs",
        "meaning",
        "difference between",
        "where is",
        "which",
    ),
}

_KO_CUES: dict[Intent, tuple[str, ...]] = {
    Intent.DEBUG: (
        "에러",
        "오류",
        "버그",
        "실패",
        "예외",
        "크래시",
        "디버그",
        "디버깅",
        "안 돼",
        "안돼",
        "안 됨",
        "고치",
        "장애",
        "타임아웃",
        "멈춤",
        "누수",
        "원인",
    ),
    Intent.PREFERENCE: ("선호", "좋아하", "스타일", "컨벤션", "취향", "습관", "주로 쓰", "즐겨", "네이밍"),
    Intent.PROFILE: ("이름", "역할", "기술 스택", "기술스택", "프로필", "담당자", "담당", "소개", "누구"),
    Intent.RECALL: (
        "지난번",
        "지난 번",
        "이전에",
        "전에",
        "어제",
        "기억",
        "했었",
        "했던",
        "무슨 일",
        "히스토리",
        "과거",
    ),
    Intent.KNOWLEDGE: (
        "무엇",
        "뭐야",
        "뭔가",
        "어떻게",
        "설명",
        "왜",
        "원리",
        "구조",
        "아키텍처",
        "차이",
        "방법",
    ),
}

# An identifier-shaped error (ValueError, ECONNRESET, E1234, HTTP 503) is a strong debug cue on its own.
_ERROR_TOKEN = re.compile(
    r"\b(?:[A-Z][A-Za-z]+(?:Error|Exception)|E[A-Z]{4,}|[A-Z]{1,4}-?\d{3,5}|(?:HTTP )?[45]\d\d)\b"
)

# More specific intents win ties: a "why does X crash" is debugging, not general knowledge.
_PRIORITY: tuple[Intent, ...] = (
    Intent.DEBUG,
    Intent.PREFERENCE,
    Intent.PROFILE,
    Intent.RECALL,
    Intent.KNOWLEDGE,
)

_EN_PATTERNS: dict[Intent, re.Pattern[str]] = {
    intent: re.compile(
        r"\b(?:" + "|".join(re.escape(c) for c in sorted(cues, key=len, reverse=True)) + r")\b"
    )
    for intent, cues in _EN_CUES.items()
}


@dataclass(frozen=True)
class IntentDecision:
    """The detected intent and the cues that decided it (shown to users so routing is explainable)."""

    intent: Intent
    cues: tuple[str, ...]

    @property
    def types(self) -> tuple[MemoryType, ...] | None:
        """Memory types the intent prefers; None means no preference."""
        return INTENT_TYPES[self.intent]


def detect_intent(query: str) -> IntentDecision:
    """Classify `query` by counting cue matches per intent (see the module docstring)."""
    lowered = query.lower()
    found: dict[Intent, list[str]] = {intent: [] for intent in _PRIORITY}
    for intent, pattern in _EN_PATTERNS.items():
        found[intent].extend(m.group(0) for m in pattern.finditer(lowered))
    for intent, cues in _KO_CUES.items():
        found[intent].extend(cue for cue in cues if cue in query)
    found[Intent.DEBUG].extend(m.group(0) for m in _ERROR_TOKEN.finditer(query))

    best = max(_PRIORITY, key=lambda intent: (len(found[intent]), -_PRIORITY.index(intent)))
    if not found[best]:
        return IntentDecision(Intent.GENERAL, ())
    return IntentDecision(best, tuple(found[best]))


def types_for_intent(intent: Intent | str) -> tuple[MemoryType, ...] | None:
    """Memory types an intent prefers (None: none); raises ValueError for an unknown intent name."""
    return INTENT_TYPES[Intent(intent)]

"""The evaluation corpus of tests/data/redaction_eval/shapes.toml, expanded into samples and scored.

Values are generated from each family's documented shape with a fixed seed (see the corpus README); a
sample's secrets are the values as they appear in its text (reversed, full-width, percent-encoded or wrapped
when the text says so). A secret counts as removed when no 8-character piece of it (whitespace and
zero-width characters ignored) is left in the output; a near-miss must come back unchanged.
"""

from __future__ import annotations

import random
import re
import string
import tomllib
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1] / "data" / "redaction_eval" / "shapes.toml"
SEED = 20261127
PIECE = 8

_ALPHABETS = {
    "hex": "0123456789abcdef",
    "HEX": "0123456789ABCDEF",
    "b62": string.ascii_letters + string.digits,
    "lower": string.ascii_lowercase + string.digits,
    "upper": string.ascii_uppercase + string.digits,
    "digits": string.digits,
    "b64": string.ascii_letters + string.digits + "+/",
    "url": string.ascii_letters + string.digits + "_-",
    "b32": string.ascii_uppercase + "234567",
    "bech": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
}
_WORDS = (
    "correct horse battery staple orbit maple velvet quartz summit nimbus falcon harbor canyon lantern"
    " meadow copper violet thunder willow ember glacier pepper"
).split()
_GENERATOR = re.compile(r"\{(\w+)(?::([^}]*))?\}")
_SLOT = re.compile(r"\{\{|\}\}|\{(\w+)(?:\|(\w+))?\}")
_INVISIBLE = re.compile(r"[\s\u200b\u200c\u200d\u2060\ufeff]+")


def luhn_ok(number: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(number)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


@dataclass(frozen=True)
class Sample:
    """One text; `secrets` must all be gone (none for a near-miss, which must come back unchanged)."""

    family: str
    split: str
    text: str
    secrets: tuple[str, ...] = ()
    id: str = ""


class _Values:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chars(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def password(self) -> str:
        while True:
            word = self.rng.choice(_WORDS).capitalize()
            value = (
                word
                + self.chars(string.digits, 3)
                + self.rng.choice("!@#$%^*-_.+=")
                + self.chars("abcdefgh", 3)
            )
            if self.rng.random() < 0.5:
                value = self.chars(_ALPHABETS["b62"] + "!@#$%^*", self.rng.randint(12, 18))
            if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
                return value

    def card(self, prefix: str, length: int, valid: bool) -> str:
        while True:
            number = prefix + self.chars(string.digits, length - len(prefix))
            if luhn_ok(number) == valid:
                return number

    def expand(self, template: str) -> str:
        def one(match: re.Match[str]) -> str:
            kind, arg = match.group(1), match.group(2)
            if kind in _ALPHABETS:
                return self.chars(_ALPHABETS[kind], int(arg))
            if kind == "pw":
                return self.password()
            if kind == "words":
                return " ".join(self.rng.sample(_WORDS, 4))
            if kind in ("luhn", "nonluhn"):
                prefix, length = arg.split(":")
                return self.card(prefix, int(length), kind == "luhn")
            if kind == "uuid":
                parts = (8, 4, 4, 4, 12)
                return "-".join(self.chars(_ALPHABETS["hex"], n) for n in parts)
            raise ValueError(f"unknown generator {kind!r}")

        return _GENERATOR.sub(one, template)


def _fullwidth(value: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in value)


def _grouped(value: str, sep: str) -> str:
    if len(value) == 15:
        return sep.join((value[:4], value[4:10], value[10:]))
    return sep.join(value[i : i + 4] for i in range(0, len(value), 4))


_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "rev": lambda v: v[::-1],
    "fw": _fullwidth,
    "url": lambda v: urllib.parse.quote(v, safe=""),
    "split": lambda v: v[: len(v) // 2] + "\n" + v[len(v) // 2 :],
    "spaced": lambda v: _grouped(v, " "),
    "dashed": lambda v: _grouped(v, "-"),
}


@dataclass
class Corpus:
    """The expanded corpus: secret samples and near-misses, each tagged with its family and split."""

    secrets: list[Sample] = field(default_factory=list)
    near_misses: list[Sample] = field(default_factory=list)

    def part(self, split: str) -> tuple[list[Sample], list[Sample]]:
        return (
            [s for s in self.secrets if s.split == split],
            [s for s in self.near_misses if s.split == split],
        )


def _slot(family: str, generated: dict[str, str], used: list[str], match: re.Match[str]) -> str:
    if match.group(0) in ("{{", "}}"):
        return match.group(0)[0]
    if match.group(1) not in generated:
        raise KeyError(f"{family}: no value {match.group(1)!r} (write {{{{ for a brace)")
    value = generated[match.group(1)]
    if match.group(2):
        value = _TRANSFORMS[match.group(2)](value)
    used.append(value)
    return value


def _expand(entry: dict[str, object], values: _Values, secret: bool) -> list[Sample]:
    out: list[Sample] = []
    templates = entry.get("values", {})
    assert isinstance(templates, dict)
    texts = entry["texts"]
    assert isinstance(texts, list)
    for text in texts:
        assert isinstance(text, str)
        generated = {name: values.expand(str(template)) for name, template in templates.items()}
        used: list[str] = []

        rendered = _SLOT.sub(partial(_slot, str(entry["family"]), generated, used), text)
        out.append(
            Sample(
                family=str(entry["family"]),
                split=str(entry["split"]),
                text=rendered,
                secrets=tuple(used) if secret else (),
            )
        )
    return out


def load(path: Path = CORPUS, seed: int = SEED) -> Corpus:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    values = _Values(random.Random(seed))
    corpus = Corpus()
    for entry in data["secret"]:
        corpus.secrets.extend(_expand(entry, values, secret=True))
    for entry in data["near_miss"]:
        corpus.near_misses.extend(_expand(entry, values, secret=False))
    return corpus


def _squash(text: str) -> str:
    return _INVISIBLE.sub("", text)


def leftovers(sample: Sample, output: str) -> list[str]:
    """Pieces of the sample's secrets still in `output` (pieces the rest of the text also holds aside)."""
    squashed_output = _squash(output)
    context = sample.text
    for secret in sample.secrets:
        context = context.replace(secret, "\x00")
    squashed_context = _squash(context)
    found: list[str] = []
    for secret in sample.secrets:
        squashed = _squash(secret)
        if squashed in squashed_output:
            found.append(squashed)
            continue
        for i in range(len(squashed) - PIECE + 1):
            piece = squashed[i : i + PIECE]
            if piece in squashed_context or piece in "[REDACTED]":
                continue
            if piece in squashed_output:
                found.append(piece)
                break
    return found


@dataclass
class Score:
    """Recall on secret samples and the share of near-misses left unchanged."""

    secrets: int
    removed: int
    near_misses: int
    kept: int
    misses: list[tuple[str, str, str]]
    altered: list[tuple[str, str, str]]

    @property
    def recall(self) -> float:
        return self.removed / self.secrets if self.secrets else 1.0

    @property
    def near_miss_precision(self) -> float:
        return self.kept / self.near_misses if self.near_misses else 1.0


def score(redact: Callable[[str], str], secrets: list[Sample], near_misses: list[Sample]) -> Score:
    misses: list[tuple[str, str, str]] = []
    altered: list[tuple[str, str, str]] = []
    for sample in secrets:
        output = redact(sample.text)
        if leftovers(sample, output):
            misses.append((sample.family, sample.text, output))
    for sample in near_misses:
        output = redact(sample.text)
        if output != sample.text:
            altered.append((sample.family, sample.text, output))
    return Score(
        secrets=len(secrets),
        removed=len(secrets) - len(misses),
        near_misses=len(near_misses),
        kept=len(near_misses) - len(altered),
        misses=misses,
        altered=altered,
    )


FRESH = Path(__file__).resolve().parents[1] / "data" / "redaction_fresh" / "corpus.jsonl"


def load_fresh(path: Path = FRESH) -> Corpus:
    """The second corpus (tests/data/redaction_fresh), split by family into `tune` and `heldout` halves.

    Its `keep` strings are not used here: a near-miss must come back unchanged, as in the first corpus.
    """
    import hashlib
    import json

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    split: dict[str, str] = {}
    for kind in ("secret", "near_miss"):
        names = sorted(
            {r["family"] for r in rows if r["kind"] == kind},
            key=lambda n: hashlib.sha256(n.encode()).hexdigest(),
        )
        split.update({n: "tune" if i % 2 == 0 else "heldout" for i, n in enumerate(names)})
    corpus = Corpus()
    for r in rows:
        if r["kind"] == "secret":
            sample = Sample(r["family"], split[r["family"]], r["text"], tuple(r["secrets"]))
            corpus.secrets.append(sample)
        else:
            corpus.near_misses.append(Sample(r["family"], split[r["family"]], r["text"]))
    return corpus


def keep_score(redact: Callable[[str], str], path: Path = FRESH) -> dict[str, tuple[int, int]]:
    """The fresh corpus' own looser near-miss measure: per half, (near-misses whose `keep` strings all
    survive, near-misses)."""
    import json

    fresh = load_fresh(path)
    halves = {s.text: s.split for s in fresh.near_misses}
    out: dict[str, tuple[int, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["kind"] != "near_miss":
            continue
        half = halves[r["text"]]
        kept, total = out.get(half, (0, 0))
        output = redact(r["text"])
        out[half] = (kept + all(k in output for k in r["keep"]), total + 1)
    return out


THIRD = Path(__file__).resolve().parents[1] / "data" / "redaction_third"


def load_third(root: Path = THIRD) -> Corpus:
    """The third corpus (tests/data/redaction_third), written blind, split by family into the `tune` and
    `heldout` halves its records name. Scored as the fresh corpus is: no 8-character piece of a secret may
    survive; a near-miss must come back unchanged. The held-out half is reported as aggregate figures only."""
    import json

    corpus = Corpus()
    for name, secret in (("secrets.jsonl", True), ("near_misses.jsonl", False)):
        for line in (root / name).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            sample = Sample(r["family"], r["half"], r["text"], tuple(r["secrets"]) if secret else (), r["id"])
            (corpus.secrets if secret else corpus.near_misses).append(sample)
    return corpus


FOURTH = Path(__file__).resolve().parents[1] / "data" / "redaction_fourth"


def load_fourth(root: Path = FOURTH) -> Corpus:
    """The fourth corpus (tests/data/redaction_fourth), written blind in the third's record format and split
    by family the same way; scored and reported as the third is (held-out half as aggregate figures only)."""
    return load_third(root)

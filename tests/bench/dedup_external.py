"""loregate's dedup decision on PAWS-Wiki (pairs nobody here wrote), outside the pytest run.

    python -m tests.bench.dedup_external                 # tune and held-aside parts, then the labelled sets
    python -m tests.bench.dedup_external --per-part 400  # a smaller sample per part
    python -m tests.bench.dedup_external --parts tune    # the tune part only (while tuning)

Data: the PAWS-Wiki *dev* split (`/work/shared/data/paws/dev.tsv`, or `$LOREGATE_PAWS_DEV`; columns id,
sentence1, sentence2, label; label 1 = paraphrase). PAWS pairs share nearly all their words: the
different-meaning ones swap entities or roles, or move a qualifier; that is what a merge must not join.

**The split** (fixed, written down in docs/dedup-calibration.md): a pair belongs to the *held-aside* part when
`sha256("paws-split:" + id)`'s first byte is below 77 (~30 %), else to the *tune* part. Rules and thresholds
may be tuned on the tune part only; the held-aside part is measured, never looked into. From each part a
sample of `--per-part` pairs (default 1,500) is drawn, the pairs with the smallest `sha256("paws-sample:" +
id)` (deterministic), because the embedder (~60 passages/s on two shared cores) would take ~4 min for all.

Each pair runs through `governance.dedup.classify` itself, sentence1 as the candidate and sentence2 as its
only neighbour, with the configured floor and related threshold and the rule-based contradiction judge, as
publishing does. Printed per part: share of different-meaning pairs merged (target <= 0.03), of paraphrases
merged (target >= 0.5), and of each superseded; then the labelled sets of `tests.bench.calibrate_dedup`
(held-out, all, unseen) under the same decision, which must not get worse.

Cosines are cached on disk in `tests/bench/.cache/` (gitignored), keyed by embedder and texts.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from governance.dedup import Decision, DecisionKind, Neighbour, classify, content_hash

__all__ = [
    "PAWS_DEV",
    "HELD_ASIDE_BYTE",
    "PawsPair",
    "load_paws",
    "part_of",
    "sample",
    "decide",
    "Shares",
    "shares",
    "cost",
    "main",
]

PAWS_DEV = Path(os.environ.get("LOREGATE_PAWS_DEV", "/work/shared/data/paws/dev.tsv"))
CACHE_DIR = Path(__file__).resolve().parent / ".cache"
# a pair is held aside when the first byte of sha256("paws-split:" + id) is below this (77/256 ~ 30 %)
HELD_ASIDE_BYTE = 77
TARGET_NEGATIVES_MERGED = 0.03
TARGET_PARAPHRASES_MERGED = 0.5


@dataclass(frozen=True)
class PawsPair:
    """One PAWS pair: `paraphrase` is the label (1 in the file)."""

    id: str
    a: str
    b: str
    paraphrase: bool


def load_paws(path: Path = PAWS_DEV) -> list[PawsPair]:
    """The pairs of a PAWS tsv (id, sentence1, sentence2, label; a header line is skipped)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [PawsPair(r[0], r[1], r[2], r[3] == "1") for r in rows if len(r) == 4 and r[0] != "id"]


def _digest(salt: str, pair_id: str) -> bytes:
    return hashlib.sha256(f"{salt}:{pair_id}".encode()).digest()


def part_of(pair_id: str) -> str:
    """'held_aside' or 'tune', by a hash of the pair's id (fixed for ever)."""
    return "held_aside" if _digest("paws-split", pair_id)[0] < HELD_ASIDE_BYTE else "tune"


def sample(pairs: Sequence[PawsPair], part: str, n: int) -> list[PawsPair]:
    """The deterministic sample of `n` pairs of `part` (smallest sample hash first)."""
    members = [p for p in pairs if part_of(p.id) == part]
    return sorted(members, key=lambda p: _digest("paws-sample", p.id))[:n]


def decide(a: str, b: str, cosine: float, *, floor: float, related: float, judge: bool = True) -> Decision:
    """`classify` for candidate `a` against `b` as its only published neighbour."""
    return classify(
        content=a,
        content_hash=content_hash(a),
        canonical_key=None,
        neighbours=[Neighbour("b", "s", None, content_hash(b), cosine, "", b)],
        dup_threshold=floor,
        related_threshold=related if judge else 1.01,
        scope_key="s",
    )


@dataclass(frozen=True)
class Shares:
    """What the decision did with one part's pairs."""

    negatives: int
    paraphrases: int
    negatives_merged: float
    negatives_superseded: float
    paraphrases_merged: float
    paraphrases_superseded: float


def shares(pairs: Sequence[PawsPair], kinds: Sequence[DecisionKind]) -> Shares:
    """Shares of merged and superseded pairs, among different-meaning pairs and among paraphrases."""

    def share(paraphrase: bool, kind: DecisionKind) -> float:
        picked = [k for p, k in zip(pairs, kinds, strict=True) if p.paraphrase is paraphrase]
        return sum(1 for k in picked if k is kind) / len(picked) if picked else 0.0

    return Shares(
        negatives=sum(1 for p in pairs if not p.paraphrase),
        paraphrases=sum(1 for p in pairs if p.paraphrase),
        negatives_merged=share(False, DecisionKind.DUPLICATE),
        negatives_superseded=share(False, DecisionKind.SUPERSEDE),
        paraphrases_merged=share(True, DecisionKind.DUPLICATE),
        paraphrases_superseded=share(True, DecisionKind.SUPERSEDE),
    )


def paws_cosines(pairs: Sequence[PawsPair], embedder: object) -> list[float]:
    """Passage-embedding cosines, cached in tests/bench/.cache/ by embedder and texts."""
    model_id = str(embedder.model_id)  # type: ignore[attr-defined]
    CACHE_DIR.mkdir(exist_ok=True)
    path = CACHE_DIR / f"paws_cosines_{hashlib.sha256(model_id.encode()).hexdigest()[:12]}.json"
    cache: dict[str, float] = json.loads(path.read_text()) if path.exists() else {}

    def key(p: PawsPair) -> str:
        return hashlib.sha256(f"{p.a}\x1e{p.b}".encode()).hexdigest()[:20]

    missing = [p for p in pairs if key(p) not in cache]
    if missing:
        texts = sorted({t for p in missing for t in (p.a, p.b)})
        print(f"embedding {len(texts)} texts ...", flush=True)
        vectors = embedder.embed_passages(texts)  # type: ignore[attr-defined]
        index = {t: i for i, t in enumerate(texts)}
        for p in missing:
            cache[key(p)] = round(float(vectors[index[p.a]] @ vectors[index[p.b]]), 5)
        path.write_text(json.dumps(cache, sort_keys=True))
    return [cache[key(p)] for p in pairs]


def cost(pairs: Sequence[PawsPair]) -> None:
    """µs per pair of the merge veto: the rules alone (material and order difference, the same-run
    baseline) against the shipped veto (rules and the learned order model), and of `classify` whole;
    caches cleared before each pass, best of three passes."""
    import time

    from governance.dedup import _refused
    from governance.wording.canonical import canonical_aliases
    from governance.wording.differences import material_difference
    from governance.wording.order import order_difference

    def rules(a: str, b: str) -> object:
        return material_difference(a, b) or order_difference(a, b)

    def whole(a: str, b: str) -> object:
        return decide(a, b, 0.95, floor=0.79, related=0.85)

    timings = {}
    for name, step in (("rules alone", rules), ("shipped veto", _refused), ("classify", whole)):
        best = float("inf")
        for _ in range(3):
            canonical_aliases.cache_clear()
            start = time.perf_counter()
            for p in pairs:
                step(p.a, p.b)
            best = min(best, (time.perf_counter() - start) / len(pairs) * 1e6)
        timings[name] = best
    base = timings["rules alone"]
    print(f"cost per pair on {len(pairs)} tune pairs (best of 3):")
    for name, us in timings.items():
        print(f"  {name}: {us:.0f} µs/pair ({us / base:.2f} of the rules alone)")


def _row(name: str, s: Shares) -> str:
    return (
        f"| {name} | {s.negatives} | **{s.negatives_merged:.3f}** | {s.negatives_superseded:.3f} "
        f"| {s.paraphrases} | **{s.paraphrases_merged:.3f}** | {s.paraphrases_superseded:.3f} |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    from governance.adapters.embedders import make_embedder
    from governance.config import Settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-part", type=int, default=1500)
    parser.add_argument("--skip-labelled", action="store_true", help="PAWS only")
    parser.add_argument(
        "--parts",
        default="tune,held_aside",
        help="which parts to measure (comma-separated): while tuning, measure `tune` alone",
    )
    args = parser.parse_args(argv)
    settings = Settings()
    embedder = make_embedder(settings)
    floor, related = settings.dedup_similarity_threshold, settings.related_similarity_threshold
    pairs = load_paws()
    print(f"embedder: {embedder.model_id}; PAWS dev {len(pairs)} pairs; floor {floor}, related {related}")
    print()
    print("| part | different-meaning | merged | superseded | paraphrases | merged | superseded |")
    print("|---|---|---|---|---|---|---|")
    for part in args.parts.split(","):
        picked = sample(pairs, part, args.per_part)
        sims = paws_cosines(picked, embedder)
        bare = [
            DecisionKind.DUPLICATE if s >= 0.92 else DecisionKind.NEW for s in sims
        ]  # the same-run baseline: the bare cosine at 0.92
        kinds = [
            decide(p.a, p.b, s, floor=floor, related=related).kind for p, s in zip(picked, sims, strict=True)
        ]
        print(_row(f"{part}: cosine >= 0.92 alone", shares(picked, bare)))
        print(_row(f"{part}: shipped", shares(picked, kinds)))
    print()
    cost(sample(pairs, "tune", args.per_part))
    print()
    print(
        f"targets on held_aside: different-meaning merged <= {TARGET_NEGATIVES_MERGED}, "
        f"paraphrases merged >= {TARGET_PARAPHRASES_MERGED}"
    )
    if not args.skip_labelled:
        import sys

        from tests.bench import calibrate_dedup

        print()
        sys.argv = [sys.argv[0]]
        calibrate_dedup.main()


if __name__ == "__main__":
    main()

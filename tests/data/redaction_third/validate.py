"""Check the third redaction corpus is well formed (run from anywhere: ``python validate.py``).

- every record has its fields, a known half, and an id used once across both files;
- every listed secret occurs verbatim in its own text and is at least 6 characters long;
- a family sits wholly in one half;
- no near-miss text contains any listed secret;
- card numbers listed as secrets pass the Luhn check.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def luhn_ok(num: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(num)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def load(name: str) -> list[dict[str, object]]:
    with open(HERE / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main() -> int:
    secrets = load("secrets.jsonl")
    near = load("near_misses.jsonl")
    errors: list[str] = []
    seen: set[str] = set()
    half_of: dict[str, str] = {}
    for rec, keys in [(s, ("id", "family", "source", "text", "secrets", "half")) for s in secrets] + [
        (n, ("id", "family", "source", "text", "half")) for n in near
    ]:
        missing = [k for k in keys if k not in rec]
        if missing:
            errors.append(f"{rec.get('id')}: missing {missing}")
            continue
        rid, fam, half = str(rec["id"]), str(rec["family"]), str(rec["half"])
        if rid in seen:
            errors.append(f"duplicate id {rid}")
        seen.add(rid)
        if half not in ("tune", "heldout"):
            errors.append(f"{rid}: half {half!r}")
        kind = "s:" if "secrets" in keys else "n:"
        if half_of.setdefault(kind + fam, half) != half:
            errors.append(f"{rid}: family {fam} split across halves")
    pieces: list[str] = []
    for s in secrets:
        listed = s["secrets"]
        assert isinstance(listed, list)
        if not listed:
            errors.append(f"{s['id']}: no secrets listed")
        for piece in listed:
            if len(piece) < 6:
                errors.append(f"{s['id']}: secret {piece!r} shorter than 6")
            if piece not in str(s["text"]):
                errors.append(f"{s['id']}: secret not verbatim in text: {piece[:30]}")
            digits = re.sub(r"[ -]", "", piece)
            if s["family"] == "payment-card" and digits.isdigit() and not luhn_ok(digits):
                errors.append(f"{s['id']}: card fails Luhn")
            pieces.append(piece)
    for n in near:
        for piece in pieces:
            if piece in str(n["text"]):
                errors.append(f"{n['id']}: near-miss contains a listed secret {piece[:30]}")
    for e in errors:
        print(e)
    fams = {str(s["family"]) for s in secrets}
    print(
        f"{len(secrets)} secret records ({len(pieces)} pieces, {len(fams)} families), "
        f"{len(near)} near-misses; {len(errors)} errors"
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Check the fourth redaction corpus. Run: python tests/data/redaction_fourth/validate.py"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_corpus import b58check_ok, iban_ok, luhn_ok  # noqa: E402

SECRET_FIELDS = {"id", "family", "source", "text", "secrets", "half"}
NEAR_FIELDS = {"id", "family", "source", "text", "half"}
THIRD_PREFIXES = ("q3-", "t3-", "third-")


def load(name: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in (HERE / name).read_text(encoding="utf-8").splitlines() if line]


def main() -> int:
    errors: list[str] = []
    secrets = load("secrets.jsonl")
    nears = load("near_misses.jsonl")
    ids: Counter[str] = Counter()
    fam_half: dict[tuple[str, str], set[str]] = {}
    pieces: list[str] = []
    for kind, rows, fields in (("secret", secrets, SECRET_FIELDS), ("near", nears, NEAR_FIELDS)):
        for row in rows:
            rid = str(row.get("id"))
            if set(row) != fields:
                errors.append(f"{rid}: fields {sorted(row)}")
                continue
            for f in fields - {"secrets"}:
                if not isinstance(row[f], str) or not row[f]:
                    errors.append(f"{rid}: empty or non-string {f}")
            ids[rid] += 1
            if not rid.startswith("q4-") or rid.startswith(THIRD_PREFIXES):
                errors.append(f"{rid}: id must start with q4-")
            if row["half"] not in ("tune", "heldout"):
                errors.append(f"{rid}: bad half {row['half']}")
            fam_half.setdefault((kind, str(row["family"])), set()).add(str(row["half"]))
            if kind == "secret":
                listed = row["secrets"]
                if not isinstance(listed, list) or not listed:
                    errors.append(f"{rid}: secrets must be a non-empty list")
                    continue
                for s in listed:
                    if not isinstance(s, str) or len(s) < 6:
                        errors.append(f"{rid}: secret shorter than 6: {s!r}")
                    elif s not in str(row["text"]):
                        errors.append(f"{rid}: secret not verbatim in text: {s!r}")
                    else:
                        pieces.append(s)
                        check_sum(rid, str(row["family"]), s, errors)
    for rid, n in ids.items():
        if n > 1:
            errors.append(f"{rid}: duplicate id")
    for (kind, family), hs in fam_half.items():
        if len(hs) != 1:
            errors.append(f"{kind} family {family} spans halves {sorted(hs)}")
    for row in nears:
        for s in pieces:
            if s in str(row["text"]):
                errors.append(f"{row['id']}: near-miss contains listed secret {s!r}")
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} problem(s)")
        return 1
    print(f"ok: {len(secrets)} secret records, {len(pieces)} pieces, {len(nears)} near-misses")
    return 0


def check_sum(rid: str, family: str, s: str, errors: list[str]) -> None:
    if family.startswith("card-number") and not luhn_ok(s):
        errors.append(f"{rid}: card fails Luhn")
    if family.startswith("iban") and not (re.fullmatch(r"[A-Z]{2}\d{2}[0-9A-Z ]+", s) and iban_ok(s)):
        errors.append(f"{rid}: IBAN fails mod-97")
    if family == "bitcoin-wif-key" and not b58check_ok(s):
        errors.append(f"{rid}: WIF fails base58check")


if __name__ == "__main__":
    sys.exit(main())

"""Check the eighth redaction corpus: fields, ids, secrets in their texts, the split rule, reproducibility.

    python tests/data/redaction_eighth/validate.py

Exits 1 with one line per problem, or prints the counts per half.
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import json
import math
import random
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import cast

HERE = Path(__file__).resolve().parent
SPLIT_SEED = 8022
MIN_SECRET_LEN = 6
SECRET_FIELDS = ("id", "family", "source", "text", "secrets", "half")
NEAR_FIELDS = ("id", "family", "source", "text", "half")
BASIC = re.compile(r"Basic ([A-Za-z0-9+/=]{8,})")
EMAIL = re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$")
PHONE = re.compile(r"^\+?[\d ()./-]{7,}$")


def load(name: str) -> list[dict[str, object]]:
    with (HERE / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def expected_halves(families: set[str]) -> dict[str, str]:
    names = sorted(families)
    random.Random(SPLIT_SEED).shuffle(names)
    cut = math.ceil(len(names) / 2)
    return {n: ("tune" if i < cut else "heldout") for i, n in enumerate(names)}


def check_fields(
    rows: list[dict[str, object]], fields: tuple[str, ...], prefix: str, errors: list[str]
) -> None:
    for row in rows:
        rid = str(row.get("id", "?"))
        for f in fields:
            if not row.get(f):
                errors.append(f"{rid}: field {f!r} missing or empty")
        if set(row) - set(fields):
            errors.append(f"{rid}: unexpected fields {sorted(set(row) - set(fields))}")
        if not rid.startswith(prefix):
            errors.append(f"{rid}: id does not start with {prefix!r}")
        if row.get("half") not in ("tune", "heldout"):
            errors.append(f"{rid}: half {row.get('half')!r} is neither tune nor heldout")
        if not str(row.get("source", "")).startswith("https://"):
            errors.append(f"{rid}: source is not an https URL")


def check_split(rows: list[dict[str, object]], what: str, errors: list[str]) -> None:
    halves_seen: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        halves_seen[str(row["family"])].add(str(row["half"]))
    for fam, hs in halves_seen.items():
        if len(hs) != 1:
            errors.append(f"{what} family {fam} sits in both halves")
    expected = expected_halves(set(halves_seen))
    for fam, hs in halves_seen.items():
        if hs != {expected[fam]}:
            errors.append(
                f"{what} family {fam} is in {sorted(hs)}, the split rule puts it in {expected[fam]}"
            )


def check_basic_auth(row: dict[str, object], errors: list[str]) -> None:
    """A listed `Basic` credential must decode to user:password, or the record tests nothing real."""
    for m in BASIC.finditer(str(row["text"])):
        value = m[1]
        if value not in row["secrets"]:  # type: ignore[operator]
            continue
        try:
            decoded = base64.b64decode(value, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            errors.append(f"{row['id']}: Basic value does not decode")
            continue
        if ":" not in decoded:
            errors.append(f"{row['id']}: Basic value decodes without a colon")


def check_not_contact_details(row: dict[str, object], errors: list[str]) -> None:
    """E-mail addresses and phone numbers are personal data, not secrets: this corpus never lists them.

    A spaced-out recovery code (`6291 7741`) is a secret, so only values with a `+` or more than 9 digits
    count as phone numbers here.
    """
    for s in row["secrets"]:  # type: ignore[attr-defined]
        value = str(s)
        digits = sum(c.isdigit() for c in value)
        if EMAIL.match(value) or (PHONE.match(value) and (value.startswith("+") or digits > 9)):
            errors.append(f"{row['id']}: secret {value[:12]!r}… is contact data, not a secret")


def check_id_names_family(row: dict[str, object], prefix: str, errors: list[str]) -> None:
    """An id reads `<prefix><family>-<n>`, so a record's family can be read off its id in a report."""
    if not re.fullmatch(rf"{re.escape(prefix)}{re.escape(str(row.get('family')))}-\d+", str(row.get("id"))):
        errors.append(f"{row.get('id')}: id does not read {prefix}{row.get('family')}-<n>")


def load_generator() -> object:
    """Import make_corpus.py by path under its own name: another corpus's `make_corpus` cannot shadow it."""
    spec = importlib.util.spec_from_file_location("redaction_eighth_make_corpus", HERE / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and typing look the module up while it executes
    spec.loader.exec_module(module)
    return module


def check_reproducible(errors: list[str]) -> None:
    secrets_out, near_out = load_generator().records()  # type: ignore[attr-defined]
    for name, rows in (("secrets.jsonl", secrets_out), ("near_misses.jsonl", near_out)):
        want = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        if (HERE / name).read_text(encoding="utf-8") != want:
            errors.append(f"{name} differs from what make_corpus.py writes; rerun it")


def check_rows(secrets: list[dict[str, object]], near: list[dict[str, object]]) -> list[str]:
    """Every problem with these rows, one line each; reproducibility is checked separately."""
    errors: list[str] = []
    check_fields(secrets, SECRET_FIELDS, "q8-s-", errors)
    check_fields(near, NEAR_FIELDS, "q8-n-", errors)
    for row in secrets:
        check_id_names_family(row, "q8-s-", errors)
    for row in near:
        check_id_names_family(row, "q8-n-", errors)
    ids = [str(r["id"]) for r in secrets + near]
    if len(ids) != len(set(ids)):
        errors.append("ids are not unique across both files")

    all_secrets: set[str] = set()
    for row in secrets:
        listed = row["secrets"]
        if not isinstance(listed, list) or not listed:
            errors.append(f"{row['id']}: secrets must be a non-empty list")
            continue
        for s in listed:
            if not isinstance(s, str) or len(s) < MIN_SECRET_LEN:
                errors.append(f"{row['id']}: secret {s!r} shorter than {MIN_SECRET_LEN}")
            elif s not in str(row["text"]):
                errors.append(f"{row['id']}: secret {s[:12]!r}… not in its text")
            all_secrets.add(str(s))
        check_basic_auth(row, errors)
        check_not_contact_details(row, errors)

    for row in near:
        for s in all_secrets:
            if s in str(row["text"]):
                errors.append(f"{row['id']}: near-miss contains a listed secret {s[:12]!r}…")

    check_split(secrets, "secret", errors)
    check_split(near, "near-miss", errors)
    return errors


def problems() -> list[str]:
    """Every problem with the corpus on disk, including a difference from what make_corpus.py writes."""
    errors = check_rows(load("secrets.jsonl"), load("near_misses.jsonl"))
    check_reproducible(errors)
    return errors


def main() -> int:
    secrets = load("secrets.jsonl")
    near = load("near_misses.jsonl")
    errors = problems()
    if errors:
        print("\n".join(errors))
        return 1
    for half in ("tune", "heldout"):
        s_rows = [r for r in secrets if r["half"] == half]
        n_rows = [r for r in near if r["half"] == half]
        pieces = sum(len(cast(list[str], r["secrets"])) for r in s_rows)
        print(
            f"{half:8} secrets {len(s_rows):4} records {pieces:4} pieces "
            f"{len({r['family'] for r in s_rows}):4} families | near-misses {len(n_rows):3} records "
            f"{len({r['family'] for r in n_rows}):3} families"
        )
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The sixth, seventh and eighth redaction corpora stay valid: these tests run validators, never the redactor.

Each corpus (tests/data/redaction_sixth, tests/data/redaction_seventh, tests/data/redaction_eighth) was
written blind to the redaction rules so that it measures them honestly; scoring the redactor against it
belongs to the bench, not to CI.
What CI guards is the data itself: every listed secret occurs in its text, no near-miss carries a secret,
whole families sit in the half the split rule gives them, and the files are exactly what make_corpus.py
writes. The checks every validator makes run on each corpus; a corpus's own checks on it alone.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
CORPORA = ["redaction_sixth", "redaction_seventh", "redaction_eighth"]


@pytest.fixture(scope="module", params=CORPORA)
def corpus(request: pytest.FixtureRequest) -> str:
    """The corpus a test runs on: each of them, for the checks every validator makes."""
    return str(request.param)


@pytest.fixture(scope="module")
def validate(corpus: str) -> ModuleType:
    """validate.py loaded by path under its own name: no other corpus's module of that name can stand in."""
    spec = importlib.util.spec_from_file_location(f"{corpus}_validate", DATA / corpus / "validate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows(validate: ModuleType) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    return validate.load("secrets.jsonl"), validate.load("near_misses.jsonl")


def test_the_corpus_on_disk_has_no_problems(validate: ModuleType) -> None:
    assert validate.problems() == []


def test_the_corpus_keeps_its_size(
    rows: tuple[list[dict[str, object]], list[dict[str, object]]],
) -> None:
    secrets, near = rows
    assert len(secrets) >= 150
    assert len({r["family"] for r in secrets}) >= 60
    assert len(near) >= 40
    for half in ("tune", "heldout"):
        assert sum(r["half"] == half for r in secrets) >= 60


def test_a_secret_missing_from_its_text_is_reported(
    validate: ModuleType, rows: tuple[list[dict[str, object]], list[dict[str, object]]]
) -> None:
    secrets, near = copy.deepcopy(rows)
    row = secrets[0]
    listed = row["secrets"]
    assert isinstance(listed, list)
    row["text"] = str(row["text"]).replace(listed[0], "[gone]")
    errors = validate.check_rows(secrets, near)
    assert any(f"{row['id']}: secret" in e and "not in its text" in e for e in errors)


def test_a_near_miss_carrying_a_listed_secret_is_reported(
    validate: ModuleType, rows: tuple[list[dict[str, object]], list[dict[str, object]]]
) -> None:
    secrets, near = copy.deepcopy(rows)
    listed = secrets[0]["secrets"]
    assert isinstance(listed, list)
    near[0]["text"] = f"{near[0]['text']} {listed[0]}"
    assert any("near-miss contains a listed secret" in e for e in validate.check_rows(secrets, near))


def test_a_family_moved_to_the_other_half_is_reported(
    validate: ModuleType, rows: tuple[list[dict[str, object]], list[dict[str, object]]]
) -> None:
    secrets, near = copy.deepcopy(rows)
    family = secrets[0]["family"]
    for row in secrets:
        if row["family"] == family:
            row["half"] = "heldout" if row["half"] == "tune" else "tune"
    assert any(f"family {family} is in" in e for e in validate.check_rows(secrets, near))


@pytest.mark.parametrize("corpus", ["redaction_sixth"], indirect=True)
def test_a_basic_credential_without_a_colon_is_reported(
    validate: ModuleType, rows: tuple[list[dict[str, object]], list[dict[str, object]]]
) -> None:
    secrets, near = copy.deepcopy(rows)
    row = next(r for r in secrets if "Basic " in str(r["text"]))
    listed = row["secrets"]
    assert isinstance(listed, list)
    colonless = "bm9jb2xvbmhlcmU="  # base64 of "nocolonhere"
    row["text"] = str(row["text"]).replace(listed[0], colonless)
    row["secrets"] = [colonless]
    assert any("decodes without a colon" in e for e in validate.check_rows(secrets, near))


@pytest.mark.parametrize("corpus", ["redaction_seventh"], indirect=True)
def test_an_auth_plain_credential_without_two_fields_is_reported(
    validate: ModuleType, rows: tuple[list[dict[str, object]], list[dict[str, object]]]
) -> None:
    secrets, near = copy.deepcopy(rows)
    row = next(r for r in secrets if "AUTH PLAIN " in str(r["text"]))
    listed = row["secrets"]
    assert isinstance(listed, list)
    one_field = "dXNlcm9ubHk="  # base64 of "useronly"
    row["text"] = str(row["text"]).replace(listed[0], one_field)
    row["secrets"] = [one_field]
    assert any("two NUL-separated fields" in e for e in validate.check_rows(secrets, near))


@pytest.mark.parametrize("corpus", ["redaction_seventh"], indirect=True)
@pytest.mark.parametrize("contact", ["ops.oncall@example.com", "+44 20 7946 0958"])
def test_contact_details_listed_as_a_secret_are_reported(
    validate: ModuleType, rows: tuple[list[dict[str, object]], list[dict[str, object]]], contact: str
) -> None:
    secrets, near = copy.deepcopy(rows)
    row = secrets[0]
    row["text"] = f"{row['text']}\ncall {contact}"
    row["secrets"] = [*row["secrets"], contact]  # type: ignore[misc]
    assert any("is contact data, not a secret" in e for e in validate.check_rows(secrets, near))


@pytest.mark.parametrize("corpus", ["redaction_seventh"], indirect=True)
def test_a_spaced_recovery_code_is_not_taken_for_a_phone_number(
    validate: ModuleType, rows: tuple[list[dict[str, object]], list[dict[str, object]]]
) -> None:
    secrets, _ = rows
    spaced = [s for r in secrets for s in r["secrets"] if " " in s and s.replace(" ", "").isdigit()]  # type: ignore[attr-defined]
    assert spaced, "the corpus lists spaced digit codes"
    assert not any("contact data" in e for e in validate.check_rows(*copy.deepcopy(rows)))


@pytest.mark.parametrize("corpus", ["redaction_seventh"], indirect=True)
def test_an_id_that_does_not_name_its_family_is_reported(
    validate: ModuleType, rows: tuple[list[dict[str, object]], list[dict[str, object]]]
) -> None:
    secrets, near = copy.deepcopy(rows)
    near[0]["id"] = "q7-n-some_other_family-1"
    assert any("q7-n-some_other_family-1: id does not read" in e for e in validate.check_rows(secrets, near))

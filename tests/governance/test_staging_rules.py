"""The pure staging rules: limits at their exact boundaries, NUL refusal, retry fingerprints, task ids."""

from __future__ import annotations

import hashlib
import json

import pytest

from governance.errors import InvalidInput, LimitExceeded
from governance.scopes import EntryKind
from governance.staging import (
    EntryDraft,
    entry_size,
    prepare_batch,
    request_hash,
    validate_batch,
    validate_task_id,
)


def _draft(content: str = "x", payload: object = None, key: str | None = None) -> EntryDraft:
    return EntryDraft(kind=EntryKind.LOG, content=content, payload=payload, idempotency_key=key)


def test_validate_batch_accepts_entry_at_exact_size_limit() -> None:
    validate_batch([_draft("a" * 100)], max_entry_bytes=100, max_batch_entries=5)


def test_validate_batch_refuses_entry_one_byte_over() -> None:
    with pytest.raises(LimitExceeded, match=r"entries\[0\] is 101 bytes .* over the limit of 100"):
        validate_batch([_draft("a" * 101)], max_entry_bytes=100, max_batch_entries=5)


def test_entry_size_counts_utf8_bytes_of_content_and_payload() -> None:
    assert entry_size(_draft("가나")) == 6
    assert entry_size(_draft("ab", payload={"k": 1})) == 2 + len('{"k":1}')


def test_validate_batch_accepts_batch_at_exact_limit_and_refuses_one_more() -> None:
    validate_batch([_draft()] * 5, max_entry_bytes=100, max_batch_entries=5)
    with pytest.raises(LimitExceeded, match="batch of 6 entries exceeds the limit of 5"):
        validate_batch([_draft()] * 6, max_entry_bytes=100, max_batch_entries=5)


def test_validate_batch_refuses_empty_batch() -> None:
    with pytest.raises(InvalidInput, match="at least one entry"):
        validate_batch([], max_entry_bytes=100, max_batch_entries=5)


@pytest.mark.parametrize(
    "draft",
    [
        _draft("a\x00b"),
        _draft(payload={"deep": [{"x": "\x00"}]}),
        _draft(payload={"k\x00": 1}),
        _draft(key="k\x00"),
    ],
    ids=["content", "nested-payload-value", "payload-key", "idempotency-key"],
)
def test_validate_batch_refuses_nul_anywhere(draft: EntryDraft) -> None:
    with pytest.raises(InvalidInput, match=r"entries\[1\] contains a NUL character"):
        validate_batch([_draft(), draft], max_entry_bytes=1000, max_batch_entries=5)


def test_validate_batch_refuses_repeated_idempotency_key() -> None:
    with pytest.raises(InvalidInput, match=r"entries\[2\] repeats idempotency key 'k'"):
        validate_batch([_draft(key="k"), _draft(), _draft(key="k")], max_entry_bytes=100, max_batch_entries=5)


def test_request_hash_ignores_payload_key_order_and_idempotency_key() -> None:
    a = EntryDraft(EntryKind.LOG, "c", {"a": 1, "b": [1, 2]}, "k1")
    b = EntryDraft(EntryKind.LOG, "c", {"b": [1, 2], "a": 1}, "k2")
    assert request_hash(a) == request_hash(b)


@pytest.mark.parametrize(
    "other",
    [
        EntryDraft(EntryKind.THOUGHT, "c", {"a": 1}),
        EntryDraft(EntryKind.LOG, "c ", {"a": 1}),
        EntryDraft(EntryKind.LOG, "c", {"a": 2}),
        EntryDraft(EntryKind.LOG, "c", None),
    ],
    ids=["kind", "content", "payload", "no-payload"],
)
def test_request_hash_changes_with_kind_content_or_payload(other: EntryDraft) -> None:
    assert request_hash(EntryDraft(EntryKind.LOG, "c", {"a": 1})) != request_hash(other)


@pytest.mark.parametrize("task_id", ["a", "task-1", "T.2_x:y-z", "9" * 128])
def test_validate_task_id_accepts_safe_ids(task_id: str) -> None:
    validate_task_id(task_id)


@pytest.mark.parametrize("task_id", ["", "-a", ".a", "a b", "a/b", "a\x00", "9" * 129, "é"])
def test_validate_task_id_refuses_unsafe_ids(task_id: str) -> None:
    with pytest.raises(InvalidInput, match="task id .* is invalid"):
        validate_task_id(task_id)


@pytest.mark.parametrize(
    ("content", "payload"),
    [
        ("plain", None),
        (
            'quotes " and \\ backslashes, \n newlines, \x01 controls, é, \U0001f600, \u2028',
            {"z": [1, 2.5, None]},
        ),
        ("", {"nested": {"b": True, "a": "é"}, "list": []}),
    ],
)
def test_request_hash_is_the_hash_stored_entries_carry(content: str, payload: object) -> None:
    # written out by hand for speed; a retry after an upgrade must still match the hash stored before it
    draft = EntryDraft(kind=EntryKind.LOG, content=content, payload=payload)
    stored_form = json.dumps([draft.kind.value, draft.content, draft.payload_json], ensure_ascii=False)
    assert request_hash(draft) == hashlib.sha256(stored_form.encode("utf-8")).hexdigest()


_TRICKY = [
    EntryDraft(EntryKind.LOG, "plain ascii", None),
    EntryDraft(
        EntryKind.TOOL_OUTPUT,
        'quotes " and \\ backslashes\n\t\r\b\f \x01\x1f\x7f',
        {"b": 1, "a": [1.5, None]},
    ),
    EntryDraft(
        EntryKind.DECISION, "한국어 und Ümlaut \u2028\u2029 🙂", {"키": "값", "e": "🙂", "n": -0.0}, "key-1"
    ),
    EntryDraft(EntryKind.ERROR, "", 'a bare string payload "quoted"', "키-2"),
    EntryDraft(EntryKind.FACT, "x", [1, 2, {"z": True, "y": False}], None),
    EntryDraft(EntryKind.THOUGHT, "big ints", {"n": 2**80, "f": 1e300, "g": 1e-7}, "k3"),
]


def test_prepare_batch_matches_the_entry_by_entry_functions_byte_for_byte() -> None:
    # the fused pass must store exactly what the separate functions did: retry hashes stay comparable with
    # rows written before it, and the row text is what `json.dumps` wrote for the append statement
    prepared = validate_batch(list(_TRICKY), max_entry_bytes=10_000, max_batch_entries=10)
    assert prepared.hashes == [request_hash(d) for d in _TRICKY]
    assert prepared.sizes == [entry_size(d) for d in _TRICKY]
    expected = json.dumps(
        [[d.kind.value, d.content, d.payload_json, d.idempotency_key, request_hash(d)] for d in _TRICKY],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert prepared.rows_json() == expected
    assert prepared.rows_json([4, 1]) == json.dumps(
        [json.loads(expected)[4], json.loads(expected)[1]], ensure_ascii=False, separators=(",", ":")
    )
    assert prepare_batch(list(_TRICKY)) == prepared


def test_prepare_batch_refuses_what_cannot_be_stored_without_limits() -> None:
    # entries the platform stages itself have no size limit, but U+0000 and a repeated key are refused
    assert prepare_batch([_draft("a" * 100_000)]).sizes == [100_000]
    with pytest.raises(InvalidInput, match=r"entries\[1\] contains a NUL character"):
        prepare_batch([_draft(), _draft("a\x00")])
    with pytest.raises(InvalidInput, match=r"entries\[1\] repeats idempotency key 'k'"):
        prepare_batch([_draft(key="k"), _draft(key="k")])

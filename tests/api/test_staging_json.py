"""The append path's msgspec decoder takes only what `EntriesIn` takes, and reads it as pydantic does.

Whatever it refuses goes to pydantic (and the route's 422), so refusing more is safe; accepting a body
`EntriesIn` refuses, or reading one differently, would store what the API documents as refused.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from api.schemas.staging import EntriesIn
from api.schemas.staging_json import convert_entries, decode_entries
from api.services.staging import drafts_of

BODIES = [
    b'{"entries":[{"kind":"log","content":"x"}]}',
    b'{"entries":[{"kind":"log","content":"x","payload":{"n":123456789012345678901234567890}}]}',
    b'{"entries":[{"kind":"log","content":"x","payload":{"n":1e400}}]}',
    b'{"entries":[{"kind":"log","content":"x","payload":-1e400}]}',
    b'{"entries":[{"kind":"log","content":"x","payload":NaN}]}',
    b'{"entries":[{"kind":"log","content":"x","payload":Infinity}]}',
    b'{"entries":[{"kind":"log","content":"\\ud800"}]}',
    b'{"entries":[{"kind":"log","content":"\\udc80 low"}]}',
    b'{"entries":[{"kind":"log","content":"\\ud83d\\ude00"}]}',
    b'{"entries":[{"kind":"log","content":"a","content":"b"}]}',
    b'{"entries":[{"kind":"log","content":"a","payload":{"k":1,"k":2}}]}',
    b'\xef\xbb\xbf{"entries":[{"kind":"log","content":"a"}]}',
    b'{"entries":[{"kind":"log","content":"a","idempotency_key":""}]}',
    b'{"entries":[{"kind":"log","content":"a","idempotency_key":"' + b"k" * 200 + b'"}]}',
    b'{"entries":[{"kind":"log","content":"a","idempotency_key":"' + b"k" * 201 + b'"}]}',
    b'{"entries":[{"kind":"log","content":"a","idempotency_key":"\\ud800"}]}',
    b'{"entries":[{"kind":"log","content":"a","idempotency_key":null}]}',
    b'{"entries":[{"kind":"nope","content":"a"}]}',
    b'{"entries":[{"kind":"log","content":"a","actor":"x"}]}',
    b'{"entries":[{"kind":"log","content":"a"}],"task_id":"t"}',
    b'{"entries":[{"kind":"log"}]}',
    b'{"entries":[{"kind":"log","content":5}]}',
    b'{"entries":[{"kind":"log","content":null}]}',
    b'{"entries":[]}',
    b'{"entries":{}}',
    b"[]",
    b"",
    b'{"entries":[{"kind":"log","content":"a\\u0000"}]}',
    b'{"entries":[{"kind":"log","content":"a","payload":-0.0}]}',
    b'{"entries":[{"kind":"log","content":"a","payload":1E5}]}',
    b'{"entries":[{"kind":"log","content":"a","payload":[1,2,{"x":"\xed\xa0\x80"}]}]}',
    b'{"entries":[{"kind":"log","content":"\xff"}]}',
    b'{"entries":[{"kind":"log","content":"a"}]} ',
    b'{"entries":[{"kind":"log","content":"a"}]} x',
    b'{"entries":[{"kind":"log","content":"a","payload":{"\\ud800":1}}]}',
    b'{"entries":[{"kind":"log","content":"a","payload":' + b"[" * 100 + b"]" * 100 + b"}]}",
    b'{"entries":[{"kind":"log","content":"a","payload":' + b"[" * 101 + b"]" * 101 + b"}]}",
    b'{"entries":[{"kind":"log","content":"a","payload":' + b"[" * 5000 + b"]" * 5000 + b"}]}",
    b'{"entries":[{"kind":"log","content":"\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4","payload":{"\xed\x82\xa4":"v"}}]}',
    b'{"entries":[{"kind":"decision","content":"a","payload":"text"},{"kind":"skill","content":"b"}]}',
]


@pytest.mark.parametrize("raw", BODIES, ids=range(len(BODIES)))
def test_decode_entries_takes_only_what_entries_in_takes_and_reads_it_alike(raw: bytes) -> None:
    decoded = decode_entries(raw)
    try:
        expected = drafts_of(EntriesIn.model_validate_json(raw))
    except ValidationError:
        assert decoded is None  # the route's 422 answers it
        return
    if decoded is not None:
        assert decoded == expected
        assert [type(d.payload) for d in decoded] == [type(d.payload) for d in expected]


def test_decode_entries_takes_the_common_batch() -> None:
    raw = (
        b'{"entries":['
        + b",".join([b'{"kind":"tool_output","content":"ran","payload":{"ok":true}}'] * 100)
        + b"]}"
    )
    decoded = decode_entries(raw)
    assert decoded is not None and len(decoded) == 100 and decoded[0].payload == {"ok": True}


ENTRY_LISTS: list[list[dict[str, object]]] = [
    [{"kind": "log", "content": "x"}],
    [{"kind": "log", "content": "x", "payload": {"n": 2**80, "f": 1.5, "s": "한"}}],
    [{"kind": "log", "content": "\ud800"}],
    [{"kind": "log", "content": "x", "payload": float("nan")}],
    [{"kind": "log", "content": "x", "payload": [float("inf")]}],
    [{"kind": "log", "content": "x", "payload": {"\udc80": 1}}],
    [{"kind": "log", "content": 5}],
    [{"kind": "log", "content": None}],
    [{"kind": "nope", "content": "a"}],
    [{"kind": "log", "content": "a", "actor": "x"}],
    [{"kind": "log", "content": "a", "idempotency_key": ""}],
    [{"kind": "log", "content": "a", "idempotency_key": "k" * 201}],
    [{"kind": "log", "content": "a", "idempotency_key": "\ud800"}],
    [{"kind": "log", "content": "a", "payload": {1: "non-string key"}}],
    [],
]


@pytest.mark.parametrize("entries", ENTRY_LISTS, ids=range(len(ENTRY_LISTS)))
def test_convert_entries_takes_only_what_entries_in_takes_and_reads_it_alike(
    entries: list[dict[str, object]],
) -> None:
    converted = convert_entries(entries)
    try:
        expected = drafts_of(EntriesIn.model_validate({"entries": entries}))
    except ValidationError:
        assert converted is None  # gRPC's INVALID_ARGUMENT, as pydantic words it
        return
    if converted is not None:
        assert converted == expected

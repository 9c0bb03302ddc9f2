"""Webhook rules: signatures a receiver can check, and destinations that stay outside the private network."""

from __future__ import annotations

import pytest

from governance.errors import InvalidInput
from governance.webhooks import (
    check_destination,
    delivery_body,
    destination_host,
    is_public_address,
    sign,
    verify,
)


def test_webhook_signature_verifies_and_refuses_tampering_and_replays() -> None:
    body = delivery_body(7, "promotion.awaiting_approval", "k", {"task_id": "t-1"})
    signature = sign("whsec_a", 1_700_000_000, body)
    assert signature.startswith("sha256=") and len(signature) == 7 + 64
    assert verify("whsec_a", 1_700_000_000, body, signature, now=1_700_000_100)
    assert not verify("whsec_b", 1_700_000_000, body, signature, now=1_700_000_100)
    assert not verify("whsec_a", 1_700_000_000, body + b" ", signature, now=1_700_000_100)
    assert not verify("whsec_a", 1_700_000_001, body, signature, now=1_700_000_100)  # another timestamp
    assert not verify("whsec_a", 1_700_000_000, body, signature, now=1_700_000_000 + 301)  # too old


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("::1", False),
        ("10.1.2.3", False),
        ("172.16.0.9", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),  # cloud metadata
        ("100.64.0.1", False),  # carrier-grade NAT
        ("0.0.0.0", False),
        ("::ffff:127.0.0.1", False),  # IPv4-mapped loopback
        ("fd00::1", False),
        ("224.0.0.1", False),
    ],
)
def test_webhook_destination_must_be_public(address: str, public: bool) -> None:
    assert is_public_address(address) is public


def test_webhook_destination_check_refuses_bad_urls_and_private_resolutions() -> None:
    check_destination("https://hooks.example.com/x", ["93.184.216.34"], allow_private=False)
    check_destination("http://127.0.0.1:8000/x", ["127.0.0.1"], allow_private=True)
    refusals = [
        ("https://hooks.example.com/x", ["93.184.216.34", "10.0.0.1"]),  # one private answer is enough
        ("https://hooks.example.com/x", []),  # does not resolve
        ("ftp://hooks.example.com/x", ["93.184.216.34"]),
        ("https://user:pw@hooks.example.com/x", ["93.184.216.34"]),
        ("https:///x", ["93.184.216.34"]),
        ("http://[::1/x", ["93.184.216.34"]),
        ("http://hooks.example.com:99999/x", ["93.184.216.34"]),
    ]
    for url, resolved in refusals:
        with pytest.raises(InvalidInput):
            check_destination(url, resolved, allow_private=False)
    assert destination_host("https://Hooks.Example.com:8443/x") == "hooks.example.com"

"""The approval gate's rules: its timeouts, who must prove what (the mode), and the approval token.

Every workflow that waits for a human (a promotion into a scope that requires validation, a change
request) waits at most `APPROVAL_TIMEOUT_SECONDS` unless the settings say otherwise; this is the one
home of that default (and of the verification wait's).

**Modes** (`LOREGATE_APPROVAL_MODE`): what must prove that a claim arriving through Temporal (a start's
`requested_by`, a decision's `approver`) was sent by the principal it names.

- `authenticated` (the default): a start, evidence or decision counts only with proof: the gateway's grant
  (a row it writes for its authenticated caller) or, for a decision sent from the Temporal UI, an approval
  token the human obtained from loregate with their own key. Evidence comes through the API only.
- `api_only`: only the gateway's grants count; signals are refused outright.
- `trusting` (formerly `ui_or_api`, still accepted): a claim is checked against the principals table and
  the policy, but nothing proves who sent it. For a single local operator only.

**Approval tokens**: `lgat1.<payload>.<signature>`, the payload a base64url JSON object naming the
principal, the workflow, the digest of what is being decided (a promotion's plan, a change request's
content) and the expiry; the signature an HMAC-SHA256 under the server's secret. Minting and checking
are pure functions of the secret and the clock they are given.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "APPROVAL_TIMEOUT_SECONDS",
    "VERIFY_TIMEOUT_SECONDS",
    "TOKEN_TTL_SECONDS",
    "TOKEN_PREFIX",
    "ApprovalMode",
    "TokenClaims",
    "TokenRefused",
    "mint_token",
    "check_token",
    "digest_of",
]

# how long a promotion waits for evidence and for a decision, and a change request for its decision
VERIFY_TIMEOUT_SECONDS: float = 7 * 24 * 3600
APPROVAL_TIMEOUT_SECONDS: float = 7 * 24 * 3600
# an approval token is pasted into the Temporal UI right after it is minted: a short life is enough
TOKEN_TTL_SECONDS: float = 15 * 60
TOKEN_PREFIX = "lgat1"


class ApprovalMode(StrEnum):
    """What proves the sender of a claim arriving through Temporal (see the module's docstring)."""

    AUTHENTICATED = "authenticated"
    API_ONLY = "api_only"
    TRUSTING = "trusting"


@dataclass(frozen=True)
class TokenClaims:
    """What an approval token binds: who, which workflow, what state of the decided thing, until when."""

    principal: str
    workflow_id: str
    digest: str
    expires_at: float  # seconds since the epoch


class TokenRefused(ValueError):
    """A token that does not prove the decision it comes with (the message says why)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(secret: bytes, payload: str) -> str:
    return _b64(hmac.new(secret, f"{TOKEN_PREFIX}.{payload}".encode("ascii"), hashlib.sha256).digest())


def mint_token(secret: bytes, claims: TokenClaims) -> str:
    """The token for `claims`, signed under `secret`."""
    body = {"p": claims.principal, "w": claims.workflow_id, "h": claims.digest, "e": int(claims.expires_at)}
    payload = _b64(json.dumps(body, separators=(",", ":"), sort_keys=True).encode("utf-8"))
    return f"{TOKEN_PREFIX}.{payload}.{_sign(secret, payload)}"


def _claims(secret: bytes, token: str) -> TokenClaims:
    parts = token.strip().split(".")
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        raise TokenRefused("the approval token is malformed")
    payload, signature = parts[1], parts[2]
    if not hmac.compare_digest(_sign(secret, payload), signature):
        raise TokenRefused("the approval token's signature is not loregate's")
    try:
        body: Any = json.loads(_unb64(payload))
        return TokenClaims(str(body["p"]), str(body["w"]), str(body["h"]), float(body["e"]))
    except (ValueError, KeyError, TypeError) as err:  # signed by us, so never expected; still refused
        raise TokenRefused("the approval token is malformed") from err


def check_token(
    secret: bytes, token: str, *, principal: str, workflow_id: str, digest: str | None, now: float
) -> TokenClaims:
    """The token's claims when it proves that `principal` decides `workflow_id` in the state `digest`.

    Raises `TokenRefused` naming the first claim that does not hold: the signature, the expiry, the
    principal, the workflow, or the digest (what is decided changed after the token was minted).
    """
    claims = _claims(secret, token)
    if claims.expires_at <= now:
        raise TokenRefused("the approval token has expired; mint a new one")
    if claims.principal != principal:
        raise TokenRefused(f"the approval token was minted for another principal, not {principal!r}")
    if claims.workflow_id != workflow_id:
        raise TokenRefused("the approval token was minted for another workflow")
    if digest is None or not hmac.compare_digest(claims.digest, digest):
        raise TokenRefused("what is decided changed after the approval token was minted; mint a new one")
    return claims


def digest_of(parts: Iterable[object]) -> str:
    """sha256 (hex) over the JSON of `parts`: the state of what a token lets its holder decide."""
    text = json.dumps(list(parts), separators=(",", ":"), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

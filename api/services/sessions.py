"""The console's sign-in sessions: an API key in, a signed session token out, and its CSRF token.

The key is checked once, at sign-in, by the same authentication as every API call
(`principal_from_authorization`), and is never stored: the session token names the key by its public id
and carries an expiry and a random nonce, signed with HMAC-SHA256 under a secret derived from the key's
stored hash. So every gateway process (and host) verifies a session without shared state, nobody without
the key (or the database) can forge one, and revoking the key ends every session it opened. Each request
re-reads the key's principal, so a revoked key or a disabled principal is signed out at once.

The CSRF token is derived from the same secret and the session's nonce: one per session, checked with a
constant-time comparison on every state-changing request. Signing out forgets the session in this process
(`SessionBook`); the cookie is cleared, and the token expires after `LOREGATE_CONSOLE_SESSION_HOURS`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import deque
from dataclasses import dataclass, field

from api.services.gateway import GatewayResources, principal_from_authorization
from governance.errors import PolicyDenied, RateLimited, Unauthenticated
from governance.identity import Principal, key_id_of
from governance.storage.identity import principal_by_key_id

__all__ = [
    "ConsoleSession",
    "SessionBook",
    "sign_in",
    "session_from_token",
    "sign_out",
    "check_csrf",
    "SIGN_IN_FAILURES_ALLOWED",
    "SIGN_IN_WINDOW_SECONDS",
]

# failed sign-ins allowed per client address within the window, before it must wait
SIGN_IN_FAILURES_ALLOWED = 10
SIGN_IN_WINDOW_SECONDS = 300.0
_CONTEXT = b"loregate console session\x00"


@dataclass(frozen=True)
class ConsoleSession:
    """A signed-in console user: the key's principal, the key's public id, and the session's CSRF token."""

    principal: Principal
    key_id: str
    csrf_token: str
    expires_at: int
    nonce: str


@dataclass
class SessionBook:
    """What one gateway process remembers about console sessions: sign-outs and recent failed sign-ins."""

    ended: dict[str, int] = field(default_factory=dict)  # nonce -> expiry
    failures: dict[str, deque[float]] = field(default_factory=dict)  # client address -> failure times

    def throttle(self, client: str) -> None:
        """RateLimited while `client` has too many recent failed sign-ins."""
        recent = self._recent(client)
        if len(recent) >= SIGN_IN_FAILURES_ALLOWED:
            wait = int(recent[0] + SIGN_IN_WINDOW_SECONDS - time.monotonic()) + 1
            raise RateLimited(
                f"too many failed sign-ins from this address; try again in {wait} s", retry_after=wait
            )

    def failed(self, client: str) -> None:
        if len(self.failures) > 10_000:
            self.failures.clear()
        self._recent(client).append(time.monotonic())

    def _recent(self, client: str) -> deque[float]:
        recent = self.failures.setdefault(client, deque())
        while recent and recent[0] < time.monotonic() - SIGN_IN_WINDOW_SECONDS:
            recent.popleft()
        return recent

    def end(self, session: ConsoleSession) -> None:
        now = int(time.time())
        for nonce in [n for n, expiry in self.ended.items() if expiry < now]:
            del self.ended[nonce]
        self.ended[session.nonce] = session.expires_at


def _secret(key_hash: str) -> bytes:
    return hashlib.sha256(_CONTEXT + key_hash.encode("ascii")).digest()


def _sign(secret: bytes, message: str) -> str:
    return hmac.new(secret, message.encode("ascii"), hashlib.sha256).hexdigest()


async def sign_in(
    state: GatewayResources, book: SessionBook, client: str, api_key: str
) -> tuple[ConsoleSession, str]:
    """The session for a valid API key and its token (the cookie's value); failures are throttled."""
    book.throttle(client)
    try:
        principal = await principal_from_authorization(state, f"Bearer {api_key.strip()}")
    except Unauthenticated:
        book.failed(client)
        raise Unauthenticated("unknown or revoked API key") from None
    key_id = key_id_of(api_key.strip())
    if key_id is None:  # principal_from_authorization refused malformed keys already
        raise Unauthenticated("malformed API key")
    expires = int(time.time() + state.settings.console_session_hours * 3600)
    nonce = secrets.token_urlsafe(18)
    body = f"{key_id}.{expires}.{nonce}"
    async with state.engine.connect() as conn:
        found = await principal_by_key_id(conn, key_id)
    if found is None:  # revoked between the two reads
        raise Unauthenticated("unknown or revoked API key")
    secret = _secret(found[1])
    session = ConsoleSession(principal, key_id, _sign(secret, f"csrf.{nonce}"), expires, nonce)
    return session, f"{body}.{_sign(secret, body)}"


async def session_from_token(state: GatewayResources, book: SessionBook, token: str | None) -> ConsoleSession:
    """The session a token stands for; Unauthenticated when it is missing, forged, expired or ended."""
    if not token:
        raise Unauthenticated("not signed in")
    parts = token.split(".")
    if len(parts) != 4 or not parts[1].isdigit():
        raise Unauthenticated("not signed in")
    key_id, expires_text, nonce, signature = parts
    expires = int(expires_text)
    if expires < time.time() or nonce in book.ended:
        raise Unauthenticated("the session has ended; sign in again")
    async with state.engine.connect() as conn:
        found = await principal_by_key_id(conn, key_id)
    if found is None:
        raise Unauthenticated("not signed in")
    principal, key_hash = found
    secret = _secret(key_hash)
    if not hmac.compare_digest(_sign(secret, f"{key_id}.{expires_text}.{nonce}"), signature):
        raise Unauthenticated("not signed in")
    return ConsoleSession(principal, key_id, _sign(secret, f"csrf.{nonce}"), expires, nonce)


def check_csrf(session: ConsoleSession, presented: str | None) -> None:
    """PolicyDenied unless `presented` is the session's CSRF token."""
    if not presented or not hmac.compare_digest(session.csrf_token, presented):
        raise PolicyDenied("the form's CSRF token is missing or wrong; reload the page and try again")


def sign_out(book: SessionBook, session: ConsoleSession) -> None:
    """Forget the session in this process (the transport clears the cookie)."""
    book.end(session)

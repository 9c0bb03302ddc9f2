"""The console's sign-in sessions: an API key in, a signed session token out, and its CSRF token.

The key is checked once, at sign-in, by the same authentication as every API call
(`principal_from_authorization`), and is never stored: the session token names the key by its public id
and carries an expiry and a random nonce, signed with HMAC-SHA256 under a secret derived from two things:
the server's session secret (`LOREGATE_SESSION_SECRET`, else a random one created on first use and kept
0600 in the data dir) and the key's stored hash. A copy of the database alone forges nothing, changing the
server secret signs every console user out, and revoking the key ends every session it opened. Every
gateway process (and host) sharing the server secret verifies a session without other shared state. Each
request re-reads the key's principal, so a revoked key or a disabled principal is signed out at once.

Failed sign-ins are counted per client address (the peer, or what a proxy in `LOREGATE_TRUSTED_PROXIES`
forwarded). An address over the limit gets 429 for every wrong key, but a valid key still signs in: the
throttle slows guessing, it never locks the key's owner out.

The CSRF token is derived from the same secret and the session's nonce: one per session, checked with a
constant-time comparison on every state-changing request. Signing out forgets the session in this process
(`SessionBook`); the cookie is cleared, and the token expires after `LOREGATE_CONSOLE_SESSION_HOURS`.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from api.services.gateway import GatewayResources, principal_from_authorization
from governance.config import Settings
from governance.errors import PolicyDenied, RateLimited, Unauthenticated, Unavailable
from governance.identity import Principal, key_id_of
from governance.storage.identity import principal_by_key_id

__all__ = [
    "ConsoleSession",
    "SessionBook",
    "sign_in",
    "session_from_token",
    "sign_out",
    "check_csrf",
    "server_secret",
    "SESSION_SECRET_FILE",
    "SIGN_IN_FAILURES_ALLOWED",
    "SIGN_IN_WINDOW_SECONDS",
]

# failed sign-ins allowed per client address within the window, before it must wait
SIGN_IN_FAILURES_ALLOWED = 10
SIGN_IN_WINDOW_SECONDS = 300.0
_CONTEXT = b"loregate console session\x00"
# the generated server secret, in the data dir (when LOREGATE_SESSION_SECRET is not set)
SESSION_SECRET_FILE = "console-session.secret"
_SECRET_BYTES = 32
_log = logging.getLogger(__name__)


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
    secret: bytes | None = None  # the server secret, read once

    def throttle(self, client: str) -> None:
        """RateLimited while `client` has too many recent failed sign-ins."""
        recent = self._recent(client)
        if len(recent) >= SIGN_IN_FAILURES_ALLOWED:
            wait = int(recent[0] + SIGN_IN_WINDOW_SECONDS - time.monotonic()) + 1
            raise RateLimited(
                f"too many failed sign-ins from this address; try again in {wait} s", retry_after=wait
            )

    def server_secret(self, settings: Settings) -> bytes:
        if self.secret is None:
            self.secret = server_secret(settings)
        return self.secret

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


def server_secret(settings: Settings) -> bytes:
    """The server's session secret: LOREGATE_SESSION_SECRET, else the data dir's (created 0600 on first use).

    Several processes may start at once: each writes its candidate to a file of its own and links it into
    place; the first link wins and every process reads the winner.
    """
    if settings.session_secret is not None:
        return settings.session_secret.get_secret_value().encode("utf-8")
    data_dir = settings.data_dir.expanduser()
    path = data_dir / SESSION_SECRET_FILE
    try:
        if not path.exists():
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            _create_secret_file(path)
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        text = path.read_text(encoding="ascii").strip()
        secret = bytes.fromhex(text)
    except (OSError, ValueError) as exc:
        problem = f"cannot be read or created ({exc})"
    else:
        if len(secret) >= _SECRET_BYTES:
            return secret
        problem = "is too short (delete it to make a new one)"
    # the path and the cause go to the operator's log; the client (not signed in) learns neither
    _log.error("the console's session secret %s %s; or set LOREGATE_SESSION_SECRET", path, problem)
    raise Unavailable(
        "the console cannot sign anyone in: its session secret is unusable; the operator must fix the "
        "data dir or set LOREGATE_SESSION_SECRET (see the gateway's log)"
    )


def _create_secret_file(path: Path) -> None:
    candidate = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(_SECRET_BYTES) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.link(candidate, path)
    except FileExistsError:
        pass  # another process made it first: use theirs
    finally:
        candidate.unlink(missing_ok=True)


def _secret(server: bytes, key_hash: str) -> bytes:
    # the server secret keys the MAC; the key's hash ties the session to that key (revoking it ends them)
    return hmac.new(server, _CONTEXT + key_hash.encode("ascii"), hashlib.sha256).digest()


def _sign(secret: bytes, message: str) -> str:
    return hmac.new(secret, message.encode("ascii"), hashlib.sha256).hexdigest()


async def sign_in(
    resources: GatewayResources, book: SessionBook, client: str, api_key: str
) -> tuple[ConsoleSession, str]:
    """The session for a valid API key and its token (the cookie's value).

    Wrong keys are counted per client address; over the limit they get RateLimited. A valid key signs in
    whatever its address's count: the key is checked first (one indexed read), so a throttled address
    learns no more than an unthrottled one, and its owner is never locked out by someone else's guesses.
    """
    server = book.server_secret(resources.settings)
    try:
        principal = await principal_from_authorization(resources, f"Bearer {api_key.strip()}")
    except Unauthenticated:
        book.throttle(client)
        book.failed(client)
        raise Unauthenticated("unknown or revoked API key") from None
    key_id = key_id_of(api_key.strip())
    if key_id is None:  # principal_from_authorization refused malformed keys already
        raise Unauthenticated("malformed API key")
    expires = int(time.time() + resources.settings.console_session_hours * 3600)
    nonce = secrets.token_urlsafe(18)
    body = f"{key_id}.{expires}.{nonce}"
    async with resources.engine.connect() as conn:
        found = await principal_by_key_id(conn, key_id)
    if found is None:  # revoked between the two reads
        raise Unauthenticated("unknown or revoked API key")
    secret = _secret(server, found[1])
    session = ConsoleSession(principal, key_id, _sign(secret, f"csrf.{nonce}"), expires, nonce)
    return session, f"{body}.{_sign(secret, body)}"


async def session_from_token(
    resources: GatewayResources, book: SessionBook, token: str | None
) -> ConsoleSession:
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
    async with resources.engine.connect() as conn:
        found = await principal_by_key_id(conn, key_id)
    if found is None:
        raise Unauthenticated("not signed in")
    principal, key_hash = found
    secret = _secret(book.server_secret(resources.settings), key_hash)
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

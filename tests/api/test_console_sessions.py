"""Console sessions against a stolen database, forged proxy headers and guessing (api/services/sessions.py).

Each test runs a gateway of its own over real HTTP on loopback (the throttle is per process), as
`loregate serve` runs it, on the session database; the console is driven as a browser drives it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
import time
from pathlib import Path

import httpx
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncEngine

from api.services.sessions import SESSION_SECRET_FILE, SIGN_IN_FAILURES_ALLOWED
from governance.config import Settings
from governance.identity import key_id_of
from governance.storage.identity import principal_by_key_id
from tests.system.processes import Cluster
from tests.utils.factories import Actor
from tests.utils.gateway import running_gateway

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
SECRET_A = SecretStr("a" * 16 + "server secret one, never shown")
SECRET_B = SecretStr("b" * 16 + "server secret two, never shown")


async def _sign_in(http: httpx.AsyncClient, key: str, forwarded_for: str | None = None) -> httpx.Response:
    """Load the form and post `key` with the form's token; the answer, redirects not followed."""
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    form = await http.get("/console/signin", headers=headers)
    found = _CSRF.search(form.text)
    assert form.status_code == 200 and found is not None, form.text
    return await http.post(
        "/console/signin", data={"api_key": key, "csrf_token": found.group(1)}, headers=headers
    )


async def _page(url: str, token: str) -> httpx.Response:
    """A console page asked for with `token` as the session cookie (a fresh client: nothing else kept)."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        return await http.get("/console/memories", headers={"Cookie": f"loregate_console={token}"})


def _signed_out(answer: httpx.Response) -> bool:
    return answer.status_code == 303 and answer.headers["location"] == "/console/signin"


async def _session_token(url: str, actor: Actor) -> str:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        answer = await _sign_in(http, actor.key)
        assert answer.status_code == 303, answer.text
        token = http.cookies.get("loregate_console")
    assert token is not None
    return token


def _wrong(actor: Actor) -> str:
    return actor.key[:-4] + ("xxxx" if not actor.key.endswith("xxxx") else "yyyy")


async def test_console_session_forged_from_the_databases_key_hash_alone_is_refused(
    settings: Settings, engine: AsyncEngine, team: dict[str, Actor]
) -> None:
    human = team["human"]
    key_id = key_id_of(human.key)
    assert key_id is not None
    async with engine.connect() as conn:  # what a database dump holds
        found = await principal_by_key_id(conn, key_id)
    assert found is not None
    key_hash = found[1]
    body = f"{key_id}.{int(time.time()) + 3600}.forgednonce"
    hash_only = hashlib.sha256(b"loregate console session\x00" + key_hash.encode()).digest()
    keyed_by_hash = key_hash.encode()
    with running_gateway(settings.model_copy(update={"session_secret": None})) as url:
        genuine = await _session_token(url, human)
        assert (await _page(url, genuine)).status_code == 200
        for secret in (hash_only, keyed_by_hash):
            forged = f"{body}.{hmac.new(secret, body.encode(), hashlib.sha256).hexdigest()}"
            assert _signed_out(await _page(url, forged))
        # the genuine token with its body changed (a longer expiry) is refused too
        key, _, nonce, signature = genuine.split(".")
        assert _signed_out(await _page(url, f"{key}.{int(time.time()) + 10**6}.{nonce}.{signature}"))


async def test_console_session_secret_is_created_once_0600_in_the_data_dir_and_shared_by_processes(
    settings: Settings, team: dict[str, Actor], tmp_path: Path
) -> None:
    own = settings.model_copy(update={"data_dir": tmp_path / "data", "session_secret": None})
    assert not (own.data_dir / SESSION_SECRET_FILE).exists()
    with running_gateway(own) as first:
        token = await _session_token(first, team["human"])
    path = own.data_dir / SESSION_SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    written = path.read_text()
    with running_gateway(own) as second:  # another process on the same data dir: same secret
        assert (await _page(second, token)).status_code == 200
    assert path.read_text() == written


async def test_console_sessions_end_when_the_server_secret_changes(
    settings: Settings, team: dict[str, Actor]
) -> None:
    with running_gateway(settings.model_copy(update={"session_secret": SECRET_A})) as first:
        token = await _session_token(first, team["human"])
        assert (await _page(first, token)).status_code == 200
    with running_gateway(settings.model_copy(update={"session_secret": SECRET_A})) as same:
        assert (await _page(same, token)).status_code == 200  # another host given the same secret
    with running_gateway(settings.model_copy(update={"session_secret": SECRET_B})) as rotated:
        assert _signed_out(await _page(rotated, token))
        assert (await _page(rotated, await _session_token(rotated, team["human"]))).status_code == 200


async def test_console_signin_throttles_wrong_keys_but_never_a_valid_one(
    settings: Settings, team: dict[str, Actor]
) -> None:
    human = team["human"]
    with running_gateway(settings) as url:  # a gateway of its own: the throttle is per process
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            for _ in range(SIGN_IN_FAILURES_ALLOWED):
                assert (await _sign_in(http, _wrong(human))).status_code == 401
            throttled = await _sign_in(http, _wrong(human))
            assert throttled.status_code == 429 and "too many failed sign-ins" in throttled.text
            assert "loregate_console" not in http.cookies
            valid = await _sign_in(http, human.key)  # the owner of a key is never locked out
            assert valid.status_code == 303 and valid.headers["location"] == "/console/promotions"
            assert http.cookies.get("loregate_console")
            assert (await _sign_in(http, _wrong(team["agent"]))).status_code == 429  # guessing still waits


async def test_console_signin_forwarded_for_from_an_untrusted_peer_is_ignored(
    settings: Settings, team: dict[str, Actor]
) -> None:
    human = team["human"]
    with running_gateway(settings.model_copy(update={"trusted_proxies": []})) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            for n in range(SIGN_IN_FAILURES_ALLOWED):
                assert (await _sign_in(http, _wrong(human), f"203.0.113.{n}")).status_code == 401
            # a new forged address buys no more tries: the peer (loopback) is what counts
            for n in range(3):
                again = await _sign_in(http, _wrong(human), f"198.51.100.{n}")
                assert again.status_code == 429, again.text


async def test_console_signin_forwarded_for_from_a_trusted_proxy_names_the_client(
    settings: Settings, team: dict[str, Actor]
) -> None:
    human = team["human"]
    behind_proxy = settings.model_copy(update={"trusted_proxies": ["127.0.0.0/8"]})
    with running_gateway(behind_proxy) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            for _ in range(SIGN_IN_FAILURES_ALLOWED):
                assert (await _sign_in(http, _wrong(human), "203.0.113.7")).status_code == 401
            assert (await _sign_in(http, _wrong(human), "203.0.113.7")).status_code == 429
            # another client behind the same proxy is not throttled for the first one's failures
            assert (await _sign_in(http, _wrong(human), "198.51.100.9")).status_code == 401
            # a client cannot prepend its own address: the proxy's appended one is what counts
            spoofed = await _sign_in(http, _wrong(human), "198.51.100.1, 203.0.113.7")
            assert spoofed.status_code == 429


async def test_console_signin_without_a_usable_session_secret_is_503_naming_the_setting(
    settings: Settings, team: dict[str, Actor], tmp_path: Path
) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the data dir should be")
    own = settings.model_copy(update={"data_dir": blocked, "session_secret": None})
    with running_gateway(own) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as http:
            answer = await _sign_in(http, team["human"].key)
            assert answer.status_code == 503, answer.text
            assert "LOREGATE_SESSION_SECRET" in answer.text and str(blocked) not in answer.text
            assert "loregate_console" not in http.cookies


async def test_console_under_loregate_serve_ignores_forwarded_for_and_its_workers_share_one_secret(
    database_url: str, team: dict[str, Actor], tmp_path: Path
) -> None:
    """The production path, `loregate serve --workers 2` (uvicorn alone would trust loopback proxies)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LOREGATE_SESSION_SECRET", "LOREGATE_TRUSTED_PROXIES")
    }
    env |= {"LOREGATE_DATABASE_URL": database_url, "LOREGATE_DATA_DIR": str(tmp_path / "data")}
    cluster = Cluster(env=env, log_dir=tmp_path)
    try:
        gateway = cluster.gateway("gateway", "--workers", "2")
        await cluster.wait_healthy(gateway)
        assert gateway.url is not None
        token = await _session_token(gateway.url, team["human"])
        for _ in range(8):  # new connections, spread over both worker processes: each verifies the session
            assert (await _page(gateway.url, token)).status_code == 200
        assert stat.S_IMODE((tmp_path / "data" / SESSION_SECRET_FILE).stat().st_mode) == 0o600
        # one connection, so one worker process (the throttle is per process); forged addresses buy nothing
        async with httpx.AsyncClient(base_url=gateway.url, timeout=30) as http:
            for n in range(SIGN_IN_FAILURES_ALLOWED):
                assert (await _sign_in(http, _wrong(team["human"]), f"203.0.113.{n}")).status_code == 401
            assert (await _sign_in(http, _wrong(team["human"]), "198.51.100.1")).status_code == 429
    finally:
        cluster.close()

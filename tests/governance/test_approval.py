"""Approval tokens and modes: the pure rules (governance/approval.py) and the secret's file."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path

import pytest

from governance.approval import ApprovalMode, TokenClaims, TokenRefused, check_token, mint_token
from governance.config import Settings
from governance.storage.approval_proofs import SECRET_FILE, approval_secret

SECRET = b"s" * 32
CLAIMS = TokenClaims("human-1", "promote-t1", "d" * 64, 1_000.0)


def _check(token: str, **overrides: object) -> TokenClaims:
    args: dict[str, object] = {
        "principal": "human-1",
        "workflow_id": "promote-t1",
        "digest": "d" * 64,
        "now": 999.0,
    }
    args.update(overrides)
    return check_token(SECRET, token, **args)  # type: ignore[arg-type]


def test_token_roundtrip_gives_back_its_claims() -> None:
    assert _check(mint_token(SECRET, CLAIMS)) == CLAIMS


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({"now": 1_000.0}, "expired"),
        ({"principal": "human-2"}, "another principal"),
        ({"workflow_id": "promote-t2"}, "another workflow"),
        ({"digest": "e" * 64}, "changed after"),
        ({"digest": None}, "changed after"),
    ],
)
def test_token_check_names_the_claim_that_fails(overrides: dict[str, object], why: str) -> None:
    with pytest.raises(TokenRefused, match=why):
        _check(mint_token(SECRET, CLAIMS), **overrides)


def test_token_with_a_rewritten_payload_fails_its_signature() -> None:
    prefix, _payload, signature = mint_token(SECRET, CLAIMS).split(".")
    body = {"p": "human-1", "w": "promote-t1", "h": "d" * 64, "e": 9_999_999_999}
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    with pytest.raises(TokenRefused, match="signature"):
        _check(f"{prefix}.{forged}.{signature}")


@pytest.mark.parametrize("token", ["", "lgat1", "lgat1.a.b.c", "other.a.b", "lgat1.!!.??"])
def test_malformed_token_is_refused(token: str) -> None:
    with pytest.raises(TokenRefused):
        _check(token)


def test_old_mode_name_is_the_trusting_mode_and_the_default_is_authenticated(tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path, approval_mode="ui_or_api").gate_mode is ApprovalMode.TRUSTING  # type: ignore[arg-type]
    assert Settings.model_fields["approval_mode"].default is ApprovalMode.AUTHENTICATED
    assert not Settings(data_dir=tmp_path, approval_mode="trusting").proof_required  # type: ignore[arg-type]
    assert Settings(data_dir=tmp_path, approval_mode="api_only").api_only  # type: ignore[arg-type]


def test_secret_file_is_made_once_owner_only_and_reused(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    first = approval_secret(settings)
    path = tmp_path / "data" / SECRET_FILE
    assert len(first) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert approval_secret(settings) == first
    assert [p.name for p in path.parent.iterdir()] == [SECRET_FILE]


def test_secret_from_the_environment_wins_over_the_file(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, approval_secret="from-the-environment")  # type: ignore[arg-type]
    assert approval_secret(settings) == b"from-the-environment"
    assert not (tmp_path / SECRET_FILE).exists()

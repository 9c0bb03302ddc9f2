"""governance/redaction.py against labelled corpora: every planted secret goes, near-misses stay.

Recall: a planted secret counts as removed when no 8-character piece of it is left in the output (pieces
that the surrounding text itself contains aside), also after whitespace and zero-width characters are
taken out of both, so a secret split over lines or by invisible characters is not left in fragments.
Precision: a near-miss sample (git SHA, UUID, version, port, prose about passwords...) must come back
unchanged; at most 5% may be altered. Run with `-s` to see the numbers.
"""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass, fields

import pytest

from governance.redaction import PLACEHOLDER, Redaction, is_secret_name, redact, redact_json
from tests.governance import redaction_corpus, redaction_heldout
from tests.governance.redaction_corpus import MARK, Fake, Sample

_INVISIBLE = re.compile(r"[\s\u200b\u200c\u200d\u2060\ufeff]+")
PIECE = 8


def _squash(text: str) -> str:
    return _INVISIBLE.sub("", text)


def leftovers(sample: Sample, output: str) -> list[str]:
    """The pieces of the sample's secrets still in `output` (empty when every secret is gone)."""
    squashed_output = _squash(output)
    squashed_context = _squash(sample.context)
    found: list[str] = []
    for secret in sample.secrets:
        squashed = _squash(secret)
        if squashed in squashed_output:
            found.append(squashed)
            continue
        for i in range(len(squashed) - PIECE + 1):
            piece = squashed[i : i + PIECE]
            if piece in squashed_context or piece in PLACEHOLDER:
                continue
            if piece in squashed_output:
                found.append(piece)
                break
    return found


@dataclass
class Score:
    secrets: int
    removed: int
    near_misses: int
    altered: int
    words_kept: float
    misses: list[tuple[str, str, str]]
    false_positives: list[tuple[str, str, str]]

    @property
    def recall(self) -> float:
        return self.removed / self.secrets

    @property
    def precision(self) -> float:
        """Of the samples redaction changed, the share that held a secret."""
        return self.removed / (self.removed + self.altered) if self.removed + self.altered else 1.0

    @property
    def near_miss_kept(self) -> float:
        return 1 - self.altered / self.near_misses


def score(secret_samples: list[Sample], near_miss_samples: list[Sample]) -> Score:
    misses: list[tuple[str, str, str]] = []
    removed = 0
    kept_words = total_words = 0
    for s in secret_samples:
        output = redact(s.text).text
        left = leftovers(s, output)
        if left:
            misses.append((s.label, s.text, output))
        else:
            removed += 1
        # what the secret was embedded in should survive: words of the context not touching the secret
        words = [w for w in s.context.split() if MARK not in w and len(w) >= 3]
        total_words += len(words)
        kept_words += sum(1 for w in words if w in output)
    false_positives = []
    for s in near_miss_samples:
        output = redact(s.text).text
        if output != s.text:
            false_positives.append((s.label, s.text, output))
    return Score(
        secrets=len(secret_samples),
        removed=removed,
        near_misses=len(near_miss_samples),
        altered=len(false_positives),
        words_kept=kept_words / total_words if total_words else 1.0,
        misses=misses,
        false_positives=false_positives,
    )


def report(name: str, result: Score) -> None:
    for label, text, output in result.misses:
        print(f"  MISSED [{label}] {text!r}\n      -> {output!r}")
    for label, text, output in result.false_positives:
        print(f"  ALTERED [{label}] {text!r}\n      -> {output!r}")
    print(
        f"redaction {name}: {result.secrets} secrets, {result.near_misses} near-misses; "
        f"recall={result.recall:.3f} precision={result.precision:.3f} "
        f"near-misses unchanged={result.near_miss_kept:.3f} context words kept={result.words_kept:.3f}"
    )


def check(result: Score) -> None:
    assert result.recall == 1.0, [m[:2] for m in result.misses]
    assert result.near_miss_kept >= 0.95, [f[:2] for f in result.false_positives]
    assert result.precision >= 0.95


# ---------------------------------------------------------------------------------------------------------
# corpora


def test_redact_corpus_recall_and_precision() -> None:
    secrets = redaction_corpus.secret_samples()
    near = redaction_corpus.near_miss_samples()
    assert len(secrets) >= 200 and len(near) >= 200
    assert len({s.label for s in secrets}) >= 30
    result = score(secrets, near)
    report("corpus", result)
    check(result)


def test_redact_heldout_recall_and_precision() -> None:
    secrets = redaction_heldout.secret_samples()
    near = redaction_heldout.near_miss_samples()
    assert len(secrets) >= 100 and len(near) >= 100
    result = score(secrets, near)
    report("held-out", result)
    check(result)


def test_redact_corpus_is_deterministic() -> None:
    assert redaction_corpus.secret_samples() == redaction_corpus.secret_samples()
    assert redaction_heldout.near_miss_samples() == redaction_heldout.near_miss_samples()
    assert redaction_corpus.SEED != redaction_heldout.SEED


def test_redact_is_idempotent_on_the_corpus() -> None:
    """Redacted text is redacted again downstream (candidates, summaries): nothing more may go."""
    for s in redaction_corpus.secret_samples():
        once = redact(s.text)
        twice = redact(once.text)
        assert twice.text == once.text and not twice.redacted, (s.label, once.text, twice.text)


def test_redact_costs_little_per_line() -> None:
    lines = [s.text for s in redaction_corpus.near_miss_samples()] + [
        "Deploy finished for service payments-api v2.3.1 on 2024-05-14; commit "
        "9fceb02d0ae598e95dc970b74767f19372d61af8 rolled out to 3 pods behind http://localhost:8080/health. "
        "Next: tune the retry budget.",
        "배포 후 사용자 세션이 끊기는 문제가 있었는데, 원인은 로드밸런서의 idle timeout 60초 "
        "설정이었다. 설정을 300초로 늘리고 재배포했더니 해결되었다. 관련 이슈는 #4821 참고.",
    ]
    for line in lines:  # warm up
        redact(line)
    started = time.perf_counter()
    rounds = 5
    for _ in range(rounds):
        for line in lines:
            redact(line)
    per_line = (time.perf_counter() - started) / (rounds * len(lines)) * 1e6
    print(f"redaction cost: {per_line:.0f} us per line (mean over {len(lines)} lines)")
    assert per_line < 2000  # a generous bound against pathological regexes; the target is < 200 us


# ---------------------------------------------------------------------------------------------------------
# the public API


def test_redact_keeps_its_public_api() -> None:
    result = redact("no secrets here")
    assert isinstance(result, Redaction) and result.text == "no secrets here" and not result.redacted
    assert [f.name for f in fields(Redaction)] == ["text", "counts"]
    with pytest.raises(AttributeError):
        result.text = "x"  # type: ignore[misc]
    assert PLACEHOLDER == "[REDACTED]"
    cleaned = redact("password=hunter2-Correct!Horse")
    assert cleaned.text == "password=[REDACTED]" and cleaned.counts == {"password": 1} and cleaned.redacted


# ---------------------------------------------------------------------------------------------------------
# focused conditions


def test_redact_zero_width_split() -> None:
    fake = Fake(7)
    token = f"sk_live_{fake.mixed(24)}"
    broken = token[:5] + "\u200b" + token[5:12] + "\u2060\ufeff" + token[12:]
    result = redact(f"billing used {broken} until Friday")
    assert result.text == f"billing used {PLACEHOLDER} until Friday"
    assert result.counts == {"stripe_key": 1}
    # a key name broken the same way, and no piece of the value survives
    text = "db_\u200cpass\u200d=" + "Harbor2024!" + "\u200b" + "xyz"
    out = redact(text).text
    assert "Harbor" not in out and "xyz" not in out and out.endswith(PLACEHOLDER)
    # invisible characters alone change nothing: the text comes back as it was
    emoji = "family \U0001f468\u200d\U0001f469\u200d\U0001f467 photo"
    assert redact(emoji).text == emoji


def test_redact_secret_split_across_lines() -> None:
    fake = Fake(8)
    token = f"ghp_{fake.mixed(36)}"
    text = f"pasted from the terminal:\n{token[:17]}\n  {token[17:]}\nEnd of paste."
    out = redact(text).text
    assert token[:17] not in out and token[17:] not in out
    assert out.startswith("pasted from the terminal:") and out.endswith("End of paste.")
    # a complete secret at the end of a line does not swallow the next line's words
    out = redact(f"token {token}\nThen deploy.").text
    assert out == f"token {PLACEHOLDER}\nThen deploy."


def test_redact_secret_split_across_string_literals() -> None:
    fake = Fake(12)
    token = f"ghp_{fake.mixed(36)}"
    for text in [
        f'token = "{token[:20]}" +\n        "{token[20:]}"',
        f"$t = '{token[:15]}' . '{token[15:]}';",
        f'KEY = ("{token[:18]}"\n       "{token[18:]}")',
    ]:
        out = redact(text).text
        assert token[:15] not in out and token[-15:] not in out, out
    # literals that join into no secret stay as written
    text = 'msg = "the deploy finished" +\n      " without errors"'
    assert redact(text).text == text


def test_redact_placeholder_prefix_with_ellipsis_stays() -> None:
    for text in [
        "Set OPENAI_API_KEY=sk-... before running.",
        "GITHUB_TOKEN: ghp_…",
        "api_key = 'sk_live_...'",
    ]:
        assert redact(text).text == text


def test_redact_base64_wrapping() -> None:
    fake = Fake(9)
    inner = f"DB_PASSWORD={fake.password()}"
    encoded = base64.b64encode(inner.encode()).decode()
    result = redact(f"the manifest holds data.env: {encoded} for the worker")
    assert result.text == f"the manifest holds data.env: {PLACEHOLDER} for the worker"
    assert result.counts == {"encoded_secret": 1}
    urlsafe = base64.urlsafe_b64encode(f"sk_live_{fake.mixed(30)}??>>".encode()).decode()
    assert urlsafe not in redact(f"blob {urlsafe}").text
    # base64 of ordinary text and of an image stays
    plain = base64.b64encode(b"release notes for version 2.3.1, nothing secret").decode()
    assert redact(f"encoded: {plain}").text == f"encoded: {plain}"
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(200))).decode()
    assert redact(f"![x](data:image/png;base64,{png})").text == f"![x](data:image/png;base64,{png})"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("운영 DB 비밀번호: Orbit2024!qz (교체 예정)", "운영 DB 비밀번호: [REDACTED] (교체 예정)"),
        ("스테이징 비번 x9Kp2mQ7 으로 접속", "스테이징 비번 [REDACTED] 으로 접속"),
        ("관리자 암호: hunter2", "관리자 암호: [REDACTED]"),
        ("VPN 비밀번호는 Tr0ub4dor&3 입니다.", "VPN 비밀번호는 [REDACTED] 입니다."),
        ("비밀번호는 `Sup3r-Secret`이고", "비밀번호는 `[REDACTED]`이고"),
        ("레디스 비번은 r3d1s-Pass로 설정", "레디스 비번은 [REDACTED]로 설정"),
        ("패스워드 = qwer1234!", "패스워드 = [REDACTED]"),
    ],
)
def test_redact_korean_password_prose(text: str, expected: str) -> None:
    result = redact(text)
    assert result.text == expected and result.counts == {"password": 1}


@pytest.mark.parametrize(
    "text",
    [
        "비밀번호를 재설정하세요",
        "비밀번호 변경 주기는 90일이다",
        "암호화 방식은 AES-256-GCM으로 통일했다",
        "비밀번호 정책: 12자 이상",
        "비밀번호 8자리 이상으로 설정할 것",
        "비번을 잊어버려서 초기화 요청을 보냈다",
    ],
)
def test_redact_korean_password_prose_without_a_value(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a <private>Jane Doe, 12 Hidden Lane</private> b", "a  b"),
        ('a <private attr="x">Jane Doe</private> b', "a  b"),
        ("a < private >Jane Doe</ private > b", "a  b"),
        ("a <PRIVATE>Jane Doe</Private> b", "a  b"),
        ("a < private   scope='hr' >Jane Doe< /private > b", "a  b"),
        ("a <private>\nJane Doe\n</private>\nb", "a \nb"),
        ("public part <private>Jane Doe and the rest", "public part"),
    ],
)
def test_redact_private_tag_variants(text: str, expected: str) -> None:
    result = redact(text)
    assert result.text == expected and result.counts == {"private": 1}


def test_redact_private_tag_lookalikes_stay() -> None:
    for text in ["<private-notes> is a custom element", "use <privateKey> in the template", "x < private y"]:
        assert redact(text).text == text


def test_redact_luhn_card_numbers_not_other_digit_runs() -> None:
    fake = Fake(10)
    for prefix, length in [("4", 16), ("51", 16), ("37", 15), ("6011", 16), ("4", 13), ("62", 19)]:
        number = fake.luhn_number(prefix, length)
        assert redact(f"card {number} declined").text == f"card {PLACEHOLDER} declined", number
        grouped = " ".join(number[i : i + 4] for i in range(0, length, 4))
        assert redact(f"card {grouped} declined").text == f"card {PLACEHOLDER} declined", grouped
        dashed = "-".join(number[i : i + 4] for i in range(0, length, 4))
        assert redact(f"카드번호 {dashed} 로 결제").counts == {"card_number": 1}, dashed
        spaced_dash = " - ".join(number[i : i + 4] for i in range(0, length, 4))
        assert redact(f"Karte {spaced_dash} belastet").counts == {"card_number": 1}, spaced_dash
        other = fake.non_luhn_number(prefix, length)
        assert redact(f"reference {other} ok").text == f"reference {other} ok", other
    for text in [
        "epoch_ms=1715680951000",
        "tracking 9400 1000 0000 0000 0000 00",
        "version 4.1.111.1111.1111.1111",
        "mixed 4111-1111 1111-1111",
        "phone 010-1234-5678",
        "ISBN 978-3-16-148410-0",
    ]:
        assert redact(text).text == text


def test_redact_resident_registration_number() -> None:
    assert redact("주민등록번호 900101-1234567 확인").text == "주민등록번호 [REDACTED] 확인"
    assert redact("RRN: 021231-4123456.").counts == {"resident_number": 1}
    assert redact("주민번호: 9001011234567").text == "주민번호: [REDACTED]"
    for text in [
        "batch 20240514-1234567 finished",  # a date and a sequence, not YYMMDD-
        "invoice 901301-1234567",  # no 13th month
        "code 900101-9234567",  # the 7th digit is 1 to 8
        "ORD-900101-1234567",
        "9001011234567 rows",  # no dash and no word saying what it is
    ]:
        assert redact(text).text == text, text


def test_redact_json_secret_named_keys() -> None:
    stripe = f"sk_live_{Fake(11).mixed(24)}"
    value = {
        "db_pass": "Harbor2024!",
        "passphrase": "correct horse battery staple",
        "nested": [{"DB_PASSWORD": "x1"}, {"note": f"use {stripe} now"}],
        "password_required": True,
        "password_min_length": 12,
        "secret_name": "db-credentials",
        "token": 5,
        "session": "bQ7fZ2kLm9XrT4vW8yN3pA6s",
        "sort_key": "created_at",
        "user": "svc",
        "env": [{"name": "SMTP_PASSWORD", "value": "s3nd-Mail!"}, {"name": "LOG_LEVEL", "value": "debug"}],
    }
    cleaned, counts = redact_json(value)
    assert cleaned == {
        "db_pass": PLACEHOLDER,
        "passphrase": PLACEHOLDER,
        "nested": [{"DB_PASSWORD": PLACEHOLDER}, {"note": f"use {PLACEHOLDER} now"}],
        "password_required": True,
        "password_min_length": 12,
        "secret_name": "db-credentials",
        "token": PLACEHOLDER,
        "session": PLACEHOLDER,
        "sort_key": "created_at",
        "user": "svc",
        "env": [{"name": "SMTP_PASSWORD", "value": PLACEHOLDER}, {"name": "LOG_LEVEL", "value": "debug"}],
    }
    assert counts == {"password": 5, "stripe_key": 1, "generic_secret": 1}
    assert json.loads(json.dumps(cleaned)) == cleaned


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("PGPASSWORD", True),
        ("db_pass", True),
        ("dbPass", True),
        ("passphrase", True),
        ("aws_secret_access_key", True),
        ("OPENAI_API_KEY", True),
        ("client-secret", True),
        ("SLACK_TOKEN", True),
        ("token", True),
        ("contraseña", True),
        ("secretary", False),
        ("passwords", False),
        ("bypass", False),
        ("max_tokens", False),
        ("token_count", False),
        ("secret_name", False),
        ("password_file", False),
        ("sort_key", False),
    ],
)
def test_redact_is_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mysql -u root -pS3cretPw app", "mysql -u root -p[REDACTED] app"),
        ("mysql -u root -p S3cretPw app", "mysql -u root -p [REDACTED] app"),
        ("psql -h db -p 5432 -U app", "psql -h db -p 5432 -U app"),
        ("./run --password hunter2x --verbose", "./run --password [REDACTED] --verbose"),
        ("./run --token abc123XYZ", "./run --token [REDACTED]"),
        ("./run --api-key=abc123XYZ", "./run --api-key=[REDACTED]"),
        ("./run --password-file /etc/pw", "./run --password-file /etc/pw"),
        ("./run --no-password --verbose", "./run --no-password --verbose"),
        ("curl -u admin:hunter2x https://ci", "curl -u admin:[REDACTED] https://ci"),
        ("redis-cli -a r3dis-pw ping", "redis-cli -a [REDACTED] ping"),
    ],
)
def test_redact_cli_flags(text: str, expected: str) -> None:
    assert redact(text).text == expected

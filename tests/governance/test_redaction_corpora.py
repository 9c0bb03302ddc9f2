"""governance/redaction against the corpora written blind after the first (tests/data/redaction_*), held
against regressions: each corpus's size, its split by family, and floors on each half.

Each corpus was written by someone who had not read the rules, committed before the redactor first ran on
it, and split by family into a tune half and a held-out half. It is scored as tests/governance/redaction_eval
scores: a secret counts as removed when no 8-character piece of it is left; a near-miss must come back
unchanged. A floor is what the redactor met when it was last raised; raise it when the redactor gets better.
Once rules are changed while looking at a held-out half, that half is no longer held out (`burned` below).
Held-out samples are never printed: a held-out failure names counts only. Run with `-s` to see the figures
(the tune halves' misses by family). The first corpus, with its held-out targets, is
tests/governance/test_redaction_eval.py.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from governance.redaction import redact
from tests.governance import redaction_eval

DATA = Path(__file__).resolve().parents[1] / "data"


@dataclass(frozen=True)
class Held:
    """One corpus as the default run holds it: its size, and floors (secrets removed, near-misses kept)
    on each half. `burned`: its held-out half was tuned on, so its samples may be named in a failure."""

    name: str
    directory: str
    secrets: int
    near_misses: int
    families: int
    tune: tuple[int, int]
    heldout: tuple[int, int]
    burned: bool = False
    validator: bool = True

    def load(self) -> redaction_eval.Corpus:
        if self.name == "fresh":
            return redaction_eval.load_fresh(DATA / self.directory / "corpus.jsonl")
        return redaction_eval.load_third(DATA / self.directory)


CORPORA = [
    # The second corpus, written blind: its tune half was tuned on, its held-out half measured once afterwards
    # (0.968 / 0.906, docs/redaction.md); its held-out misses were then tuned on too.
    Held(
        "fresh", "redaction_fresh", 190, 65, 74, tune=(96, 33), heldout=(94, 32), burned=True, validator=False
    ),
    # The third, from vendors' documentation: tuned on its tune half first; its held-out half was printed
    # three times as aggregate figures (0.976 / 0.977 at the last), then burned and tuned on once the fourth
    # was written.
    Held("third", "redaction_third", 244, 81, 195, tune=(117, 38), heldout=(127, 43), burned=True),
    # The fourth, from vendors' documentation and gitleaks' rule list: tuned on its tune half and the older
    # corpora only; its held-out half printed three times in all, as aggregate figures (0.882 / 1.000 before
    # any rule change, 0.978 / 1.000 after the first round, 0.993 / 1.000 at the last): the floors.
    # 136 / 136 on the held-out half since the seventh corpus's rules (read by counts through this test only).
    Held("fourth", "redaction_fourth", 273, 71, 136, tune=(137, 35), heldout=(136, 36)),
    # The fifth, secrets in notes and prose. At the first run: tune 158 / 184 and 46 / 47, held-out 150 / 187
    # and 44 / 44. After the rules for the value before the word, no verb and short values: tune 165 and 46,
    # held-out 152 and 44. After command arguments, split chat messages, webhook paths and auth headers,
    # Tencent/Nostr/FCM shapes and the last prose gaps: tune 184 and 47, held-out 154 and 44 (the held-out
    # half read by counts through this test only).
    Held("fifth", "redaction_fifth", 371, 91, 181, tune=(184, 47), heldout=(154, 44)),
    # The sixth, secrets in files and machine output (config files, CI logs, notebooks, SQL, connection
    # strings, cookies and OAuth JSON, keys under a heading, webhooks, chat in ten new languages). At the
    # first run: tune 85 / 93 and 34 / 39, held-out 81 / 92 and 37 / 41. After the rules for files and machine
    # output (a key under its heading past blank lines and a fence, Terraform state's `random_password`, a
    # cookie header's pairs, `.npmrc`'s scoped `_auth`, Mosquitto's `-P`, Rocket.Chat's webhook token,
    # Indonesian `sandi`; SOPS and SealedSecret ciphertext, a VAPID public key, `(sensitive value)` and an
    # analytics cookie kept): tune 93 and 39, held-out 82 and 37 (by counts through this test only).
    Held("sixth", "redaction_sixth", 185, 80, 82, tune=(93, 39), heldout=(82, 37)),
    # The seventh: secrets no word names and no vendor prefix marks (diff hunks, tracebacks' locals, HAR
    # dumps, shell history, service configs), people's prose (approvers' notes, commit messages, tickets),
    # values disguised by formatting (URL-encoded, escaped JSON, wrapped, spelled out), chat in twelve more
    # languages. At the first run: tune 84 / 118 and 30 / 37, held-out 73 / 111 and 34 / 36. After the rules
    # for commands and transcripts, typed passwords in people's prose, percent-encoded and quoted-e-mail
    # wrapped secrets, webhook hosts, `authtok` names and kept references (tuned on the tune half only): tune
    # 118 and 37, held-out 90 and 34 (the held-out half scored twice, as counts: 91 after the rules, 90 after
    # they were narrowed for code they altered in installed packages).
    Held("seventh", "redaction_seventh", 229, 73, 107, tune=(118, 37), heldout=(90, 34)),
    # The eighth: what coding agents stream into a log (tool calls and their results, CLI and debug output,
    # cookies, OAuth and cloud tokens, source in eight languages, chat in seven more languages). At the first
    # run, before any rule change: tune 69 / 91 and 29 / 34, held-out 69 / 86 and 16 / 23. After the rules for
    # its tune half (Oracle's `IDENTIFIED BY`, setters and positional calls, password-manager exports, answer
    # files, registry tokens, a token as a URL's user, MinIO aliases, Actions masks, three chat languages, and
    # six kept references): tune 90 and 34, held-out 69 and 16 (scored once, as counts).
    Held("eighth", "redaction_eighth", 177, 57, 77, tune=(90, 34), heldout=(69, 16)),
]
LOADED = {held.name: held.load() for held in CORPORA}


def _clean(text: str) -> str:
    return redact(text).text


def _report(name: str, result: redaction_eval.Score) -> None:
    print(
        f"redaction eval {name}: recall={result.recall:.3f} ({result.removed}/{result.secrets}) "
        f"near-misses unchanged={result.near_miss_precision:.3f} ({result.kept}/{result.near_misses})"
    )


def _ids(held: Held) -> str:
    return held.name


@pytest.mark.parametrize("held", CORPORA, ids=_ids)
def test_corpus_is_whole_and_split_by_family(held: Held) -> None:
    corpus = LOADED[held.name]
    tune = {s.family for s in corpus.secrets + corpus.near_misses if s.split == "tune"}
    heldout = {s.family for s in corpus.secrets + corpus.near_misses if s.split == "heldout"}
    assert tune and heldout and not tune & heldout
    assert (len(corpus.secrets), len(corpus.near_misses)) == (held.secrets, held.near_misses)
    assert len({s.family for s in corpus.secrets}) == held.families


@pytest.mark.parametrize("held", [h for h in CORPORA if h.validator], ids=_ids)
def test_corpus_validates(held: Held) -> None:
    script = DATA / held.directory / "validate.py"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("held", CORPORA, ids=_ids)
def test_tune_half_does_not_regress(held: Held) -> None:
    secrets, near = LOADED[held.name].part("tune")
    result = redaction_eval.score(_clean, secrets, near)
    _report(f"{held.name} tune", result)
    print("  misses by family:", dict(sorted(Counter(m[0] for m in result.misses).items())))
    print("  near-misses altered by family:", dict(sorted(Counter(a[0] for a in result.altered).items())))
    assert result.removed >= held.tune[0], [m[:2] for m in result.misses]
    assert result.kept >= held.tune[1], [a[:2] for a in result.altered]


@pytest.mark.parametrize("held", CORPORA, ids=_ids)
def test_heldout_half_does_not_regress(held: Held) -> None:
    secrets, near = LOADED[held.name].part("heldout")
    result = redaction_eval.score(_clean, secrets, near)
    _report(f"{held.name} held-out", result)
    if held.burned:  # tuned on already: a failure may name its samples
        assert result.removed >= held.heldout[0], [m[:2] for m in result.misses]
        assert result.kept >= held.heldout[1], [a[:2] for a in result.altered]
    else:  # the samples are neither printed nor reported: a failure names counts only (plain ints, so that
        # pytest's report of the comparison cannot show the score with its misses)
        removed, total, kept, checked = result.removed, result.secrets, result.kept, result.near_misses
        del result
        assert removed >= held.heldout[0], f"held-out secrets removed: {removed} of {total}"
        assert kept >= held.heldout[1], f"held-out near-misses kept: {kept} of {checked}"

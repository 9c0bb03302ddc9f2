"""governance/redaction/catalogue.toml: every rule compiles, redacts its own documented shape, and the forms
an agent may write it in (full-width, reversed, wrapped over two lines, inside an assignment or a sentence).
Examples are generated from each rule's `example` template (no credential-shaped literal in the repository).
"""

from __future__ import annotations

import random

import pytest

from governance.redaction import PLACEHOLDER, redact
from governance.redaction.catalogue import Rule, rules
from tests.governance.redaction_eval import _TRANSFORMS, Sample, _Values, leftovers

RULES = rules()


def _example(rule: Rule, seed: int = 7) -> str:
    return _Values(random.Random(f"{rule.id}:{seed}")).expand(rule.example)


def _secret(rule: Rule, example: str) -> str:
    """What must go: the whole token, or for a rule with context (`SSWS <token>`, a DSN) its group."""
    match = rule.pattern.search(example)
    assert match is not None, (rule.id, example)
    return match.group(rule.group) if rule.group else example


def test_catalogue_is_wide_and_documented() -> None:
    assert len(RULES) >= 93
    assert len({r.id for r in RULES}) == len(RULES)
    for rule in RULES:
        assert rule.source and rule.keywords, rule.id


def test_catalogue_names_each_gitleaks_rule_it_covers_once() -> None:
    """The cross-check with gitleaks' default rules: every rule id named by one format only, and the
    vendor formats with a fixed prefix or shape covered (docs/redaction.md lists the rest and why)."""
    named = [name for rule in RULES for name in rule.gitleaks]
    assert len(named) == len(set(named)), sorted(n for n in named if named.count(n) > 1)
    assert len(named) >= 120


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_catalogue_rule_matches_its_example(rule: Rule) -> None:
    example = _example(rule)
    assert rule.pattern.search(example), (rule.id, example)
    assert any(keyword in example for keyword in rule.keywords), (rule.id, "no keyword in its own example")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
@pytest.mark.parametrize(
    "template",
    ["{}", "TOKEN={}", "the key is {} for prod", '{{"credential": "{}"}}', "--token {}", "<value>{}</value>"],
)
def test_catalogue_rule_example_is_redacted(rule: Rule, template: str) -> None:
    example = _example(rule)
    secret = _secret(rule, example)
    text = template.format(example)
    out = redact(text)
    assert not leftovers(Sample("catalogue", "test", text, (secret,)), out.text), (rule.id, text, out.text)
    assert PLACEHOLDER in out.text


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
@pytest.mark.parametrize("form", ["fw", "rev", "split"])
def test_catalogue_rule_example_is_redacted_in_other_forms(rule: Rule, form: str) -> None:
    if form == "rev" and not any(len(k) >= 3 for k in rule.keywords):
        pytest.skip(
            f"{rule.id}: a reversed token is found by its vendor keyword,"
            " and this rule has none of 3+ characters"
        )
    if form == "split" and rule.group:
        pytest.skip(
            f"{rule.id}: a context rule needs its label beside the token, which a line split would separate"
        )
    example = _example(rule)
    shown = _TRANSFORMS[form](example)
    secret = _TRANSFORMS[form](_secret(rule, example))
    text = f"note:\n{shown}\nend"
    out = redact(text).text
    assert not leftovers(Sample("catalogue", "test", text, (secret,)), out), (rule.id, form, text, out)


@pytest.mark.parametrize(
    "text",
    [
        "export STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
        "GITHUB_TOKEN=ghp_your-token-here",
        "pass the key-value store to the mailgun client",
        "API-version 2 is deprecated",
        # beside the formats added from gitleaks' list: a zero-padded image, identifiers, names, references
        "icon: url(data:image/png;base64,iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQQ);",
        "blob " + "A" * 130 + " end",
        "run test_parser_handles_empty_input and live_reload_when_config_changes_on_disk",
        "test_0123abcd is the fixture id and live_deadbeef the tag",
        "BUNDLE_GEMS__CONTRIBSYS__COM=${SIDEKIQ_CREDENTIALS}",
        "bundle config --local gems.contribsys.com USER:PASS",
        "a dnkey- prefix marks Defined Networking keys",
        "ZXlK is what eyJ encodes to",
        "sc_worker.node1.acc_shared is a queue name",
    ],
)
def test_catalogue_placeholders_and_lookalikes_are_kept(text: str) -> None:
    assert redact(text).text == text


def test_compatibility_forms_are_folded_before_matching() -> None:
    """NFKC, character by character: mathematical bold, circled and full-width letters are the ASCII."""
    token = "ghp_" + "Zq8vN3xK7mW2pL9tR4yB6cD1fH5jS0aE3uGi"
    bold = "".join(chr(0x1D41A + ord(c) - ord("a")) if c.islower() else c for c in token)
    for written in (bold, token.translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)})):
        text = f"トークン：{written} です"
        out = redact(text).text
        assert written not in out and PLACEHOLDER in out and out.endswith(" です"), (text, out)

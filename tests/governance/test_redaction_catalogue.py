"""governance/redaction/catalogue.toml: every rule compiles, redacts its own documented shape, and the forms
an agent may write it in (full-width, reversed, wrapped over two lines, inside an assignment or a sentence).
Examples are generated from each rule's `example` template (no credential-shaped literal in the repository).
"""

from __future__ import annotations

import random
import re
import string

import pytest

from governance.redaction import PLACEHOLDER, redact
from governance.redaction.catalogue import Rule, rules
from tests.governance.gitleaks_shapes import RULES as GITLEAKS
from tests.governance.gitleaks_shapes import SECRET_PART
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


# gitleaks' default rules, each with a sample of its documented shape (tests/governance/gitleaks_shapes.py):
# what docs/redaction.md counts, held here.
_BY_KIND = {kind: [r for r in GITLEAKS if r[1] == kind] for kind in ("shape", "context", "generic", "public")}


def _gitleaks_sample(rule_id: str, template: str, seed: int) -> tuple[str, str]:
    """The sample and the part of it that must go."""
    rng = random.Random(f"{rule_id}:{seed}")
    letters = re.sub(
        r"\{letters:(\d+)\}",
        lambda m: "".join(rng.choice(string.ascii_letters) for _ in range(int(m.group(1)))),
        template,
    )
    value = _Values(rng).expand(letters)
    part = SECRET_PART.get(rule_id)
    found = re.search(part, value) if part else None
    return value, found.group(0) if found else value


def test_gitleaks_list_is_whole_and_names_what_the_catalogue_covers() -> None:
    ids = [r[0] for r in GITLEAKS]
    assert len(ids) == len(set(ids)) == 218
    assert {k: len(v) for k, v in _BY_KIND.items()} == {
        "shape": 130,
        "context": 77,
        "generic": 8,
        "public": 2,
    }
    named = {name for rule in RULES for name in rule.gitleaks}
    assert named <= set(ids), sorted(named - set(ids))


@pytest.mark.parametrize("entry", _BY_KIND["shape"], ids=lambda e: e[0])
def test_gitleaks_shape_is_redacted_written_alone(entry: tuple[str, str, str, str]) -> None:
    rule_id, _, _, template = entry
    for seed in range(3):
        value, secret = _gitleaks_sample(rule_id, template, seed)
        text = f"note: {value} end"
        out = redact(text).text
        assert not leftovers(Sample("gitleaks", "test", text, (secret,)), out), (rule_id, text, out)


@pytest.mark.parametrize("entry", _BY_KIND["context"], ids=lambda e: e[0])
def test_gitleaks_name_only_value_is_redacted_beside_a_name(entry: tuple[str, str, str, str]) -> None:
    rule_id, _, vendor, template = entry
    for seed in range(3):
        value, secret = _gitleaks_sample(rule_id, template, seed)
        for text in (
            f"{vendor.upper()}_API_KEY={value}",
            f"{vendor}_secret: {value}",
            f'{vendor}_token = "{value}"',
        ):
            out = redact(text).text
            assert not leftovers(Sample("gitleaks", "test", text, (secret,)), out), (rule_id, text, out)


@pytest.mark.parametrize("entry", _BY_KIND["generic"], ids=lambda e: e[0])
def test_gitleaks_generic_syntax_is_redacted(entry: tuple[str, str, str, str]) -> None:
    rule_id, _, _, template = entry
    text, _ = _gitleaks_sample(rule_id, template, 0)
    out = redact(text).text
    assert out != text and PLACEHOLDER in out, (rule_id, text, out)


@pytest.mark.parametrize("entry", _BY_KIND["public"], ids=lambda e: e[0])
def test_gitleaks_publishable_key_is_kept_alone(entry: tuple[str, str, str, str]) -> None:
    rule_id, _, _, template = entry
    text = f"note: {_gitleaks_sample(rule_id, template, 0)[0]} end"
    assert redact(text).text == text

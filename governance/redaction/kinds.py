"""Kinds of what redaction removes, in the order that decides an overlap, and the types detectors share."""

from __future__ import annotations

from collections.abc import Callable, Iterator

__all__ = ["PLACEHOLDER", "Detector", "Span"]

PLACEHOLDER = "[REDACTED]"

# Most specific first: when spans of several kinds overlap, the merged span counts under the first.
# Kinds found by a *name* (password, generic_secret) come after the shapes, so `OPENAI_API_KEY=sk-...`
# counts as an OpenAI key, and after them the heuristics that need a context word.
_KINDS = (
    "private",
    "private_key",
    "jwt",
    "bearer_token",
    "basic_auth",
    "openai_key",
    "github_token",
    "aws_access_key",
    "slack_token",
    "slack_webhook",
    "google_api_key",
    "loregate_key",
    "stripe_key",
    "gitlab_token",
    "npm_token",
    "pypi_token",
    "sendgrid_key",
    "twilio_key",
    "discord_token",
    "telegram_token",
    "vault_token",
    "shopify_token",
    "azure_key",
    "azure_sas",
    "google_oauth_secret",
    "mailchimp_key",
    "square_token",
    "huggingface_token",
    "digitalocean_token",
    "vendor_token",
    "vendor_secret",
    "url_credentials",
    "password",
    "aws_secret_key",
    "cloud_credentials",
    "generic_secret",
    "card_number",
    "bank_account",
    "pin",
    "resident_number",
    "encoded_secret",
)
_PRIORITY = {kind: index for index, kind in enumerate(_KINDS)}
# these spans are a value after a name or a number: widening them to the surrounding token would eat the
# name (`-pSecret`) or the separator
_KEEP_EXACT = frozenset(
    {
        "private",
        "private_key",
        "vendor_secret",
        "url_credentials",
        "password",
        "generic_secret",
        "card_number",
        "bank_account",
        "pin",
        "resident_number",
    }
)

Span = tuple[int, int, int]  # start, end, priority of the kind
Detector = Callable[[str, int], Iterator[Span]]

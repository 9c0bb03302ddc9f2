"""Principals and API keys (pure): who is acting, and how a presented key is recognised.

Keys are random 256-bit secrets; only their SHA-256 is stored. A fast hash is right here (unlike for
passwords) because the secret has full entropy, and the gateway must verify it on every request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from governance.scopes import ActorType

__all__ = [
    "Principal",
    "KEY_PREFIX",
    "new_api_key",
    "hash_api_key",
    "key_id_of",
    "tenant_domain",
    "judged_project",
]

KEY_PREFIX = "lg"


@dataclass(frozen=True)
class Principal:
    """An authenticated actor. `project=None` means every project of its org (org-wide principals)."""

    id: str
    name: str
    actor_type: ActorType
    org: str
    project: str | None
    is_admin: bool = False

    @property
    def domain(self) -> str:
        """The Casbin domain (tenant) this principal belongs to."""
        return tenant_domain(self.org, self.project)


def tenant_domain(org: str, project: str | None) -> str:
    """`org/project`, or `org/*` for org-wide grants (matched with keyMatch in the policy)."""
    return f"{org}/{project if project else '*'}"


def judged_project(principal: Principal, org: str, project: str | None) -> str | None:
    """The project a memory of `org`/`project` is judged in (its Casbin domain is `org/<this>`).

    A project memory is judged in its project. An org-scope memory (`project` None) belongs to every
    project of its org, so a caller of that org is judged in its own project, where its grant is: a
    project-bound human may then write and approve org scope, as the policy says. Org-wide callers (no
    project) and callers of other orgs are judged in `org/*`, which only an org-wide grant of `org` matches.
    """
    if project is None and principal.org == org:
        return principal.project
    return project


def new_api_key() -> tuple[str, str]:
    """A fresh key `lg_<id>_<secret>` and its public id (safe to show in listings)."""
    key_id = secrets.token_hex(6)
    return f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(32)}", key_id


def hash_api_key(key: str) -> str:
    """What is stored and looked up."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def key_id_of(key: str) -> str | None:
    """The public id inside a well-formed key, else None."""
    parts = key.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or not parts[1]:
        return None
    return parts[1]

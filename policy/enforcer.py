"""The one place authorisation is decided: a Casbin enforcer over rows in Postgres, reloaded on change.

Every process (gateway, worker, CLI) builds an `Authorizer` with `make_authorizer`. Changes to policy or
grants are followed by a NOTIFY; a `PostgresWatcher` thread in every process LISTENs and reloads
(governance/storage/policy_watcher.py), so a policy edited at run time applies everywhere within a moment.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from importlib import resources

import casbin
from casbin.util import key_match
from sqlalchemy_adapter import Adapter

from governance.config import Settings
from governance.errors import PolicyDenied
from governance.identity import Principal, tenant_domain
from governance.scopes import Scope
from governance.storage.engine import make_sync_engine
from governance.storage.policy_watcher import PostgresWatcher

__all__ = ["Authorizer", "make_authorizer", "model_path"]

_log = logging.getLogger(__name__)


def model_path() -> str:
    """Path of the packaged Casbin model."""
    return str(resources.files("policy").joinpath("loregate_model.conf"))


_MAX_CACHED_DECISIONS = 100_000
DEFAULT_DB_TIMEOUT: float = Settings.model_fields["db_timeout_seconds"].default


class Authorizer:
    """Answers "may this principal do this, at this scope, in this tenant?" — nothing else decides that."""

    def __init__(self, enforcer: casbin.SyncedEnforcer, watcher: PostgresWatcher | None = None) -> None:
        self._enforcer = enforcer
        self._watcher = watcher
        self._listeners: list[Callable[[], None]] = []
        # per principal, so one principal's reload never delays another new principal's first request
        self._last_forced_reload: dict[str, float] = {}
        self._reload_lock = threading.Lock()
        # Decisions, forgotten at every policy change. Casbin evaluates its matcher with an expression
        # interpreter on each call: on the staging hot path that was ~18% of the gateway's CPU per request.
        self._decisions: dict[tuple[str, str, str, str], bool] = {}
        self._generation = 0
        # one evaluation at a time: Casbin compiles its matcher with `ast.parse` on every call, and CPython
        # 3.11's parser is not safe across threads (two at once raise "AST constructor recursion depth
        # mismatch": the console's threadpool and the event loop's thread dropped connections under load)
        self._evaluating = threading.Lock()
        if watcher is not None:
            watcher.set_update_callback(self._on_change)

    def _on_change(self) -> None:
        self._enforcer.load_policy()
        self._forget_decisions()
        for listener in self._listeners:
            listener()

    def _forget_decisions(self) -> None:
        # the generation moves first: a decision computed under the old policy is then never stored
        self._generation += 1
        self._decisions.clear()

    def _enforce(self, request: tuple[str, str, str, str]) -> bool:
        cached = self._decisions.get(request)
        if cached is not None:
            return cached
        generation = self._generation
        with self._evaluating:
            decision = bool(self._enforcer.enforce(*request))
        if generation == self._generation:
            if len(self._decisions) >= _MAX_CACHED_DECISIONS:
                self._decisions.clear()
            self._decisions[request] = decision
        return decision

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Called after every reload (the gateway clears its key cache here)."""
        self._listeners.append(listener)

    def allowed(
        self, principal: Principal, *, org: str, project: str | None, scope: Scope | str, action: str
    ) -> bool:
        request = (principal.id, tenant_domain(org, project), str(scope), action)
        if self._enforce(request):
            return True
        # A principal created a moment ago may not have reached us through NOTIFY yet: if we hold no grant
        # for it at all, reload once (rate-limited) before saying no.
        # The limit is per principal: a global one let a burst of new principals (an orchestrator starting
        # 16 agents) see wrong 403s because another principal's reload had just used the slot.
        grouped = (principal.id, principal.actor_type.value, principal.domain)
        if not self._enforcer.has_grouping_policy(*grouped):
            # under the lock, a reload another request for this principal started has finished
            with self._reload_lock:
                now = time.monotonic()
                if (
                    not self._enforcer.has_grouping_policy(*grouped)
                    and now - self._last_forced_reload.get(principal.id, 0.0) > 0.2
                ):
                    if len(self._last_forced_reload) > 10_000:
                        self._last_forced_reload.clear()
                    self._last_forced_reload[principal.id] = now
                    self._enforcer.load_policy()
                    self._forget_decisions()
        # decide again on the policy loaded now: a reload (ours, another request's or a NOTIFY) may have
        # landed since the first decision, which was then taken on the old policy and not cached
        return self._enforce(request)

    def check(
        self, principal: Principal, *, org: str, project: str | None, scope: Scope | str, action: str
    ) -> None:
        """Raise PolicyDenied (403) with a message naming who, what and where."""
        if not self.allowed(principal, org=org, project=project, scope=scope, action=action):
            raise PolicyDenied(
                f"{principal.actor_type} '{principal.name}' ({principal.id}) may not {action} "
                f"at {scope} scope in {tenant_domain(org, project)}"
            )

    def requires_validation(self, scope: Scope | str) -> bool:
        """Whether publishing into `scope` waits for an approval (policy rows of `validation`)."""
        return self._enforce(("validation", "*", str(scope), "required"))

    def list_policies(self) -> list[list[str]]:
        return [list(p) for p in self._enforcer.get_policy()]

    def list_grants(self) -> list[list[str]]:
        return [list(g) for g in self._enforcer.get_grouping_policy()]

    def add_policy(self, role: str, scope: str, action: str, effect: str = "allow") -> bool:
        added = bool(self._enforcer.add_policy(role, scope, action, effect))
        self._forget_decisions()
        self._notify()
        return added

    def remove_policy(self, role: str, scope: str, action: str, effect: str = "allow") -> bool:
        removed = bool(self._enforcer.remove_policy(role, scope, action, effect))
        self._forget_decisions()
        self._notify()
        return removed

    def reload(self) -> None:
        self._on_change()

    def _notify(self) -> None:
        if self._watcher is not None:
            self._watcher.update()

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()


def make_authorizer(
    database_url: str, *, watch: bool = True, timeout_seconds: float = DEFAULT_DB_TIMEOUT
) -> Authorizer:
    """An Authorizer over the `casbin_rule` table of this database (see migration 0002 for the defaults).

    `timeout_seconds` (the process's `LOREGATE_DB_TIMEOUT_SECONDS`) bounds every wait of a policy reload on
    the database, so a reload forced from a request never holds the event loop while the database stalls.
    """
    adapter = Adapter(make_sync_engine(database_url, timeout_seconds), create_table=False)
    enforcer = casbin.SyncedEnforcer(model_path(), adapter)
    enforcer.add_named_domain_matching_func("g", key_match)
    enforcer.load_policy()
    watcher = PostgresWatcher(database_url, timeout_seconds=timeout_seconds) if watch else None
    # we notify ourselves (after the adapter has saved), so pycasbin must not call the watcher itself
    return Authorizer(enforcer, watcher)

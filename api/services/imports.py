"""Import an export file (`POST /v1/imports`, `loregate import`): through the gate, or as an admin restore.

**Through the gate** (`POST /v1/imports`, orchestrators and humans): the file's active memories become staging
entries of one import task in the target scope's tenant, and that task's promotion starts, so dedup,
supersession, trust and approval apply as to any task's work. The caller needs `open` at task scope and
`write` and `promote` at the target scope; a target scope it may not read is a 404. The task id comes from
the file's sha256 and the target scope, each entry's idempotency key from its line: the same file imported
again into the same scope finds its task (and its promotion) and changes nothing.

**Trusted restore** (`POST /v1/restores`, admin principals only, as for `/v1/admin/policy`): the memories come
back as they were — ids, citations, trust, states, supersession, derivations, bug-pattern statistics and
their events — in one transaction. A memory or event already stored identically is left as it is; one
stored differently (or a citation or event key held by another row) refuses the whole file with 409 naming
the line, and nothing changes. A RESTORED receipt event records the file's sha256, its scope and the counts.
Staging lines are not restored: tasks and their staging travel with a database backup (`loregate backup`).

Either way the whole file is checked first (api/services/export_file.py): a bad file is a 422 naming the
line, with nothing written.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from api.schemas.promotions import PromotionStart, VerificationIn
from api.schemas.transfer import EventRecord, ImportOptions, ImportPublic, MemoryRecord
from api.services import promotions
from api.services.browse import scope_tenant
from api.services.export_file import ParsedExport, parse_export
from api.services.gateway import GatewayResources, judged_project
from governance.adapters.embedders import embed_passages_async, make_embedder
from governance.episodes import EpisodeStructure
from governance.errors import Conflict, GovernanceError, InvalidInput, NotFound, Unavailable
from governance.identity import Principal
from governance.scopes import EntryKind, Scope
from governance.staging import EntryDraft, validate_batch
from governance.storage import staging, staging_append, transfer
from governance.storage.embedding_cache import cache_vectors, cached_vectors, text_digest
from governance.storage.episodes import record_episode
from governance.storage.events import Event, EventType
from governance.transfer import entries_for_gate, import_task_id
from governance.trust import check_entry_decay_policy
from governance.validity import check_entry_expiry

__all__ = ["import_file", "restore_file"]

# fields a restore does not compare: a counter that reading moves (it is no governance change)
_UNCOMPARED = {"retrieval_count", "provenance"}
# texts per embedding call of a restore (an OpenAI-compatible endpoint takes at most 2,048 inputs a call)
_EMBED_CHUNK = 64


async def import_file(
    resources: GatewayResources, principal: Principal, data: bytes, options: ImportOptions
) -> ImportPublic:
    """Import `data` (an export file) through the gate as `options` say; authorised before it is read."""
    return await _through_gate(resources, principal, data, options)


async def restore_file(resources: GatewayResources, principal: Principal, data: bytes) -> ImportPublic:
    """Restore `data` (an export file) as it was (admins only; authorised before it is read)."""
    _require_admin(resources, principal)
    return await _restore(resources, principal, parse_export(data))


def _require_admin(resources: GatewayResources, principal: Principal) -> None:
    # the same check as every admin operation (api/services/admin.py)
    resources.authorizer.check(principal, org="*", project="*", scope="restore", action="admin")


# --- through the gate ----------------------------------------------------------------------------------


def _target(
    resources: GatewayResources, principal: Principal, options: ImportOptions
) -> tuple[str, Scope, str, str, str]:
    """(scope key, scope, org, project, worktree) of the import task, once the caller's rights are checked."""
    key = options.scope_key
    tenant = scope_tenant(key)
    if tenant.scope == Scope.TASK:
        raise InvalidInput("scope_key: a gate import targets worktree, project or org scope, not a task")
    org = tenant.org
    authorizer = resources.authorizer
    if not authorizer.allowed(
        principal,
        org=org,
        project=judged_project(principal, org, tenant.project),
        scope=tenant.scope,
        action="read",
    ):
        raise NotFound(f"scope {key!r} does not exist")
    project = tenant.project or options.project or principal.project
    if project is None:
        raise InvalidInput("project: an import into org scope needs the project its import task belongs to")
    worktree = key.split("/", 2)[2] if tenant.scope == Scope.WORKTREE else "import"
    authorizer.check(principal, org=org, project=project, scope=Scope.TASK, action="open")
    authorizer.check(principal, org=org, project=project, scope=tenant.scope, action="write")
    authorizer.check(principal, org=org, project=project, scope=tenant.scope, action="promote")
    return key, tenant.scope, org, project, worktree


def _drafts(resources: GatewayResources, parsed: ParsedExport) -> tuple[list[EntryDraft], dict[str, int]]:
    now = datetime.now(UTC)
    memories = [(line, m.model_dump()) for line, m in parsed.memories]
    entries, skipped = entries_for_gate(memories, parsed.digest, now=now)
    drafts: list[EntryDraft] = []
    settings = resources.settings
    for entry in entries:
        draft = EntryDraft(
            kind=EntryKind(entry.kind),
            content=entry.content,
            payload=entry.payload,
            idempotency_key=entry.idempotency_key,
        )
        try:
            validate_batch([draft], max_entry_bytes=settings.max_entry_bytes, max_batch_entries=1)
            check_entry_expiry(draft.payload, now=now, where="payload")
            check_entry_decay_policy(draft.payload, where="payload")
        except GovernanceError as exc:
            raise type(exc)(f"line {entry.line}: {exc.detail}") from exc
        drafts.append(draft)
    return drafts, skipped


async def _through_gate(
    resources: GatewayResources, principal: Principal, data: bytes, options: ImportOptions
) -> ImportPublic:
    key, scope, org, project, worktree = _target(resources, principal, options)
    parsed = parse_export(data)
    header = parsed.header
    if header.org != org:
        raise InvalidInput(
            f"the file is an export of org {header.org!r}; it cannot be imported into {key} (org {org!r})"
        )
    drafts, skipped = _drafts(resources, parsed)
    if not drafts:
        raise InvalidInput(f"the file holds no active memory to import (left out: {skipped or 'none'})")
    task_id = import_task_id(parsed.digest, key)
    answer = ImportPublic(
        mode="gate",
        file_sha256=parsed.digest,
        org=org,
        source_scope_key=header.scope_key,
        target_scope_key=key,
        task_id=task_id,
        skipped=skipped,
    )
    task, _ = await staging.open_task(
        resources.engine,
        task_id=task_id,
        org=org,
        project=project,
        worktree=worktree,
        description=f"import of {len(drafts)} entries from {header.scope_key} (sha256 {parsed.digest[:12]})",
        created_by=principal.id,
    )
    if task.promotion_workflow_id is not None:  # imported before: its promotion is under way or done
        answer.unchanged = {"entry": len(drafts)}
        answer.workflow_id = task.promotion_workflow_id
        answer.promotion_created = False
        return answer
    batch = resources.settings.max_batch_entries
    created = replayed = 0
    for start in range(0, len(drafts), batch):
        results = await staging_append.append_entries(
            resources.engine, task.id, principal, drafts[start : start + batch]
        )
        replayed += sum(r.replayed for r in results)
        created += sum(not r.replayed for r in results)
    verification = VerificationIn(source=options.verified) if options.verified else None
    started = await promotions.start_promotion(
        resources, principal, task.id, PromotionStart(target_scope=scope, verification=verification)
    )
    answer.created = {"entry": created}
    answer.unchanged = {"entry": replayed}
    answer.workflow_id = started.workflow_id
    answer.promotion_created = started.created
    return answer


# --- trusted restore -----------------------------------------------------------------------------------


def _same(stored: BaseModel, record: BaseModel) -> list[str]:
    """The fields in which a stored row differs from the file's record."""
    a = stored.model_dump(exclude=_UNCOMPARED)
    b = record.model_dump(exclude=_UNCOMPARED)
    return sorted(k for k in b if a.get(k) != b[k])


def _ordered(records: list[tuple[int, MemoryRecord]]) -> list[tuple[int, MemoryRecord]]:
    """Every superseded memory before the memory that supersedes it (the foreign key wants it there)."""
    by_id = {m.id: (line, m) for line, m in records}
    done: set[str] = set()
    out: list[tuple[int, MemoryRecord]] = []
    for line, memory in records:
        chain: list[tuple[int, MemoryRecord]] = []
        current: tuple[int, MemoryRecord] | None = (line, memory)
        while current is not None and current[1].id not in done and len(chain) <= len(records):
            chain.append(current)
            target = current[1].supersedes_id
            current = by_id.get(target) if target else None
        for item in reversed(chain):
            if item[1].id not in done:
                done.add(item[1].id)
                out.append(item)
    return out


async def _vectors(resources: GatewayResources, texts: list[str]) -> list[list[float]]:
    """One vector per text from the embedding cache, embedding only what it lacks (as a promotion does)."""
    embedder = make_embedder(resources.settings)
    digests = [text_digest(t) for t in texts]
    async with resources.engine.connect() as conn:
        found = await cached_vectors(conn, embedder.model_id, digests)
    missing = sorted({d: t for d, t in zip(digests, texts, strict=True) if d not in found}.items())
    for start in range(0, len(missing), _EMBED_CHUNK):
        chunk = dict(missing[start : start + _EMBED_CHUNK])
        try:
            vectors = await embed_passages_async(embedder, list(chunk.values()))
        except Exception as exc:  # the model or endpoint failed: nothing was written yet, retry later
            raise Unavailable(f"the embedder is unavailable ({exc}); nothing was restored") from exc
        fresh = {d: [float(x) for x in row] for d, row in zip(chunk, vectors, strict=True)}
        async with resources.engine.begin() as conn:
            await cache_vectors(conn, embedder.model_id, fresh)
        found.update(fresh)
    return [found[d] for d in digests]


def _episode(memory_id: str, raw: dict[str, Any]) -> dict[str, Any]:
    """An exported episode's structured fields, checked (the file is outside input)."""
    try:
        return EpisodeStructure.from_json(raw).to_json()
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidInput(f"memory {memory_id}: its episode fields are malformed ({exc})") from exc


def _row(memory: MemoryRecord, vector: list[float]) -> dict[str, Any]:
    row = memory.model_dump(exclude={"kind", "derived_from", "bug_pattern", "episode", "provenance"})
    row["scope"] = memory.scope.value
    row["embedding"] = vector
    return row


async def _restore(resources: GatewayResources, principal: Principal, parsed: ParsedExport) -> ImportPublic:
    header = parsed.header
    answer = ImportPublic(
        mode="restore", file_sha256=parsed.digest, org=header.org, source_scope_key=header.scope_key
    )
    in_file = {m.id for _, m in parsed.memories}
    async with resources.engine.connect() as conn:
        present = await transfer.existing_ids(conn, sorted(in_file))
    new = [(line, m) for line, m in _ordered(parsed.memories) if m.id not in present]
    vectors = await _vectors(resources, [m.content for _, m in new]) if new else []
    try:
        async with resources.engine.begin() as conn:
            stored = await transfer.memories_by_ids(conn, sorted(in_file))
            for line, memory in parsed.memories:
                if memory.id in stored:
                    differs = _same(MemoryRecord.model_validate(stored[memory.id]), memory)
                    if differs:
                        raise Conflict(
                            f"line {line}: memory {memory.id} (mem:{memory.citation}) is stored here with "
                            f"other {', '.join(differs)}; nothing was restored"
                        )
            fresh = [(line, m) for line, m in new if m.id not in stored]
            if len(fresh) != len(new):  # another restore wrote some meanwhile: its rows are compared above
                vectors = [v for (_, m), v in zip(new, vectors, strict=True) if m.id not in stored]
            taken = await transfer.citations_taken(conn, {m.citation: m.id for _, m in fresh})
            for line, memory in fresh:
                if memory.citation in taken:
                    raise Conflict(
                        f"line {line}: citation mem:{memory.citation} is held here by memory "
                        f"{taken[memory.citation]}; nothing was restored"
                    )
            heads = await transfer.active_heads(
                conn,
                header.scope_key,
                [m.canonical_key for _, m in fresh if m.canonical_key and m.deprecated_at is None],
            )
            for line, memory in fresh:
                head = heads.get(memory.canonical_key or "")
                if memory.deprecated_at is None and head is not None and head != memory.id:
                    raise Conflict(
                        f"line {line}: memory {memory.id} would be a second active memory about "
                        f"{memory.canonical_key!r} in {header.scope_key}, where memory {head} is; "
                        "nothing was restored"
                    )
            refs = {m.supersedes_id for _, m in fresh if m.supersedes_id} | {
                d for _, m in fresh for d in m.derived_from
            }
            known = in_file | await transfer.existing_ids(conn, sorted(refs - in_file))
            for line, memory in fresh:
                for ref in [memory.supersedes_id, *memory.derived_from]:
                    if ref and ref not in known:
                        raise Conflict(
                            f"line {line}: memory {memory.id} refers to memory {ref}, which is neither in "
                            "the file nor in this database; nothing was restored"
                        )
            await transfer.insert_memories(
                conn, [_row(m, v) for (_, m), v in zip(fresh, vectors, strict=True)]
            )
            await transfer.insert_derivations(conn, [(m.id, d) for _, m in fresh for d in m.derived_from])
            await transfer.insert_bug_patterns(
                conn,
                [
                    {**m.bug_pattern.model_dump(), "memory_id": m.id}
                    for _, m in fresh
                    if m.bug_pattern is not None
                ],
            )
            for _, m in fresh:
                if m.episode is not None:
                    await record_episode(
                        conn,
                        memory_id=m.id,
                        org=m.org,
                        project=m.project,
                        task_id=m.source_task_ids[0] if m.source_task_ids else None,
                        structure=_episode(m.id, m.episode),
                    )
            new_events = await _new_events(conn, parsed.events)
            await transfer.insert_events(conn, [e.model_dump(exclude={"kind"}) for e in new_events])
            await transfer.advance_event_ids(conn)
            answer.created = {"memory": len(fresh), "event": len(new_events)}
            answer.unchanged = {
                "memory": len(parsed.memories) - len(fresh),
                "event": len(parsed.events) - len(new_events),
            }
            left = {"staging": len(parsed.staging), "working_memory": len(parsed.working_memory)}
            answer.skipped = {k: n for k, n in left.items() if n}
            answer.receipt_event_id = await transfer.insert_receipt(
                conn,
                Event(
                    event_type=EventType.RESTORED,
                    actor_id=principal.id,
                    actor_type=principal.actor_type.value,
                    reason=f"restored {header.scope_key} from an export of {header.exported_at.isoformat()}",
                    payload={
                        "file_sha256": parsed.digest,
                        # the tenant and scope it is judged in (GET /v1/events shows it to their readers)
                        "org": header.org,
                        "project": header.project,
                        "scope": scope_tenant(header.scope_key).scope.value,
                        "scope_key": header.scope_key,
                        "created": answer.created,
                        "unchanged": answer.unchanged,
                    },
                ),
            )
    except IntegrityError as exc:  # a concurrent writer took an id, citation or canonical key meanwhile
        detail = str(exc.orig).splitlines()[0] if exc.orig is not None else str(exc)
        raise Conflict(f"the restore clashes with what is stored ({detail}); nothing was restored") from exc
    return answer


async def _new_events(conn: AsyncConnection, events: list[tuple[int, EventRecord]]) -> list[EventRecord]:
    """The file's events not stored yet; Conflict when an id or idempotency key (the line's `dedupe_key`) is
    held by another event."""
    stored = await transfer.events_by_ids(conn, [e.id for _, e in events])
    keys = await transfer.event_ids_by_idempotency_key(
        conn, [e.dedupe_key for _, e in events if e.dedupe_key]
    )
    fresh: list[EventRecord] = []
    for line, event in events:
        if event.id in stored:
            differs = _same(EventRecord.model_validate(stored[event.id]), event)
            if differs:
                raise Conflict(
                    f"line {line}: event {event.id} is stored here with other {', '.join(differs)}; "
                    "nothing was restored"
                )
            continue
        if event.dedupe_key and keys.get(event.dedupe_key, event.id) != event.id:
            raise Conflict(
                f"line {line}: event {event.id}'s key is held here by event {keys[event.dedupe_key]}; "
                "nothing was restored"
            )
        fresh.append(event)
    return fresh

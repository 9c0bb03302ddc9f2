"""File neighbours on real Postgres+pgvector with the real embedder: the best matches' files lead the search
to the other episodes of those files (the change that last touched the code a bug is in), within the
reader's visibility, weighted by how rare a file is, and never under a code-location filter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from api.services.reading import CodeFocus, search_memories
from governance.adapters.embedders import Embedder, make_embedder
from governance.config import Settings
from governance.episodes import EntryView, episode_structure
from governance.scopes import Scope
from governance.storage.episodes import record_episode
from governance.storage.file_neighbours import file_neighbours
from governance.storage.retrieval import search
from tests.utils.memory_factories import TaskRef, add_memory, new_task

QUERY = "Fix digest authentication sending the wrong nonce count on the second challenge"


@pytest.fixture(scope="module")
def embedder(settings: Settings) -> Embedder:
    return make_embedder(settings)


@pytest.fixture(scope="module")
async def world(engine: AsyncEngine, embedder: Embedder) -> dict[str, Any]:
    """One project's episodes with their files (and a fact without), and an episode of another project."""
    episodes: dict[str, tuple[str, list[str]]] = {
        "seed": (
            "Digest authentication: count the nonce for every challenge",
            ["pkg/_auth.py", "CHANGES.md"],
        ),
        "culprit": ("Tidy up the helpers of the request flow", ["pkg/_auth.py", "pkg/_utils.py"]),
        **{
            f"release_{i}": (f"Release {i}.0: notes and version bump", ["CHANGES.md", "pkg/__version__.py"])
            for i in range(6)
        },
        **{
            f"unrelated_{i}": (text, [f"docs/page_{i}.md"])
            for i, text in enumerate(
                [
                    "Document the proxy settings for corporate networks",
                    "Explain streaming downloads with a progress bar",
                    "Describe timeouts for connect, read, write and pool",
                    "Show how to mount custom transports for testing",
                ]
            )
        },
        "other_project": ("Digest authentication nonce count fix", ["pkg/_auth.py"]),
    }
    fact = "Digest authentication is configured per client with a username and a password"
    # close to the query, without links: they take most of the best matches' places, as notes do
    notes = [
        "Digest authentication retries once after a 401 challenge",
        "The nonce of a digest challenge is quoted in the Authorization header",
        "Basic authentication sends the credentials on every request",
        "Authentication flows may yield several requests per response",
        "A digest challenge names its realm, nonce and quality of protection",
        "The client counts requests sent with one nonce (nc) in hexadecimal",
        "Authentication classes can be passed per request or per client",
        "A second challenge after a stale nonce means the server restarted its nonce",
    ]
    names = list(episodes)
    vectors = embedder.embed_passages([episodes[n][0] for n in names] + [fact, *notes])
    made: dict[str, str] = {}
    async with engine.begin() as conn:
        task = await new_task(conn)
        other = await new_task(conn, org=task.org)
        for name, vector in zip(names, vectors, strict=False):
            text, files = episodes[name]
            owner = other if name == "other_project" else task
            ref = TaskRef(
                task_id=f"{owner.task_id}-{name}", org=owner.org, project=owner.project, worktree="main"
            )
            added = await add_memory(
                conn, ref, title=f"Episode: {text}", content=text, embedding=vector, memory_type="episode"
            )
            views = [EntryView(1, "tool_output", "edited", {"tool": "Edit", "files": files})]
            structure = episode_structure(text, views, success=True).to_json()
            await record_episode(
                conn,
                memory_id=added["id"],
                org=owner.org,
                project=owner.project,
                task_id=ref.task_id,
                structure=structure,
            )
            made[name] = added["id"]
        made["fact"] = (
            await add_memory(conn, task, title="digest auth", content=fact, embedding=vectors[len(names)])
        )["id"]
        for note, vector in zip(notes, vectors[len(names) + 1 :], strict=True):
            await add_memory(conn, task, title="auth note", content=note, embedding=vector)
    return {"ids": made, "keys": [task.key(Scope.PROJECT)], "task": task}


async def test_neighbours_are_the_episodes_of_the_seeds_files_rare_files_first(
    engine: AsyncEngine, world: dict[str, Any]
) -> None:
    ids = world["ids"]
    async with engine.connect() as conn:
        found = await file_neighbours(conn, [(ids["seed"], 1.0)], world["keys"])
    order = [i for i, _ in found]
    strength = dict(found)
    # the culprit, the last change to `pkg/_auth.py`, first (rarer than `CHANGES.md`); the seed (both files,
    # each changed since) and the releases follow, the older release the weaker
    assert order[0] == ids["culprit"]
    assert {ids["seed"]} | {ids[f"release_{i}"] for i in range(6)} <= set(order[1:])
    assert all(strength[ids["culprit"]] > strength[ids[f"release_{i}"]] for i in range(6))
    releases = [strength[ids[f"release_{i}"]] for i in range(6)]
    assert releases == sorted(releases) and len(set(releases)) == 6
    # never another project's episode, a memory without links, or an episode sharing no file
    assert ids["other_project"] not in order and ids["fact"] not in order
    assert not {ids[f"unrelated_{i}"] for i in range(4)} & set(order)


async def test_no_neighbours_without_links_or_outside_the_types(
    engine: AsyncEngine, world: dict[str, Any]
) -> None:
    ids = world["ids"]
    async with engine.connect() as conn:
        assert await file_neighbours(conn, [(ids["fact"], 1.0)], world["keys"]) == []
        assert await file_neighbours(conn, [], world["keys"]) == []
        assert await file_neighbours(conn, [(ids["seed"], 1.0)], world["keys"], types=["fact"]) == []


async def test_default_search_brings_the_change_that_last_touched_the_files(
    engine: AsyncEngine, embedder: Embedder, settings: Settings, world: dict[str, Any]
) -> None:
    ids = world["ids"]

    async def ranked(neighbours: int, focus: CodeFocus | None = None) -> list[str]:
        configured = settings.model_copy(update={"search_file_neighbours": neighbours})
        outcome = await search_memories(
            engine, embedder, configured, query=QUERY, scope_keys=world["keys"], k=20, focus=focus
        )
        return [h.id for h in outcome.hits]

    with_neighbours, without = await ranked(10), await ranked(0)
    notes_and_fact = [i for i in without if i not in set(ids.values()) or i == ids["fact"]]
    # its words share little with the query: its file brings it above every note close to the query
    assert without.index(ids["culprit"]) > max(without.index(i) for i in notes_and_fact)
    assert with_neighbours.index(ids["culprit"]) < min(with_neighbours.index(i) for i in notes_and_fact)
    assert with_neighbours.index(ids["culprit"]) <= 3
    # a code-location filter keeps only its memories: no neighbours join them
    only = CodeFocus(touched={}, names=(), only=True, files=("docs/page_0.md",))
    assert await ranked(10, only) == [ids["unrelated_0"]]


@pytest.fixture(scope="module")
async def history(engine: AsyncEngine) -> dict[str, Any]:
    """Three changes of one module a day apart, and a later change of another file the first one touched."""
    start = datetime(2025, 3, 1, tzinfo=UTC)
    made: dict[str, str] = {}
    async with engine.begin() as conn:
        task = await new_task(conn)
        changes = [
            ("first", ["pkg/_pool.py", "pkg/_models.py"], 0),
            ("second", ["pkg/_pool.py"], 1),
            ("third", ["pkg/_pool.py"], 2),
            ("seed", ["pkg/_models.py"], 3),
        ]
        for name, files, day in changes:
            ref = TaskRef(f"{task.task_id}-{name}", org=task.org, project=task.project, worktree="main")
            added = await add_memory(
                conn,
                ref,
                title=f"Episode: {name}",
                content=f"the {name} change",
                embedding=None,
                memory_type="episode",
                created_at=start + timedelta(days=day),
            )
            views = [EntryView(1, "tool_output", "edited", {"tool": "Edit", "files": files})]
            structure = episode_structure(name, views, success=True).to_json()
            await record_episode(
                conn,
                memory_id=added["id"],
                org=task.org,
                project=task.project,
                task_id=ref.task_id,
                structure=structure,
            )
            made[name] = added["id"]
    return {"ids": made, "keys": [task.key(Scope.PROJECT)]}


async def test_neighbours_a_files_last_change_first_older_ones_halved(
    engine: AsyncEngine, history: dict[str, Any]
) -> None:
    """The last change of a file leads, each earlier one keeps half the share of the one after it; decay 1.0
    weighs them alike (newest first among the equal)."""
    made, keys = history["ids"], history["keys"]
    seeds = [(made["first"], 1.0)]  # the oldest change of the module: its files lead to the others
    async with engine.connect() as conn:
        decayed = dict(await file_neighbours(conn, seeds, keys))
        flat = await file_neighbours(conn, seeds, keys, decay=1.0)
        with pytest.raises(ValueError):
            await file_neighbours(conn, seeds, keys, decay=0.0)
    pool = decayed[made["third"]]
    assert decayed[made["second"]] == pytest.approx(pool / 2, rel=1e-6)
    # `first`: a quarter of the module's weight, and `_models.py` (changed since by `seed`) at half
    models = decayed[made["seed"]]
    assert decayed[made["first"]] == pytest.approx(pool / 4 + models / 2, rel=1e-6)
    # alike: `first` (both files) leads, then by the files' rarity, the newest of equals first
    assert [i for i, _ in flat] == [made["first"], made["seed"], made["third"], made["second"]]
    assert dict(flat)[made["third"]] == pytest.approx(dict(flat)[made["second"]])


async def test_neighbours_of_the_files_a_query_names_without_seeds(
    engine: AsyncEngine, history: dict[str, Any]
) -> None:
    """A named file leads as written, by its last components or absolute; a name no episode touched, none."""
    made, keys = history["ids"], history["keys"]
    async with engine.connect() as conn:
        for named in ("pkg/_pool.py", "_pool.py", "/home/dev/repo/pkg/_pool.py"):
            found = await file_neighbours(conn, [], keys, named=[named])
            assert [i for i, _ in found] == [made["third"], made["second"], made["first"]], named
        assert await file_neighbours(conn, [], keys, named=["pkg/_client.py", "x%_pool.py"]) == []
        both = dict(await file_neighbours(conn, [], keys, named=["_pool.py", "pkg/_models.py"]))
    assert set(both) == {made["first"], made["second"], made["third"], made["seed"]}


async def test_search_brings_the_last_change_of_a_file_the_query_names(
    engine: AsyncEngine, history: dict[str, Any]
) -> None:
    """No memory shares a word with the query: the file it names still leads to that file's last change."""
    made, keys = history["ids"], history["keys"]
    async with engine.connect() as conn:
        hits = await search(conn, "why does pkg/_pool.py leak sockets?", None, keys, k=3)
        assert await search(conn, "why does the pool leak sockets?", None, keys, k=3) == []
    assert [h.id for h in hits] == [made["third"], made["second"], made["first"]]

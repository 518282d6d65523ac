"""The relay's vector memory (actors.relay.memory) over a real SQLite event store and a real
Qdrant (in memory, and a local-mode folder): catch_up indexes the relay's turns, similar()
ranks them by meaning, re-indexing changes nothing, rebuild gives the same points, catch_up
resumes where it stopped, and filters by task and turn."""

from __future__ import annotations

import hashlib
import math
import re
import uuid

import pytest

from actors.relay import memory as memory_module
from actors.relay.memory import MemoryLocked, TurnMemory, point_id
from actors.runtime.settings import Settings
from actors.relay.events import (
    BatonPacket,
    BatonPassed,
    DefectCapsule,
    RoadmapPlanned,
    TurnVerified,
)
from events.store import EventStore


class HashingEmbedder:
    """A bag of hashed words, normalised: texts sharing words point the same way. Records
    what it embeds, so a test can see what was (re)indexed."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        out = []
        for text in texts:
            v = [0.0] * self.dim
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                v[int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dim] += 1.0
            norm = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / norm for x in v])
        return out


def baton(
    task: str,
    n: int,
    summary: str,
    files: list[str],
    hints: list[str],
    run: str = "run-1",
) -> BatonPassed:
    return BatonPassed(
        run_id=run,
        task_id=task,
        turn_id=f"{task}:turn:{n}",
        turn_number=n,
        baton=BatonPacket(
            response_text="(the full reply is not what the memory embeds)",
            builder_summary=summary,
            files_changed=files,
            verification_hints=hints,
        ),
    )


def verdict(
    task: str,
    n: int,
    status: str,
    report: str,
    defect: str | None = None,
    run: str = "run-1",
) -> TurnVerified:
    capsule = (
        None
        if defect is None
        else DefectCapsule(
            defect_id=f"{task}:defect:{n}",
            defect_type="test",
            severity="high",
            description=defect,
        )
    )
    return TurnVerified(
        run_id=run,
        task_id=task,
        turn_id=f"{task}:verify:{n}",
        verified_turn_id=f"{task}:turn:{n}",
        turn_number=n,
        status=status,
        report=report,
        defect_capsule=capsule,
    )


FIRST = [
    RoadmapPlanned(
        run_id="run-1",
        task_id="dates",
        task="a calendar tool",
        roadmap=["parse dates", "format"],
    ),
    baton(
        "dates",
        1,
        "Parse the date string into a datetime with strptime",
        ["calendar/parse.py"],
        ["parse_date('2024-02-29') returns a leap day date"],
    ),
    verdict(
        "dates",
        1,
        "FAILED",
        "1 test failed: test_parse_date_string",
        "parse_date rejects the ISO date string 2024-02-29",
    ),
    baton(
        "dates",
        2,
        "Render invoices as HTML tables with a stylesheet",
        ["billing/render.py"],
        ["the invoice table has a header row"],
    ),
    verdict("dates", 2, "PASSED", "ruff clean; 4 tests passed"),
]
SECOND = [
    baton(
        "shop",
        1,
        "Add a shopping cart that sums item prices with tax",
        ["shop/cart.py"],
        ["an empty cart totals zero"],
    ),
    verdict(
        "shop",
        1,
        "RETRY",
        "coherence: the cart ignores the quantity",
        "cart total ignores quantities",
    ),
]


@pytest.fixture
def store(tmp_path):
    s = EventStore(f"sqlite:///{tmp_path / 'chorus.db'}")
    yield s
    s.close()


def append(store: EventStore, stream: str, events: list) -> None:
    store.append(stream, events, store.stream_version(stream))


def test_catch_up_indexes_each_turn_once_with_its_payload_and_ranks_by_meaning(store):
    append(store, "relay-dates", FIRST)
    embed = HashingEmbedder()
    with TurnMemory(":memory:", embed) as memory:
        assert memory.catch_up(store) == 4
        assert memory.count() == 4 and memory.position() == store.max_position()

        (first_id, first), *_ = memory.points()
        assert first_id == point_id("run-1", "dates:turn:1")
        assert first == {
            "run_id": "run-1",
            "task_id": "dates",
            "turn_id": "dates:turn:1",
            "role": "builder",
            "turn_number": 1,
            "position": 2,
            "content": "builder turn 1: Parse the date string into a datetime with strptime\n"
            "files changed: calendar/parse.py\n"
            "verification hints: parse_date('2024-02-29') returns a leap day date",
        }
        roles = [(p["turn_id"], p["role"]) for _, p in memory.points()]
        assert roles == [
            ("dates:turn:1", "builder"),
            ("dates:verify:1", "verifier"),
            ("dates:turn:2", "builder"),
            ("dates:verify:2", "verifier"),
        ]
        verifier = memory.points()[1][1]["content"]
        assert verifier.startswith("verifier turn 1: FAILED\n1 test failed")
        assert (
            "defect (test, high): parse_date rejects the ISO date string 2024-02-29"
            in verifier
        )

        found = memory.similar("how do I parse a date string", k=2)
        assert found[0].startswith("builder turn 1: Parse the date string")
        assert len(found) == 2
        assert memory.similar("invoice table html", k=1)[0].startswith(
            "builder turn 2: Render invoices"
        )


def test_indexing_the_same_events_again_changes_nothing(store):
    append(store, "relay-dates", FIRST)
    with TurnMemory(":memory:", HashingEmbedder()) as memory:
        memory.catch_up(store)
        before = memory.points()
        records = list(store.read_all())
        assert memory.index(records) == 4  # upserted again ...
        assert memory.index(records[1:3]) == 2
        assert memory.points() == before  # ... onto the same points
        assert memory.catch_up(store) == 0 and memory.count() == 4


def test_rebuild_gives_the_same_points(store):
    append(store, "relay-dates", FIRST)
    append(store, "relay-shop", SECOND)
    with TurnMemory(":memory:", HashingEmbedder()) as memory:
        memory.catch_up(store)
        before = memory.points()
        assert memory.rebuild(store) == 6
        assert memory.points() == before
        assert memory.position() == store.max_position()


def test_catch_up_after_more_events_indexes_only_the_new_ones(store):
    append(store, "relay-dates", FIRST)
    embed = HashingEmbedder()
    with TurnMemory(":memory:", embed) as memory:
        memory.catch_up(store)
        embed.texts.clear()
        append(store, "relay-shop", SECOND)
        assert memory.catch_up(store) == 2
        assert [t.split(":")[0] for t in embed.texts] == [
            "builder turn 1",
            "verifier turn 1",
        ]
        assert all("cart" in t for t in embed.texts)
        assert memory.count() == 6 and memory.position() == store.max_position()


def test_similar_keeps_to_one_task_and_leaves_out_a_turn(store):
    append(store, "relay-dates", FIRST)
    append(store, "relay-shop", SECOND)
    with TurnMemory(":memory:", HashingEmbedder()) as memory:
        memory.catch_up(store)
        cart = "a shopping cart summing prices"
        assert memory.similar(cart, k=1)[0].startswith(
            "builder turn 1: Add a shopping cart"
        )
        only_dates = memory.similar(cart, k=5, task_id="dates")
        assert len(only_dates) == 4 and not any("cart" in c for c in only_dates)
        assert memory.similar(cart, k=5, task_id="nobody") == []
        without = memory.similar(cart, k=5, task_id="shop", exclude_turn="shop:turn:1")
        retry = "verifier turn 1: RETRY\ncoherence: the cart ignores the quantity\n"
        assert without == [retry + "defect (test, high): cart total ignores quantities"]
        with pytest.raises(ValueError, match="at least 1"):
            memory.similar(cart, k=0)


def test_a_forked_runs_copy_of_a_turn_is_its_own_point_but_given_once(store):
    append(store, "relay-dates", FIRST[:2])
    copy = FIRST[1].model_copy(
        update={"run_id": "run-2", "event_id": uuid.uuid4()}
    )  # a fork's turn 1
    append(store, "relay-dates-fork", [copy])
    with TurnMemory(":memory:", HashingEmbedder()) as memory:
        memory.catch_up(store)
        assert [i for i, _ in memory.points()] == [
            point_id(r, "dates:turn:1") for r in ("run-1", "run-2")
        ]
        assert memory.similar("parse a date string", k=5) == [
            memory.points()[0][1]["content"]
        ]
        assert memory.similar("parse a date string", k=5, run_id="run-2") == [
            memory.points()[0][1]["content"]
        ]


def test_a_local_folder_keeps_the_memory_and_its_position(store, tmp_path):
    append(store, "relay-dates", FIRST)
    folder = str(tmp_path / "relay_memory")
    with TurnMemory(folder, HashingEmbedder()) as memory:
        memory.catch_up(store)
        before = memory.points()
    append(store, "relay-shop", SECOND)
    embed = HashingEmbedder()
    with TurnMemory(folder, embed) as memory:
        assert memory.points() == before and memory.position() == 5
        assert memory.catch_up(store) == 2 and len(embed.texts) == 2


def test_another_embedder_or_schema_version_rebuilds_the_memory(store, monkeypatch):
    append(store, "relay-dates", FIRST)
    with TurnMemory(":memory:", HashingEmbedder(dim=256)) as memory:
        memory.catch_up(store)
        before = memory.points()
        append(store, "relay-shop", SECOND)
        memory.embed = HashingEmbedder(dim=32)  # another vector size: every turn again
        assert memory.catch_up(store) == 6
        assert (
            memory.client.get_collection("relay_turns").config.params.vectors.size == 32
        )
        assert memory.points()[:4] == before

        monkeypatch.setattr(
            memory_module, "SCHEMA_VERSION", memory_module.SCHEMA_VERSION + 1
        )
        assert (
            memory.catch_up(store) == 6
        )  # made by older code: rebuilt, though caught up
        assert memory.catch_up(store) == 0


def test_a_folder_held_open_is_one_clear_error(tmp_path):
    folder = str(tmp_path / "relay_memory")
    with TurnMemory(folder, HashingEmbedder()) as holder:
        assert holder.count() == 0  # opens the folder, and holds it
        with pytest.raises(MemoryLocked, match="locked by another process"):
            TurnMemory(folder, HashingEmbedder(), wait_s=0.2).count()


def test_where_the_memory_lives_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("CHORUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CHORUS_QDRANT_URL", raising=False)
    assert TurnMemory(None, HashingEmbedder()).location == str(
        tmp_path / "data" / "relay_memory"
    )
    settings = Settings.from_env(data_dir=tmp_path / "d", store_url="memory://")
    assert TurnMemory.from_settings(settings, HashingEmbedder()).location == str(
        tmp_path / "d" / "relay_memory"
    )
    served = Settings.from_env(
        data_dir=tmp_path / "d", store_url="memory://", qdrant_url="http://qdrant:6333"
    )
    assert (
        TurnMemory.from_settings(served, HashingEmbedder()).location
        == "http://qdrant:6333"
    )

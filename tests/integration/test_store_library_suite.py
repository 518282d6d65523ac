"""The eventsourcing library's own recorder test cases, run against the recorders exactly
as our EventStore configures them (its env: text originator ids, CREATE_TABLE, SQLite
lock timeout and WAL, PostgreSQL pool size, connect timeout and schema).

One change to the library's cases: `new_originator_id` returns text, not a UUID, because
our streams are text ids ("researcher-1", ...) and the recorders are configured with
ORIGINATOR_ID_TYPE=text. With UUID ids the cases cannot pass on a text-id recorder, for
reasons of type, not behaviour: SQLite returns the id as a str (unequal to the UUID the
case wrote) and PostgreSQL refuses the query ("operator does not exist: text = uuid").
Nothing else in the cases depends on UUIDs.

`optional_test_insert_subscribe` (not run by the library by default) is run for memory and
PostgreSQL, whose recorders we subscribe to in `EventStore.follow`; SQLite has no
subscriptions (its recorder raises NotImplementedError), so `follow` polls there.

`TrackingRecorderTestCase` runs against the tracking recorder of a store's views exactly
as `ViewStore.for_store` opens it (memory: an in-memory SQLite database of its own).
`ProcessRecorderTestCase` does not apply: views write rows, not events, next to their
positions (`PositionRecorder.transaction` and `track`: tests/integration/test_view_tracking.py).
"""

from __future__ import annotations

import uuid

import pytest
from eventsourcing.tests import persistence as library

from events.recorders.memory import MemoryRecorder
from events.recorders.postgres import PostgresTracking
from events.recorders.sqlite import SQLiteTracking
from events.store import EventStore
from projections.views import ViewStore


class OurConfiguration:
    backend = "memory"

    @pytest.fixture(autouse=True)
    def _store_url(self, request):
        self.url = request.getfixturevalue(f"{self.backend}_url")
        self.stores: list[EventStore] = []
        yield
        for store in self.stores:
            ViewStore.for_store(store).close()
            store.close()

    def new_originator_id(self) -> str:
        return f"stream-{uuid.uuid4()}"

    def open_store(self) -> EventStore:
        store = EventStore(self.url)
        self.stores.append(store)
        return store


class ApplicationRecorderCase(OurConfiguration, library.ApplicationRecorderTestCase):
    def create_recorder(self):
        return self.open_store().recorder


class SnapshotRecorderCase(OurConfiguration, library.AggregateRecorderTestCase):
    def create_recorder(self):
        return self.open_store().snapshots


class NonInterleavingCase(OurConfiguration, library.NonInterleavingNotificationIDsBaseCase):
    def create_recorder(self):
        return self.open_store().recorder


class TrackingRecorderCase(OurConfiguration, library.TrackingRecorderTestCase):
    def create_recorder(self):
        store = self.open_store()
        tracking = ViewStore.for_store(store).tracking
        assert isinstance(tracking, PostgresTracking if self.backend == "postgres" else SQLiteTracking)
        assert isinstance(store.recorder, MemoryRecorder) == (self.backend == "memory")
        return tracking


class SubscribeMixin:
    def test_insert_subscribe(self) -> None:
        self.optional_test_insert_subscribe()


class TestMemoryApplicationRecorder(SubscribeMixin, ApplicationRecorderCase):
    backend = "memory"


class TestMemorySnapshotRecorder(SnapshotRecorderCase):
    backend = "memory"


class TestMemoryNonInterleaving(NonInterleavingCase):
    backend = "memory"


class TestMemoryTrackingRecorder(TrackingRecorderCase):
    backend = "memory"


class TestSQLiteApplicationRecorder(ApplicationRecorderCase):
    backend = "sqlite"

    def test_has_no_subscriptions_so_follow_polls(self) -> None:
        with pytest.raises(NotImplementedError):
            self.create_recorder().subscribe(gt=0)


class TestSQLiteSnapshotRecorder(SnapshotRecorderCase):
    backend = "sqlite"


class TestSQLiteNonInterleaving(NonInterleavingCase):
    backend = "sqlite"


class TestSQLiteTrackingRecorder(TrackingRecorderCase):
    backend = "sqlite"


@pytest.mark.postgres
class TestPostgresApplicationRecorder(SubscribeMixin, ApplicationRecorderCase):
    backend = "postgres"


@pytest.mark.postgres
class TestPostgresSnapshotRecorder(SnapshotRecorderCase):
    backend = "postgres"


@pytest.mark.postgres
class TestPostgresNonInterleaving(NonInterleavingCase):
    backend = "postgres"


@pytest.mark.postgres
class TestPostgresTrackingRecorder(TrackingRecorderCase):
    backend = "postgres"


del ApplicationRecorderCase, SnapshotRecorderCase, NonInterleavingCase, TrackingRecorderCase  # not test classes

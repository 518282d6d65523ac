"""The eventsourcing library's own `TrackingRecorderTestCase`, run against the tracking
recorder our projections use, configured exactly as `ViewStore.for_store` configures it:
the store's SQLite file and connection pool, the store's PostgreSQL schema and pool, and
for memory:// the in-memory SQLite database the views live in.

`ProcessRecorderTestCase` does not apply: projections write view rows, not events, next
to their tracking records (the same transaction, through the recorder's `_insert_tracking`).
"""

from __future__ import annotations

import pytest
from eventsourcing.tests import persistence as library

from events.store import EventStore
from projections.views import PostgresViewRecorder, SQLiteViewRecorder, ViewStore


class OurConfiguration(library.TrackingRecorderTestCase):
    backend = "memory"

    @pytest.fixture(autouse=True)
    def _store_url(self, request):
        self.url = request.getfixturevalue(f"{self.backend}_url")
        self.stores: list[EventStore] = []
        yield
        for store in self.stores:
            ViewStore.for_store(store).close()
            store.close()

    def create_recorder(self):
        store = EventStore(self.url)
        self.stores.append(store)
        recorder = ViewStore.for_store(store).recorder
        expected = PostgresViewRecorder if self.backend == "postgres" else SQLiteViewRecorder
        assert isinstance(recorder, expected)
        return recorder


class TestMemoryViewTracking(OurConfiguration):
    backend = "memory"


class TestSQLiteViewTracking(OurConfiguration):
    backend = "sqlite"


@pytest.mark.postgres
class TestPostgresViewTracking(OurConfiguration):
    backend = "postgres"


del OurConfiguration  # not a test class

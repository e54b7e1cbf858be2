"""Scheduled jobs' records in each store: saved, replaced, deleted, listed in creation order."""

from __future__ import annotations

import pytest

from store import InMemorySessionStore, SqliteSessionStore
from store.errors import InvalidRecordError


async def test_save_replace_delete(any_store: SqliteSessionStore | InMemorySessionStore) -> None:
    await any_store.save_cron_job("cron-a", {"id": "cron-a", "n": 1})
    await any_store.save_cron_job("cron-b", {"id": "cron-b", "n": 1})
    await any_store.save_cron_job("cron-a", {"id": "cron-a", "n": 2})  # replaced, keeps its place
    assert await any_store.cron_jobs() == [{"id": "cron-a", "n": 2}, {"id": "cron-b", "n": 1}]
    await any_store.delete_cron_job("cron-a")
    await any_store.delete_cron_job("cron-missing")
    assert await any_store.cron_jobs() == [{"id": "cron-b", "n": 1}]


@pytest.mark.parametrize(("job_id", "record"), [("", {}), ("x" * 65, {}), ("cron-a", ["not", "an", "object"])])
async def test_bad_records_are_refused(
    any_store: SqliteSessionStore | InMemorySessionStore, job_id: str, record: object
) -> None:
    with pytest.raises(InvalidRecordError):
        await any_store.save_cron_job(job_id, record)  # type: ignore[arg-type]  # deliberately wrong: the refusal is what the test checks
    assert await any_store.cron_jobs() == []

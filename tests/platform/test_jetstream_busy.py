"""Which JetStream refusals of an append are only for now (the append is tried again shortly): too many open
batches, or the same command being stored for another writer at this moment — two engine replicas creating one
game at once on a clustered stream, which the cluster rehearsal meets."""

from __future__ import annotations

from paiju.platform.store.jetstream import _busy


def test_a_command_being_stored_by_another_writer_or_a_full_batch_table_is_waited_for() -> None:
    assert _busy({"code": 503, "err_code": 10158, "description": "duplicate message id is in process"})
    assert _busy({"code": 429, "description": "too many inflight batches"})


def test_other_refusals_are_answered_at_once() -> None:
    assert not _busy({"code": 400, "err_code": 10071, "description": "wrong last sequence: 4"})
    assert not _busy({"code": 400, "err_code": 10201, "description": "duplicate message id"})
    assert not _busy({"code": 503, "description": "JetStream system temporarily unavailable"})

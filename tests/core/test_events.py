"""core's event bus: on-commit handlers see only committed changes, in-transaction handlers
can refuse, one failing handler does not starve the others."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.db import transaction

from core.events import DomainEvent, Phase, publish, subscribe, subscribers_of, unsubscribe


@dataclass(frozen=True)
class Happened(DomainEvent):
    n: int


@pytest.fixture
def seen() -> Iterator[list[tuple[str, int]]]:
    calls: list[tuple[str, int]] = []

    def late(event: Happened) -> None:
        calls.append(("late", event.n))

    def now(event: Happened) -> None:
        calls.append(("now", event.n))

    subscribe(Happened, late)
    subscribe(Happened, now, phase=Phase.IN_TRANSACTION)
    yield calls
    unsubscribe(Happened, late)
    unsubscribe(Happened, now)
    assert subscribers_of(Happened) == []


@pytest.mark.django_db(transaction=True)
def test_on_commit_handlers_run_after_the_commit_and_in_transaction_ones_at_once(seen):
    with transaction.atomic():
        publish(Happened(1))
        assert seen == [("now", 1)]
    assert seen == [("now", 1), ("late", 1)]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_change_reaches_no_on_commit_handler(seen):
    def roll_back() -> None:
        with transaction.atomic():
            publish(Happened(2))
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        roll_back()
    assert seen == [("now", 2)]


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_every_handler_runs_at_once(seen):
    publish(Happened(3))
    assert sorted(seen) == [("late", 3), ("now", 3)]


@pytest.mark.django_db(transaction=True)
def test_an_in_transaction_handler_that_raises_refuses_the_change(seen):
    def refuse(event: Happened) -> None:
        raise PermissionError("no")

    subscribe(Happened, refuse, phase=Phase.IN_TRANSACTION)
    try:
        with pytest.raises(PermissionError), transaction.atomic():
            publish(Happened(4))
    finally:
        unsubscribe(Happened, refuse)
    assert ("late", 4) not in seen


@pytest.mark.django_db(transaction=True)
def test_a_failing_on_commit_handler_is_logged_and_the_others_still_run(seen, caplog):
    def broken(event: Happened) -> None:
        raise ValueError("broken handler")

    subscribe(Happened, broken)
    try:
        with transaction.atomic():
            publish(Happened(5))
    finally:
        unsubscribe(Happened, broken)
    assert ("late", 5) in seen
    assert "could not be handled" in caplog.text
    assert "broken" in caplog.text


def test_subscribing_twice_is_one_subscription(seen):
    def once(event: Happened) -> None:
        pass

    subscribe(Happened, once)
    subscribe(Happened, once)
    try:
        assert [handler for _, handler in subscribers_of(Happened)].count(once) == 1
    finally:
        unsubscribe(Happened, once)

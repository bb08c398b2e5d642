"""SharedWork: each item runs once, on the posting thread or a helper's; results in
order; an item's error reaches the poster once every item has ended; a helper leaves
when what it awaits is done."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from memoryd.retrieval.shared_work import SharedWork


def test_alone_the_poster_runs_every_item_in_order():
    shared = SharedWork()
    assert shared.map(lambda x: x * x, range(5)) == [0, 1, 4, 9, 16]
    assert shared.map(lambda x: x, []) == []


def test_a_helper_takes_items_and_each_runs_once():
    shared = SharedWork()
    helper = threading.get_ident()
    helper_took_one = threading.Event()
    ran: list[tuple[int, int]] = []

    def item(i: int) -> int:
        ran.append((i, threading.get_ident()))
        if threading.get_ident() == helper:
            helper_took_one.set()
        else:  # the poster waits until the helper has taken one
            helper_took_one.wait(timeout=30)
        return 10 * i

    with ThreadPoolExecutor(1) as pool:
        posted = pool.submit(shared.map, item, range(8))
        shared.help_until(posted)
        assert posted.result(timeout=30) == [10 * i for i in range(8)]
    assert sorted(i for i, _ in ran) == list(range(8)), "each item once"
    assert len({thread for _, thread in ran}) == 2 and helper_took_one.is_set()


def test_an_item_that_fails_is_raised_by_the_poster_after_the_others_end():
    shared = SharedWork()
    ended: list[int] = []
    helper_started = threading.Event()

    def item(i: int) -> int:
        if i == 0:
            helper_started.wait(timeout=30)
            raise ValueError("block 0 failed")
        helper_started.set()
        time.sleep(0.05)  # still running when the poster's own item has failed
        ended.append(i)
        return i

    with ThreadPoolExecutor(1) as pool:
        posted = pool.submit(shared.map, item, [0, 1])
        shared.help_until(posted)
        with pytest.raises(ValueError, match="block 0 failed"):
            posted.result(timeout=30)
    assert ended == [1], "the poster waited for the item the helper had taken"


def test_a_helper_with_nothing_posted_leaves_when_the_awaited_is_done():
    shared = SharedWork()
    awaited: Future[None] = Future()
    threading.Timer(0.05, awaited.set_result, [None]).start()
    shared.help_until(awaited)
    assert awaited.done()
    shared.help_until(awaited)  # already done: returns at once

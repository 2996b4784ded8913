from __future__ import annotations

import re
import threading

from partwire import ids


def test_ascending_ids_sort_in_creation_order_even_within_a_millisecond() -> None:
    made = [ids.message_id() for _ in range(5_000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_session_ids_sort_newest_first() -> None:
    made = [ids.session_id() for _ in range(1_000)]
    assert made == sorted(made, reverse=True)


def test_prefixes_and_shape() -> None:
    for make, prefix in [
        (ids.session_id, "ses"),
        (ids.message_id, "msg"),
        (ids.part_id, "prt"),
        (ids.event_id, "evt"),
    ]:
        assert re.fullmatch(rf"{prefix}_[0-9a-f]{{14}}[0-9A-Za-z]{{12}}", make())


def test_monotonic_across_threads() -> None:
    results: list[list[str]] = [[] for _ in range(4)]

    def work(bucket: list[str]) -> None:
        bucket.extend(ids.event_id() for _ in range(2_000))

    threads = [threading.Thread(target=work, args=(b,)) for b in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    everything = [i for bucket in results for i in bucket]
    assert len({i[:18] for i in everything}) == len(everything)  # time+counter part is unique
    for bucket in results:
        assert bucket == sorted(bucket)


def test_observe_moves_the_clock_forward() -> None:
    future = "evt_0fffffff000000" + "A" * 12
    ids.observe(future)
    assert ids.event_id() > future

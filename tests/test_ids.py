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


def test_logged_event_ids_sort_by_sequence_and_name_their_log() -> None:
    old = ids.event_id()  # an id of the scheme before logs had epochs
    epoch = ids.log_epoch(after=old)
    made = [ids.logged_event_id(epoch, seq) for seq in (1, 2, 15, 16, 4096, 2**40)]
    assert made == sorted(made) and all(old < i for i in made)
    assert [ids.logged_event_seq(i, epoch) for i in made] == [1, 2, 15, 16, 4096, 2**40]
    other_log = ids.log_epoch()
    assert ids.logged_event_seq(made[0], other_log) is None
    for bad in (old, "evt_" + "g" * 26, made[0].upper(), made[0] + "0", "evt_1_" + "0" * 24):
        assert ids.logged_event_seq(bad, epoch) is None


def test_a_log_epoch_is_above_the_id_it_follows() -> None:
    future = "evt_ff000000000000" + "A" * 12  # a clock far ahead of this one
    assert ids.log_epoch(after=future) == 0xFF000000000000 + 1
    assert ids.log_epoch(after="evt_00000000000001" + "A" * 12) > 1  # the clock wins

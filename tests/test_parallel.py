"""ppt.parallel: the helper thread, and one_thread() for a driving process whose workers take every core."""

import threading
import time

import torch

from ppt import parallel


def test_one_thread_turns_the_helper_and_torch_threads_off_and_restores_them():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert parallel.helper() is not None
        with parallel.one_thread():
            assert parallel.helper() is None and torch.get_num_threads() == 1
            with parallel.one_thread():  # nested: still off
                assert parallel.helper() is None
            assert parallel.helper() is None
            names = []
            parallel.for_each(lambda i: names.append(threading.current_thread().name), 50)
            assert set(names) == {threading.current_thread().name}  # every item on this thread
        assert parallel.helper() is not None and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_for_each_computes_every_item_once_with_the_helper():
    torch_before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = [0] * 500
        parallel.for_each(lambda i: seen.__setitem__(i, seen[i] + 1), 500)
        assert seen == [1] * 500
    finally:
        torch.set_num_threads(torch_before)


def test_helpers_follow_torch_threads_capped_by_the_cores(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setattr(parallel, "available_cores", lambda: 8)
    try:
        for threads, expected in ((1, 0), (2, 1), (4, 3), (16, 7)):
            torch.set_num_threads(threads)
            assert parallel.helpers() == expected
    finally:
        torch.set_num_threads(before)


def test_rantext_output_is_the_same_with_any_number_of_helper_threads(array_space, monkeypatch):
    """Laplace draws and BPE encoding shared by 0, 1 or 3 helpers: byte-identical seeded output (each
    record's draws come from its own sub-stream, computed whole by one thread)."""
    import itertools

    from ppt.mechanisms.rantext import Rantext
    from ppt.rng import record_generator

    words = ["".join(p) for p in itertools.product("bcdfghklmnprstvz", "aeiou", "bcdfghklmnprstvz")][:300]
    space = array_space("par", words, seed=2, dim=16)
    mech = Rantext(6.0, space=space, z=5.0, quiet=True)
    texts = [" ".join(words[(7 * i + j) % 300] for j in range(40)) for i in range(64)]
    monkeypatch.setattr(parallel, "available_cores", lambda: 8)
    monkeypatch.setattr("ppt.mechanisms.rantext.mechanism.MIN_SHARED_DRAWS", 1)
    before = torch.get_num_threads()
    outs, used, helpers = [], [], []
    try:
        for threads in (1, 2, 4):
            torch.set_num_threads(threads)
            names = set()
            real = parallel.Claims.take

            def take(self, from_back, real=real, names=names):
                names.add(threading.current_thread().name)
                time.sleep(0.002)  # slow claims, so a helper that starts late still gets items
                return real(self, from_back)

            monkeypatch.setattr(parallel.Claims, "take", take)
            helpers.append(parallel.helpers())
            outs.append([r.text for r in mech.sanitize_batch(texts, [record_generator(1, i) for i in range(64)])])
            used.append(len(names))
    finally:
        torch.set_num_threads(before)
    assert outs[0] == outs[1] == outs[2]
    # the work really was shared: no helper, then 1, then 3 (how many of the 3 got items is the scheduler's)
    assert helpers == [0, 1, 3] and used[0] == 0 and used[1] == 2 and used[2] >= 2

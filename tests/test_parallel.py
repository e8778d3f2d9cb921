"""ppt.parallel: the helper thread, and one_thread() for a driving process whose workers take every core."""

import threading

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

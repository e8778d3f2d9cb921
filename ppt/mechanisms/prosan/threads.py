"""How many intra-op threads ProSan's model passes use (``threads`` parameter of prosan and prosan-lite).

Why: on a CPU whose cores are already busy (other processes; load average >= cores), torch's intra-op
threads spend their time waiting for each other at every operator's barrier. On the shared 2-core machine
(load average ~17) one greedy generation of 8 tokens took 50 s with torch's 2 threads and 3.4 s with one;
a forward pass 14 s against 1.5 s. ``"auto"`` therefore runs on one thread while the 1-minute load average
is at least the number of cores, and leaves torch's setting alone otherwise; an integer forces that many.
The thread count changed no output where measured (`bench/prosan_speed.py`: identical outputs), so it is
not part of the stamp's signature.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any

import torch


def parse_threads(value: Any) -> str | int:
    """``"auto"`` or a positive int."""
    if value in (None, "auto"):
        return "auto"
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"threads must be 'auto' or a positive integer (got {value!r})") from None
    if n < 1:
        raise ValueError(f"threads must be 'auto' or a positive integer (got {value!r})")
    return n


def resolve_threads(setting: str | int) -> int:
    """The thread count to use now: the integer, or for ``"auto"`` 1 on a busy CPU and torch's setting otherwise."""
    if setting != "auto":
        return int(setting)
    try:
        busy = os.getloadavg()[0] >= (os.cpu_count() or 1)
    except OSError:  # no load average on this platform
        busy = False
    return 1 if busy else torch.get_num_threads()


@contextmanager
def torch_threads(setting: str | int):
    """Run the block with ``resolve_threads(setting)`` intra-op threads, restoring torch's setting afterwards."""
    before = torch.get_num_threads()
    n = resolve_threads(setting)
    if n == before:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


__all__ = ["parse_threads", "resolve_threads", "torch_threads"]

"""P-m1 (issue 29): a SIGTERM or Ctrl-C while stdout is back-pressured tore the last line (the exception struck
inside a buffered write). The sink now writes with os.write and finishes the line in hand before stopping."""

from __future__ import annotations

import os

import pytest

from ppt.io import sinks
from ppt.io.errors import Terminated


def fake_write(fail_on: int, chunk: int, exc):
    out, calls = bytearray(), [0]

    def write(fd, view):
        calls[0] += 1
        if calls[0] == fail_on:
            raise exc
        n = min(chunk, len(view))
        out.extend(bytes(view[:n]))
        return n

    return out, write


@pytest.mark.parametrize("exc", [Terminated(15), KeyboardInterrupt()])
def test_a_signal_mid_line_finishes_that_line_and_stops(monkeypatch, exc):
    data = b"".join(b'{"id": %d, "text": "%s"}\n' % (i, b"x" * 40) for i in range(10))
    out, write = fake_write(fail_on=3, chunk=25, exc=exc)  # two partial writes, then the signal
    monkeypatch.setattr(sinks.os, "write", write)
    with pytest.raises(type(exc)):
        sinks.write_whole_lines(1, data)
    assert out.endswith(b"\n") and data.startswith(bytes(out))  # a prefix of whole lines: nothing torn
    assert out.count(b"\n") == 1  # the line in hand, no more


def test_a_signal_between_lines_writes_nothing_more(monkeypatch):
    data = b'{"id": 1}\n{"id": 2}\n'
    out, write = fake_write(fail_on=2, chunk=10, exc=Terminated(15))  # the first line exactly, then the signal
    monkeypatch.setattr(sinks.os, "write", write)
    with pytest.raises(Terminated):
        sinks.write_whole_lines(1, data)
    assert bytes(out) == b'{"id": 1}\n'


def test_stdout_sink_writes_through_the_descriptor(tmp_path):
    path = tmp_path / "out"
    with open(path, "wb") as f:
        sink = sinks._StreamSink(f, is_stdout=False)
        assert sink.fd == f.fileno()
        sink.write(b'{"a": 1}\n')
        sink.commit()
    assert path.read_bytes() == b'{"a": 1}\n' and os.path.getsize(path) == 9

"""The shared-memory channel between a writer process and a reader, with real processes and a real memfd."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
import torch

from verifier.wire.channel import Channel, ChannelClosed

WRITER = textwrap.dedent(
    """
    import sys, torch
    from verifier.wire.channel import Channel
    channel = Channel(int(sys.argv[1]))
    channel.send_json({"leaves": 2})
    channel.send_tensor(torch.arange(10_000, dtype=torch.float32).reshape(100, 100).t())
    channel.send_tensor(torch.tensor([True, False, True]))
    """
)


def start_writer(channel: Channel, code: str = WRITER) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, str(channel.fd)], pass_fds=[channel.fd])


def test_a_tensor_larger_than_the_ring_crosses_in_order_from_another_process():
    channel = Channel.create(1024)  # 4 slots of 1 KiB: the 40 kB tensor takes 40 frames
    writer = start_writer(channel)
    deadline = time.monotonic() + 60
    assert channel.receive_json(deadline) == {"leaves": 2}
    chunks = list(channel.receive_bytes(40_000, torch.device("cpu"), deadline))
    assert [c.numel() for c in chunks] == [1024] * 39 + [40_000 - 39 * 1024]
    values = torch.cat(chunks).view(torch.float32)
    assert torch.equal(values, torch.arange(10_000, dtype=torch.float32).reshape(100, 100).t().reshape(-1))
    [flags] = channel.receive_bytes(3, torch.device("cpu"), deadline)
    assert flags.view(torch.bool).tolist() == [True, False, True]
    assert writer.wait(timeout=60) == 0
    channel.close()


def test_skipped_bytes_keep_the_reader_in_step_with_the_next_frame():
    """A call the reader cannot use (its GPU is gone) is consumed frame by frame without a copy."""
    channel = Channel.create(1024)
    writer = start_writer(channel)
    deadline = time.monotonic() + 60
    assert channel.receive_json(deadline) == {"leaves": 2}
    channel.skip_bytes(40_000, deadline)
    [flags] = channel.receive_bytes(3, torch.device("cpu"), deadline)
    assert flags.view(torch.bool).tolist() == [True, False, True]
    assert writer.wait(timeout=60) == 0
    channel.close()


def test_skipping_more_bytes_than_a_frame_holds_is_refused():
    channel = Channel.create(1024)
    writer = start_writer(channel)
    deadline = time.monotonic() + 60
    channel.receive_json(deadline)
    channel.skip_bytes(40_000, deadline)
    with pytest.raises(ChannelClosed, match="expected 2 more tensor bytes, got a frame of 3"):
        channel.skip_bytes(2, deadline)
    channel.close_reader()
    writer.wait(timeout=60)
    channel.close()


def test_a_reader_waiting_on_a_writer_that_died_stops_when_the_parent_closes_the_writer_end():
    channel = Channel.create(1024)
    writer = start_writer(channel, "import os; os._exit(3)")
    writer.wait(timeout=60)
    channel.close_writer()
    with pytest.raises(ChannelClosed, match="closed the channel"):
        channel.receive_json(time.monotonic() + 60)
    channel.close()


def test_a_writer_waiting_for_room_stops_when_the_reader_is_gone():
    channel = Channel.create(1024)
    writer = start_writer(channel)
    time.sleep(0.5)
    channel.close_reader()
    assert writer.wait(timeout=60) != 0  # ChannelClosed in the writer, once the ring is full
    channel.close()


def test_frames_that_lie_about_their_size_or_kind_are_refused():
    channel = Channel.create(1024)
    writer = start_writer(channel)
    deadline = time.monotonic() + 60
    with pytest.raises(ChannelClosed, match="expected a frame header"):
        channel.receive_json(deadline)  # the header; the next frame is tensor bytes, not a header
        channel.receive_json(deadline)
    channel.close_reader()
    writer.wait(timeout=60)
    channel.close()


def test_nothing_arriving_within_the_deadline_is_a_timeout():
    channel = Channel.create(1024)
    with pytest.raises(TimeoutError):
        channel.receive_json(time.monotonic() + 0.2)
    channel.close()


def test_only_sizes_that_fit_the_layout_make_a_channel():
    with pytest.raises(ValueError, match="multiple of 64"):
        Channel.create(1000)


def test_a_header_that_is_not_json_is_the_writers_fault_not_a_crash():
    channel = Channel.create(1024)
    code = "import sys\nfrom verifier.wire.channel import Channel\nc = Channel(int(sys.argv[1]))\n"
    code += "slot = c._acquire()\nc.map[c._payload(slot) : c._payload(slot) + 5] = b'[[[[['\nc._publish(slot, 1, 5)\n"
    writer = start_writer(channel, code)
    assert writer.wait(timeout=60) == 0
    with pytest.raises(ChannelClosed, match="not JSON"):
        channel.receive_json(time.monotonic() + 60)
    channel.close()

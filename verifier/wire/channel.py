"""The one-way path of the candidate's outputs to the trusted comparer: a shared-memory ring, chunk by chunk.

The parent creates one channel per slot (an anonymous memfd) and hands its descriptor to both zygotes of the
slot. The candidate's job writes frames (a JSON header per call, then the raw bytes of each output tensor);
the reference side's job reads them and compares each chunk with its own output on the device. Nothing
travels the other way but two flags: the reader's `ready` (its reference is computed, so the candidate may
start timing) and the ends' `closed` bits. No output ever needs a file or a host copy of its full size: a
6 GiB output crosses in ring-sized chunks, through pinned memory on a GPU.

Everything read here is untrusted (the candidate's process maps the same memory): sizes are bounded by the
caller, and a writer that stops sending leaves the reader waiting only until the parent closes the channel.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import mmap
import os
import struct
import time
from collections.abc import Iterator

import torch

HEADER_BYTES = 4096
SLOTS = 4
SLOT_HEADER = struct.Struct("<QQ")  # kind, payload bytes
JSON_FRAME, DATA_FRAME = 1, 2
WRITE_SEQ, READ_SEQ, FLAGS, READY = 0, 8, 16, 24
WRITER_CLOSED, READER_CLOSED = 1, 2
LONGEST_NAP = 0.001


class ChannelClosed(Exception):
    """The other end is gone (it finished, failed, or the parent closed the channel)."""


class Channel:
    """A ring of `SLOTS` slots of `slot_bytes` each, after a header page of counters and flags."""

    def __init__(self, fd: int, owner: bool = False):
        self.fd = fd
        self.owner = owner
        size = os.fstat(fd).st_size
        self.slot_bytes = (size - HEADER_BYTES) // SLOTS - HEADER_BYTES
        if self.slot_bytes <= 0 or self.slot_bytes % 64:
            raise ValueError(f"not a channel: {size} bytes")
        self.map = mmap.mmap(fd, size)
        self.bytes = torch.frombuffer(self.map, dtype=torch.uint8)
        self._pinned = False
        self._copy_stream: torch.cuda.Stream | None = None

    @classmethod
    def create(cls, slot_bytes: int) -> Channel:
        """A new channel (in the parent); its `fd` is inherited by the zygotes it is passed to."""
        if slot_bytes <= 0 or slot_bytes % 64:
            raise ValueError(f"slot size must be a positive multiple of 64 bytes, got {slot_bytes}")
        fd = os.memfd_create("tritonize-channel", 0)
        os.ftruncate(fd, HEADER_BYTES + SLOTS * (HEADER_BYTES + slot_bytes))
        return cls(fd, owner=True)

    def close(self) -> None:
        """Unmap (and, in the parent, release the memfd)."""
        del self.bytes
        with contextlib.suppress(BufferError):  # still exported to a pinned registration; the process is ending
            self.map.close()
        if self.owner:
            os.close(self.fd)

    # ------------------------------------------------------------ the parent

    def reset(self) -> None:
        """Empty the ring and clear the flags, before a writer and a reader start."""
        self.map[:HEADER_BYTES] = bytes(HEADER_BYTES)

    def close_writer(self) -> None:
        """No more frames will come: a reader waiting for one stops."""
        self._set_flag(WRITER_CLOSED)

    def close_reader(self) -> None:
        """No more frames will be read: a writer waiting for room stops."""
        self._set_flag(READER_CLOSED)

    # ------------------------------------------------------------ either end, inside the sandbox

    def pin(self) -> bool:
        """Page-lock the ring for the GPU's copy engines (much faster device copies); False if refused."""
        if self._pinned or not torch.cuda.is_available():
            return self._pinned
        try:
            address = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
            self._pinned = int(torch.cuda.cudart().cudaHostRegister(address, len(self.map), 0)) == 0
        except (AttributeError, RuntimeError, TypeError):  # an older or different CUDA binding: copies stay pageable
            self._pinned = False
        return self._pinned

    def mark_ready(self) -> None:
        """The reader has its reference for the next call (the timed candidate waits for this)."""
        struct.pack_into("<Q", self.map, READY, 1)

    def wait_ready(self, deadline: float) -> None:
        self._wait(lambda: self._get(READY) == 1, deadline, READER_CLOSED)

    # ------------------------------------------------------------ the writer

    def send_json(self, value: object) -> None:
        data = json.dumps(value).encode()
        if len(data) > self.slot_bytes:
            raise ValueError(f"a frame header of {len(data)} bytes does not fit a {self.slot_bytes}-byte slot")
        slot = self._acquire()
        self.map[self._payload(slot) : self._payload(slot) + len(data)] = data
        self._publish(slot, JSON_FRAME, len(data))

    def send_tensor(self, tensor: torch.Tensor) -> None:
        """The tensor's bytes in row-major order, one slot at a time (device-to-host straight into the ring)."""
        flat = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
        for start in range(0, flat.numel(), self.slot_bytes):
            piece = flat[start : start + self.slot_bytes]
            slot = self._acquire()
            offset = self._payload(slot)
            self.bytes[offset : offset + piece.numel()].copy_(piece)
            self._publish(slot, DATA_FRAME, piece.numel())

    # ------------------------------------------------------------ the reader

    def receive_json(self, deadline: float) -> object:
        slot, kind, size = self._next(deadline)
        try:
            if kind != JSON_FRAME:
                raise ChannelClosed("expected a frame header, got tensor bytes")
            offset = self._payload(slot)
            try:
                return json.loads(bytes(self.map[offset : offset + size]))
            except (ValueError, RecursionError) as exc:
                raise ChannelClosed(f"a frame header that is not JSON ({type(exc).__name__})") from exc
        finally:
            self._release()

    def receive_bytes(self, total: int, device: torch.device, deadline: float) -> Iterator[torch.Tensor]:
        """`total` bytes, as uint8 chunks copied onto `device` (each chunk is the reader's own copy). On a GPU
        with the ring pinned, the next chunk's copy runs on a side stream while the caller works on this one."""
        if device.type == "cuda" and self._pinned:
            yield from self._receive_overlapped(total, device, deadline)
            return
        received = 0
        while received < total:
            offset, size = self._next_data(total - received, deadline)
            try:
                chunk = self.bytes[offset : offset + size].to(device, copy=True)
            finally:
                self._release()
            received += size
            yield chunk

    def skip_bytes(self, total: int, deadline: float) -> None:
        """Consume `total` bytes of tensor frames without copying them anywhere (a call the reader cannot use;
        touches no device, so it works after the reader's GPU context is lost)."""
        received = 0
        while received < total:
            _, size = self._next_data(total - received, deadline)
            self._release()
            received += size

    def _receive_overlapped(self, total: int, device: torch.device, deadline: float) -> Iterator[torch.Tensor]:
        if self._copy_stream is None:
            self._copy_stream = torch.cuda.Stream(device)
        consumer = torch.cuda.current_stream(device)
        received, ready = 0, None
        while received < total or ready is not None:
            copying = None
            if received < total:
                offset, size = self._next_data(total - received, deadline)
                try:
                    with torch.cuda.stream(self._copy_stream):
                        chunk = torch.empty(size, dtype=torch.uint8, device=device)
                        chunk.copy_(self.bytes[offset : offset + size], non_blocking=True)
                        copied = torch.cuda.Event()
                        copied.record(self._copy_stream)
                except BaseException:
                    self._release()
                    raise
                copying = (chunk, copied)
                received += size
            if ready is not None:
                yield ready
            ready = None
            if copying is not None:
                chunk, copied = copying
                try:
                    copied.synchronize()  # the slot's bytes are on the device: the writer may reuse it
                finally:
                    self._release()
                consumer.wait_event(copied)
                chunk.record_stream(consumer)
                ready = chunk

    def _next_data(self, remaining: int, deadline: float) -> tuple[int, int]:
        """The next frame's payload offset and size, which must be tensor bytes, at most `remaining` of them."""
        slot, kind, size = self._next(deadline)
        if kind != DATA_FRAME or size > remaining:
            self._release()
            raise ChannelClosed(f"expected {remaining} more tensor bytes, got a frame of {size}")
        return self._payload(slot), size

    # ------------------------------------------------------------ the ring

    def _payload(self, slot: int) -> int:
        return HEADER_BYTES + slot * (HEADER_BYTES + self.slot_bytes) + HEADER_BYTES

    def _acquire(self) -> int:
        sequence = self._get(WRITE_SEQ)
        self._wait(lambda: self._get(READ_SEQ) > sequence - SLOTS, None, READER_CLOSED)
        return sequence % SLOTS

    def _publish(self, slot: int, kind: int, size: int) -> None:
        SLOT_HEADER.pack_into(self.map, self._payload(slot) - HEADER_BYTES, kind, size)
        struct.pack_into("<Q", self.map, WRITE_SEQ, self._get(WRITE_SEQ) + 1)

    def _next(self, deadline: float) -> tuple[int, int, int]:
        sequence = self._get(READ_SEQ)
        self._wait(lambda: self._get(WRITE_SEQ) > sequence, deadline, WRITER_CLOSED)
        slot = sequence % SLOTS
        kind, size = SLOT_HEADER.unpack_from(self.map, self._payload(slot) - HEADER_BYTES)
        if size > self.slot_bytes:
            raise ChannelClosed(f"a frame claims {size} bytes, more than a slot holds")
        return slot, kind, size

    def _release(self) -> None:
        struct.pack_into("<Q", self.map, READ_SEQ, self._get(READ_SEQ) + 1)

    def _wait(self, done, deadline: float | None, closed_by: int) -> None:
        nap = 1e-5
        while not done():
            if self._get(FLAGS) & closed_by:
                raise ChannelClosed("the other end closed the channel")
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("nothing arrived on the channel in time")
            time.sleep(nap)
            nap = min(nap * 2, LONGEST_NAP)

    def _get(self, offset: int) -> int:
        return struct.unpack_from("<Q", self.map, offset)[0]

    def _set_flag(self, flag: int) -> None:
        struct.pack_into("<Q", self.map, FLAGS, self._get(FLAGS) | flag)

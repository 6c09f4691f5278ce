"""Guard zones: writes outside a buffer are named, reads outside an input read NaN, and allocations keep their
meaning (values, strides, dtype) while guarded."""

from __future__ import annotations

import math

import torch

from verifier.sandbox.guards import Guards


def test_allocations_keep_their_values_shapes_and_strides_and_are_restored_after():
    guards = Guards()
    with guards.allocations():
        zeros = torch.zeros(3, 4)
        full = torch.full((2, 2), 7.0, dtype=torch.float64)
        strided = torch.empty_strided((2, 3), (1, 2))
        like = torch.ones_like(zeros, requires_grad=True)
        new = zeros.new_full((5,), 2)
    assert torch.equal(zeros, torch.zeros(3, 4)) and torch.equal(full, torch.full((2, 2), 7.0, dtype=torch.float64))
    assert strided.stride() == (1, 2) and like.requires_grad and torch.equal(new, torch.full((5,), 2.0))
    assert torch.zeros.__module__ != "verifier.sandbox.guards" and guards.damage() == []
    assert len(guards.buffers) == 5


def test_a_write_past_either_end_names_the_buffer_and_the_distance():
    guards = Guards()
    with guards.allocations():
        out = torch.empty(10, dtype=torch.float32)
    flat = out.as_strided((12,), (1,), out.storage_offset() - 1)  # one element each side
    flat[0] = 1.0
    flat[11] = 1.0
    [damage] = guards.damage()
    assert "buffer #1 (float32[10], from torch.empty)" in damage
    assert "4 bytes before its first element" in damage and "4 bytes after its last element" in damage


def test_an_input_read_past_its_end_reads_nan():
    guards = Guards()
    x = guards.input(torch.arange(6, dtype=torch.float32), 0)
    assert torch.equal(x, torch.arange(6, dtype=torch.float32))
    beyond = x.as_strided((1,), (1,), x.storage_offset() + 6)
    assert math.isnan(float(beyond[0])) and guards.damage() == []
    assert guards.input(3, 1) == 3


def test_an_expanded_input_keeps_its_values_and_strides_when_guarded():
    """Position ids as models take them (`arange(S).expand(B, S)`): every row is one row of memory."""
    positions = torch.arange(8).expand(2, 8)
    window = torch.arange(20.0).as_strided((3, 4), (4, 1), 2)  # a view that starts inside its storage
    guards = Guards()
    got, shifted = guards.input(positions, 0), guards.input(window, 1)
    assert torch.equal(got, positions) and got.stride() == (0, 1)
    assert torch.equal(shifted, window) and shifted.stride() == (4, 1) and guards.damage() == []


def test_a_write_past_an_expanded_input_is_still_named():
    """The expanded input's guarded copy spans one row of memory: a write past it is caught as for any input."""
    guards = Guards()
    got = guards.input(torch.arange(8.0).expand(2, 8), 0)
    got.as_strided((1,), (1,), got.storage_offset() + 8)[0] = 1.0
    [damage] = guards.damage()
    assert "input #0 (float32[2, 8])" in damage and "4 bytes after its last element" in damage

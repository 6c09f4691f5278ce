"""The rounding noise the second opinion allows: as large as an honest fp32 order's error, far below a precision
downgrade's, on a matrix product, a long sum and a group norm whose mean cancels."""

from __future__ import annotations

import torch

from verifier.sandbox.rounding import rounding_noise


def _tf32(t: torch.Tensor) -> torch.Tensor:
    """`t` cut to TF32's 10-bit mantissa (round to nearest), as a tensor core's fp32 matmul reads it."""
    bits = t.float().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def _noise(run) -> float:
    with torch.no_grad():
        [noise] = rounding_noise(run, run())
    return noise.largest


def test_a_matrix_product_s_noise_covers_fp32_and_not_tf32():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(128, 4096, generator=gen), torch.randn(4096, 128, generator=gen)
    exact = a.double() @ b.double()
    noise = _noise(lambda: [a.double() @ b.double()])
    fp32 = float(((a @ b).double() - exact).abs().max())
    tf32 = float(((_tf32(a) @ _tf32(b)).double() - exact).abs().max())
    assert fp32 <= noise
    assert tf32 >= 20 * noise, (tf32, noise)


def test_a_long_sum_added_in_sequence_stays_within_the_noise():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(8, 1 << 16, generator=gen) + 0.25
    exact = x.double().sum(dim=1)
    sequential = x.cumsum(dim=1)[:, -1]  # fp32, one term after another: the least accurate common order
    noise = _noise(lambda: [x.double().sum(dim=1)])
    assert float((sequential.double() - exact).abs().max()) <= 4 * noise
    assert noise <= 1e-3 * float(exact.abs().max()), "far looser than fp32 could ever be"


def test_a_group_norm_whose_mean_cancels_allows_another_order_but_not_a_lower_precision():
    """Inputs far from zero: every order rounds the group's mean by about u·8, which the normalised values carry
    into their mean (zero, exactly). The group norm is decomposed, so that rounding is counted."""
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(4, 16, 32, 32, generator=gen) * 0.5 + 8
    norm = torch.nn.GroupNorm(4, 16).double().requires_grad_(False)
    run = lambda: [norm(x.double()).mean(dim=[1, 2, 3])]  # noqa: E731
    exact = run()[0]
    noise = _noise(run)
    groups = x.reshape(4, 4, -1)
    mean = groups.sum(-1, keepdim=True) / groups.shape[-1]  # one pass, in fp32, in another order than PyTorch's
    var = (groups * groups).sum(-1, keepdim=True) / groups.shape[-1] - mean * mean
    other_order = ((groups - mean) * torch.rsqrt(var + 1e-5)).reshape(4, -1).mean(-1)
    assert float((other_order.double() - exact).abs().max()) <= 4 * noise
    wide = groups.double()
    low_mean = groups.bfloat16().double().mean(-1, keepdim=True)  # the mean of the inputs read in bfloat16
    lower = ((wide - low_mean) / wide.std(-1, correction=0, keepdim=True)).reshape(4, -1).mean(-1)
    assert float((lower - exact).abs().max()) >= 20 * noise


def test_integer_outputs_have_no_noise_and_the_same_seed_gives_the_same_noise():
    x = torch.randn(1000, generator=torch.Generator().manual_seed(3)).double()
    run = lambda: [x.softmax(0), x.argmax(), x.sum()]  # noqa: E731
    exact = run()
    first, second = rounding_noise(run, exact), rounding_noise(run, exact)
    assert first[1] is None
    assert [n.largest for n in (first[0], first[2])] == [n.largest for n in (second[0], second[2])]
    assert first[0].largest > 0 and first[2].largest > 0
    assert not first[0].products


def test_a_run_that_changes_its_outputs_under_the_disturbance_gives_no_noise():
    calls = []

    def run():
        calls.append(1)
        return [torch.ones(3, dtype=torch.float64)] * (1 if len(calls) == 1 else 2)

    assert rounding_noise(run, run()) is None


def test_a_bfloat16_task_s_noise_is_set_by_bfloat16_s_roundoff():
    x = torch.randn(64, 512, generator=torch.Generator().manual_seed(5)).bfloat16()
    run = lambda: [torch.softmax(x.double(), -1)]  # noqa: E731
    exact = run()
    [bf16_noise] = rounding_noise(run, exact, unit=2.0**-8)
    [fp32_noise] = rounding_noise(run, exact)
    pytorch_bf16 = float((torch.softmax(x, -1).double() - exact[0]).abs().max())
    assert pytorch_bf16 <= 4 * bf16_noise.largest
    assert pytorch_bf16 > 4 * fp32_noise.largest, "fp32's roundoff would refuse PyTorch's own bfloat16 softmax"


def test_views_stay_views_so_a_write_through_one_still_lands():
    """Viewing or copying values rounds nothing, and a disturbed view that were a copy would lose the write."""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(6)).double()

    def run():
        y = x.clone()
        y.view(-1)[:8] = 5.0
        return [y.t()]

    [noise] = rounding_noise(run, run())
    assert noise.largest < 1e-6, "the write through the view was lost in a disturbed run"

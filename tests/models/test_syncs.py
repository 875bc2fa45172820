"""The device→host sync counter (paravt.models.syncs) sees each kind of sync by the op, on a CPU."""

from __future__ import annotations

import torch

from paravt.models.syncs import SyncCounter


def test_each_kind_of_sync_is_counted_where_it_happens() -> None:
    x = torch.arange(6)
    with SyncCounter() as c:
        x[0].item()
        float(x.sum())
        bool(x[1] > 0)
        x.tolist()
        x.cpu()
        x.to("cpu")
        x.nonzero()
        x[x > 2]  # a boolean index: its length is read from the data
        torch.repeat_interleave(x, x)
    assert c.by_kind == {"item": 3, "tolist": 1, "host_copy": 2, "data_shape": 3}
    assert all("test_syncs.py" in site for site in c.sites)
    assert c.total == 9


def test_device_side_ops_and_moves_to_the_code_own_device_are_not_syncs() -> None:
    x = torch.arange(6, dtype=torch.float32)
    dev = x.device  # the model's device: a move there never waits on a GPU
    with SyncCounter() as c:
        y = (x * 2).softmax(0).to(dev).to(torch.float64)
        torch.repeat_interleave(x, torch.tensor([1, 2, 0, 1, 1, 1]), output_size=6)
        torch.where(x > 2, x, torch.zeros_like(x)).sum()
        x[torch.tensor([0, 2])]  # integer indices: the shape is the index's
    assert c.total == 0
    assert y.dtype == torch.float64


def test_an_optimizer_step_counter_is_host_side_by_design() -> None:
    """AdamW reads its step counter with .item(): a host tensor unless capturable, never a sync;
    the gradient norm the trainer reads is one."""
    lin = torch.nn.Linear(4, 3)
    opt = torch.optim.AdamW(lin.parameters(), lr=1e-3)
    for _ in range(2):
        opt.zero_grad()
        lin(torch.randn(5, 4)).sum().backward()
        with SyncCounter() as c:
            norm = float(torch.nn.utils.clip_grad_norm_(lin.parameters(), 1.0))
            opt.step()
    assert norm > 0
    assert c.by_kind["item"] == 1


def test_device_filter_counts_only_ops_on_that_device_and_json_divides() -> None:
    x = torch.arange(4)
    with SyncCounter(device="cuda") as on_gpu, SyncCounter() as anywhere:
        x.tolist()
        x[0].item()
    assert on_gpu.total == 0
    assert anywhere.total == 2
    assert anywhere.to_json(per=2)["total"] == 1.0

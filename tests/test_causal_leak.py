"""course_utils.causal_leak: BatchNorm in a causal language model lets a position see the tokens after it.

The chapter 03 notebook measures the leak and the "training below log(vocab)" effect at several seeds; these tests
pin the tools it uses: LayerNorm's outputs are exactly causal, BatchNorm's are not, and every helper leaves the
model as it found it.
"""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from torch import nn

from course_utils import causal_leak, norms
from course_utils.figures import figure_problems


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def tokens(seed=0, batch=4):
    cfg = causal_leak.LEAK_CONFIG
    return torch.randint(0, cfg.vocab_size, (batch, cfg.block_size), generator=torch.Generator().manual_seed(seed))


def state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_with_batch_norm_replaces_every_layernorm_and_keeps_the_other_weights():
    ln = causal_leak.make_model("layernorm", 3)
    bn = causal_leak.make_model("batchnorm", 3)
    n_layernorms = sum(isinstance(m, nn.LayerNorm) for m in ln.modules())
    assert n_layernorms == 3  # norm1, norm2 of the one block, and the final norm
    assert not any(isinstance(m, nn.LayerNorm) for m in bn.modules())
    assert sum(isinstance(m, norms.BatchNorm) for m in bn.modules()) == n_layernorms
    ln_weights = {k: v for k, v in ln.state_dict().items() if "norm" not in k}
    bn_weights = {k: v for k, v in bn.state_dict().items() if "norm" not in k}
    assert ln_weights.keys() == bn_weights.keys()
    assert all(torch.equal(ln_weights[k], bn_weights[k]) for k in ln_weights)  # same seed, same weights
    rms = causal_leak.make_model("rmsnorm", 3)
    assert sum(isinstance(m, nn.RMSNorm) for m in rms.modules()) == n_layernorms
    assert torch.equal(rms.lm_head.weight, ln.lm_head.weight)
    with pytest.raises(ValueError, match="layernorm"):
        causal_leak.make_model("groupnorm", 0)


def test_changed_tokens_changes_exactly_the_given_positions():
    idx = tokens()
    out = causal_leak.changed_tokens(idx, [2, 5], vocab_size=16, seed=1)
    differs = out != idx
    assert differs[:, [2, 5]].all() and differs.sum() == 2 * idx.shape[0]
    only_row_1 = causal_leak.changed_tokens(idx, range(8), vocab_size=16, rows=[1])
    assert (only_row_1 != idx).sum() == 8 and (only_row_1[1] != idx[1]).all()
    assert out.min() >= 0 and out.max() < 16


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_layernorm_and_rmsnorm_are_exactly_causal_and_batchnorm_is_not(seed):
    idx = tokens(seed)
    is_future = torch.ones(8, 8, dtype=torch.bool).triu(1)
    ln = causal_leak.make_model("layernorm", seed)
    bn = causal_leak.make_model("batchnorm", seed)
    rms_matrix = causal_leak.influence_matrix(causal_leak.make_model("rmsnorm", seed), idx, seed=seed)
    assert rms_matrix[is_future].max().item() == 0.0
    ln_matrix = causal_leak.influence_matrix(ln, idx, seed=seed)
    bn_matrix = causal_leak.influence_matrix(bn, idx, seed=seed)
    assert ln_matrix[is_future].max().item() == 0.0  # exactly: not a rounding-level difference
    assert (ln_matrix.diagonal() > 0).all()  # the model does read its own token
    assert (bn_matrix[is_future] > 0).all()
    assert causal_leak.other_sequence_change(ln, idx, seed=seed) == 0.0
    assert causal_leak.other_sequence_change(bn, idx, seed=seed) > 0


def test_the_helpers_leave_the_model_as_they_found_it():
    bn = causal_leak.make_model("batchnorm", 0)
    bn.eval()
    before = state(bn)
    causal_leak.influence_matrix(bn, tokens())
    causal_leak.other_sequence_change(bn, tokens())
    for mode in ("train", "eval", "prefix"):
        causal_leak.per_position_loss(bn, mode, batches=2)
    after = state(bn)
    assert not bn.training  # still in evaluation mode
    assert all(torch.equal(before[k], after[k]) for k in before)  # the running statistics too
    assert torch.get_num_threads() >= 1


def test_per_position_loss_modes():
    ln = causal_leak.make_model("layernorm", 0)
    train = causal_leak.per_position_loss(ln, "train", batches=5)
    prefix = causal_leak.per_position_loss(ln, "prefix", batches=5)
    assert train.shape == (8,)
    assert torch.allclose(train, causal_leak.per_position_loss(ln, "eval", batches=5))  # LayerNorm has no modes
    assert torch.allclose(train, prefix, atol=1e-5)  # and the prefix alone gives the same outputs
    bn_prefix = causal_leak.per_position_loss(causal_leak.make_model("batchnorm", 0), "prefix", batches=2)
    assert math.isnan(bn_prefix[0]) and not bn_prefix[1:].isnan().any()  # one token of one sequence: cannot run
    with pytest.raises(ValueError, match="mode"):
        causal_leak.per_position_loss(ln, "generate")


def test_train_on_random_tokens_trains_on_fresh_batches():
    model = causal_leak.train_on_random_tokens("batchnorm", seed=0, steps=3)
    fresh = causal_leak.make_model("batchnorm", 0)
    assert not torch.equal(model.lm_head.weight, fresh.lm_head.weight)  # it took optimizer steps
    assert not torch.equal(model.blocks[0].norm1.running_mean, fresh.blocks[0].norm1.running_mean)


def test_the_figures_are_readable():
    matrix = torch.rand(8, 8).tril()
    fig = causal_leak.draw_influence({"LayerNorm": matrix, "BatchNorm": torch.rand(8, 8)})
    assert figure_problems(fig) == []
    zeros = [t for ax in fig.axes for t in ax.texts if t.get_text() == "0"]
    assert len(zeros) == 28  # the 28 future cells of the causal matrix, and none of the other
    curves = {"LayerNorm": torch.full((8,), 2.77), "BatchNorm, training": torch.linspace(2.4, 2.9, 8)}
    assert figure_problems(causal_leak.draw_position_loss(curves, vocab_size=16)) == []

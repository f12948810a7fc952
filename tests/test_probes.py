"""course_utils.probes: the measurements taken inside a model (per-block gradient norms, the stream's gradients and
RMS, the attention logits and entropy) agree with torch.autograd or a forward written out by hand, and leave nothing
behind (no hook, no gradient) when they are off.

`hand_rope` is chapter 04's rotation written out by hand (test_ch04_model.py)."""

import math

import pytest
import torch
from test_ch04_model import hand_rope

from course_utils.model import GPTConfig, TinyGPT, lm_loss
from course_utils.probes import (
    AttentionProbe,
    GradNormProbe,
    block_grad_norms,
    gradient_profile,
    hidden_norm_profile,
    stream_gradient_profile,
)


def _model_and_batch(placement="pre", seed=0):
    torch.manual_seed(seed)
    cfg = GPTConfig(vocab_size=30, block_size=16, n_layer=4, d_model=32, placement=placement)
    model = TinyGPT(cfg)
    g = torch.Generator().manual_seed(seed)
    return model, torch.randint(0, 30, (3, 16), generator=g), torch.randint(0, 30, (3, 16), generator=g)


def _autograd_block_norms(model, x, y, part=None):
    loss = lm_loss(model(x), y)
    result = []
    for block in model.blocks:
        params = list((block.get_submodule(part) if part else block).parameters())
        grads = torch.autograd.grad(loss, params, retain_graph=True)
        result.append(math.sqrt(sum(float(g.double().pow(2).sum()) for g in grads)))
    return result


@pytest.mark.parametrize("placement", ["pre", "post", "peri", "reordered"])
@pytest.mark.parametrize("part", [None, "mlp.down", "attn"])
def test_gradient_probes_match_autograd(placement, part):
    model, x, y = _model_and_batch(placement)
    want = _autograd_block_norms(model, x, y, part)
    got = gradient_profile(model, x, y, part)
    assert got == pytest.approx(want, rel=1e-4)
    assert all(p.grad is None for p in model.parameters())  # gradient_profile leaves no gradient behind

    model.zero_grad()
    lm_loss(model(x), y).backward()
    assert block_grad_norms(model, part) == pytest.approx(want, rel=1e-4)


@pytest.mark.parametrize("placement", ["pre", "post", "peri"])
def test_stream_gradient_profile_matches_a_manual_backward(placement):
    model, x, y = _model_and_batch(placement)
    h, outputs = model.embed(x), []
    for block in model.blocks:
        h = block(h)
        h.retain_grad()
        outputs.append(h)
    lm_loss(model.lm_head(model.norm_f(h)), y).backward()
    want = [float(o.grad.norm()) for o in outputs]
    model.zero_grad(set_to_none=True)
    assert stream_gradient_profile(model, x, y) == pytest.approx(want, rel=1e-5)
    assert all(p.grad is None for p in model.parameters())  # nothing left in .grad
    assert all(not b._forward_hooks for b in model.blocks)


def test_gradient_profile_leaves_existing_gradients_untouched():
    model, x, y = _model_and_batch()
    want = _autograd_block_norms(model, x, y)
    lm_loss(model(x), y).backward()  # a training step in progress: .grad holds its gradients
    model.blocks[0].mlp.down.weight.grad = None  # and one parameter has none yet
    before = {name: p.grad for name, p in model.named_parameters()}
    values = {name: None if g is None else g.clone() for name, g in before.items()}
    assert gradient_profile(model, x, y) == pytest.approx(want, rel=1e-4)
    for name, p in model.named_parameters():
        assert p.grad is before[name], name  # the very same tensor (or None) ...
        assert values[name] is None or torch.equal(p.grad, values[name]), name  # ... with the same values


def test_grad_probe_counts_this_backward_only_and_removes_its_hooks():
    model, x, y = _model_and_batch()
    want = _autograd_block_norms(model, x, y)
    lm_loss(model(x), y).backward()  # stale gradients already in .grad
    with GradNormProbe(model) as probe:
        lm_loss(model(x), y).backward()
    assert probe.norms == pytest.approx(want, rel=1e-4)
    assert block_grad_norms(model) == pytest.approx([2 * w for w in want], rel=1e-4)  # .grad accumulated twice
    assert all(not p._backward_hooks for p in model.parameters())


def test_hidden_probe_matches_a_manual_forward_and_removes_its_hooks():
    model, x, _ = _model_and_batch("peri")
    with torch.no_grad():
        h = model.embed(x)
        want = [float(h.pow(2).mean().sqrt())]
        for block in model.blocks:
            h = block(h)
            want.append(float(h.pow(2).mean().sqrt()))
        want_final = float(model.norm_f(h).pow(2).mean().sqrt())
    norms, final = hidden_norm_profile(model, x)
    assert norms == pytest.approx(want, rel=1e-5) and final == pytest.approx(want_final, rel=1e-5)
    modules = [model.embed, model.norm_f, *model.blocks]
    assert all(not m._forward_hooks for m in modules)


def test_attention_probe_matches_the_logits_computed_by_hand():
    model, x, _ = _model_and_batch()
    with torch.no_grad():
        h, want_max, want_entropy = model.embed(x), [], []
        for block in model.blocks:
            a = block.attn
            u = block.norm1(h)
            B, T, d = u.shape

            def split(t, B=B, T=T, a=a):
                return t.view(B, T, a.n_head, a.d_head).transpose(1, 2)

            q, k = hand_rope(split(a.q_proj(u))), hand_rope(split(a.k_proj(u)))
            s = q @ k.transpose(-2, -1) / math.sqrt(a.d_head)
            future = torch.ones(T, T, dtype=torch.bool).triu(1)
            p = s.masked_fill(future, float("-inf")).softmax(-1)
            want_max.append(float(s.masked_fill(future, 0).abs().max()))
            want_entropy.append(float(-(p * p.clamp_min(1e-30).log()).sum(-1).mean()))
            h = block(h)
    with AttentionProbe(model) as probe:
        out = model(x)
    assert probe.max_logit == pytest.approx(want_max, rel=1e-4)
    assert probe.entropy == pytest.approx(want_entropy, rel=1e-4)
    assert all(layer.record is False for layer in model.attention_layers())
    fused_out = model(x)  # back on the fused kernel, same numbers
    assert torch.allclose(out, fused_out, atol=1e-5)


def test_attention_probe_without_a_forward_says_so():
    model, _, _ = _model_and_batch()
    with AttentionProbe(model) as probe:
        pass
    with pytest.raises(RuntimeError, match="forward pass"):
        _ = probe.max_logit

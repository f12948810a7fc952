"""The shared core of chapters 04 and 05: TinyGPT's config switches, attention paths, RoPE, the corpus."""

import itertools
import math

import pytest
import torch

from course_utils.attention import CausalSelfAttention, RotaryEmbedding, attention_entropy, softcap
from course_utils.data import Corpus, WordTokenizer, make_text
from course_utils.model import GPTConfig, TinyGPT, lm_loss, parameter_count

CONFIGS = [
    GPTConfig(norm=n, placement=p, qk_norm=q, n_kv_head=kv, n_layer=2, vocab_size=40, block_size=16)
    for n, p, q, kv in itertools.product(
        ("layernorm", "rmsnorm"), ("pre", "post", "peri", "reordered"), (None, "head", "full"), (None, 2)
    )
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.norm}-{c.placement}-{c.qk_norm}-kv{c.n_kv_head}")
def test_parameter_count_formula_matches_the_model(cfg):
    model = TinyGPT(cfg)
    assert sum(p.numel() for p in model.parameters()) == parameter_count(cfg)
    logits = model(torch.randint(0, cfg.vocab_size, (2, 16)))
    assert logits.shape == (2, 16, cfg.vocab_size) and torch.isfinite(logits).all()


@pytest.mark.parametrize("qk_norm", [None, "head", "full"])
@pytest.mark.parametrize("n_kv_head", [None, 1, 2])
def test_fused_and_explicit_attention_agree(qk_norm, n_kv_head):
    torch.manual_seed(0)
    attn = CausalSelfAttention(GPTConfig(d_model=32, n_head=4, n_kv_head=n_kv_head, qk_norm=qk_norm, block_size=12))
    x = torch.randn(3, 12, 32)
    fused = attn(x)
    attn.record = True
    explicit = attn(x)
    assert torch.allclose(fused, explicit, atol=1e-5)
    assert attn.stats["max_logit"].shape == (4,) and attn.stats["entropy"].shape == (4,)


def test_causality_future_tokens_do_not_matter():
    torch.manual_seed(0)
    model = TinyGPT(GPTConfig(vocab_size=20, block_size=10, n_layer=2))
    idx = torch.randint(0, 20, (1, 10))
    changed = idx.clone()
    changed[0, 7:] = (changed[0, 7:] + 1) % 20
    assert torch.allclose(model(idx)[0, :7], model(changed)[0, :7], atol=1e-6)


def test_rope_preserves_norms_and_depends_on_relative_position():
    rope = RotaryEmbedding(8, 32)
    q, k = torch.randn(8), torch.randn(8)
    seq = lambda v: v.expand(32, 8)
    rq, rk = rope(seq(q)), rope(seq(k))
    assert torch.allclose(rq.norm(dim=-1), q.norm().expand(32), atol=1e-5)
    assert torch.allclose(rq[5] @ rk[2], rq[13] @ rk[10], atol=1e-4)  # same offset 3


def test_qk_norm_bounds_the_logits():
    torch.manual_seed(0)
    attn = CausalSelfAttention(GPTConfig(d_model=64, n_head=4, qk_norm="head", block_size=8))
    with torch.no_grad():
        attn.q_proj.weight.mul_(1e4)
        attn.k_proj.weight.mul_(1e4)
    attn.record = True
    attn(torch.randn(2, 8, 64) * 100)
    assert attn.stats["max_logit"].max() <= math.sqrt(16) + 1e-3


def test_softcap_and_entropy():
    s = torch.tensor([-1e4, -1.0, 0.0, 1.0, 1e4])
    capped = softcap(s, 50.0)
    assert capped.abs().max() <= 50.0 and abs(capped[3] - 1.0) < 1e-3
    assert torch.allclose(attention_entropy(torch.full((4,), 0.25)), torch.tensor(math.log(4)))
    assert attention_entropy(torch.tensor([1.0, 0.0, 0.0])) == 0


def test_logit_softcap_bounds_the_output():
    model = TinyGPT(GPTConfig(vocab_size=20, block_size=8, logit_softcap=30.0))
    with torch.no_grad():
        model.lm_head.weight.mul_(1e4)
    assert model(torch.randint(0, 20, (1, 8))).abs().max() <= 30.0


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="placement"):
        GPTConfig(placement="middle")
    with pytest.raises(ValueError, match="qk_norm"):
        GPTConfig(qk_norm="yes")
    with pytest.raises(ValueError, match="attn_softcap"):
        GPTConfig(attn_softcap=0.0)


def test_corpus_is_deterministic_and_in_vocabulary():
    assert make_text(50, seed=3) == make_text(50, seed=3)
    assert make_text(50, seed=3) != make_text(50, seed=4)
    a, b = Corpus(n_sentences=500, seed=1), Corpus(n_sentences=500, seed=1)
    assert torch.equal(a.train, b.train) and torch.equal(a.val, b.val)
    x, y = a.batch("train", 4, 16, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 16) and torch.equal(x[:, 1:], y[:, :-1])
    tok = WordTokenizer()
    text = make_text(20, seed=0)
    assert tok.decode(tok.encode(text)) == text


def test_corpus_fingerprint_is_stable_across_machines():
    # Python's random.Random is specified to give the same stream everywhere; pin the first sentences.
    assert make_text(3, seed=0) == (
        "k0 v6 k4 v4 k8 v7 k7 v5 ; k4 v4 . copy v4 v2 v1 = v4 v2 v1 . copy v8 v11 v9 v2 = v8 v11 v9 v2 ."
    )
    corpus = Corpus(n_sentences=200, seed=0)
    assert corpus.train[:12].tolist() == [43, 61, 47, 59, 51, 62, 50, 60, 1, 47, 59, 0] and len(corpus.train) == 1845


def test_a_few_steps_reduce_the_loss():
    torch.manual_seed(0)
    corpus = Corpus(n_sentences=1000)
    model = TinyGPT(GPTConfig(vocab_size=corpus.vocab_size, block_size=32))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(30):
        x, y = corpus.batch("train", 8, 32, g)
        loss = lm_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > math.log(corpus.vocab_size) - 0.2 and losses[-1] < losses[0] - 0.8


def test_training_loop_records_and_detects_divergence():
    import io

    from course_utils.training import ProgressBar, TrainConfig, evaluate, train

    corpus = Corpus(n_sentences=500)
    torch.manual_seed(0)
    model = TinyGPT(GPTConfig(vocab_size=corpus.vocab_size, block_size=16))
    h = train(
        model,
        corpus,
        TrainConfig(steps=20, batch_size=4, block_size=16, lr=3e-3, warmup=5, record_every=5),
        progress=False,
    )
    assert len(h.losses) == 20 and h.probe_steps == [0, 5, 10, 15, 19] and not h.diverged
    assert h.lrs[0] == pytest.approx(3e-3 / 5) and h.lrs[-1] == pytest.approx(3e-3)
    assert math.isfinite(evaluate(model, corpus, batch_size=4, block_size=16, batches=2))

    torch.manual_seed(0)
    model = TinyGPT(GPTConfig(vocab_size=corpus.vocab_size, block_size=16))
    with torch.no_grad():
        model.lm_head.weight.fill_(float("nan"))
    h = train(model, corpus, TrainConfig(steps=5, batch_size=2, block_size=16), progress=False)
    assert h.diverged and h.diverged_at == 0 and h.final_loss == math.inf

    out = io.StringIO()
    bar = ProgressBar(10, "run", width=10, every=5, stream=out)
    for _ in range(10):
        bar.update()
    bar.close("done")
    assert out.getvalue() == "\rrun [#####-----] 5/10\rrun [##########] 10/10\rrun [##########] 10/10  done\n"

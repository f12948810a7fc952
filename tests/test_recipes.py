"""Chapter 06's core: the recipes of real models and the switches they need. The sweep's new variants, probes
and parallel workers are tested in test_experiments.py."""

import dataclasses
import itertools
import math
import subprocess
import sys
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from course_utils import experiments, recipe_cards, recipes
from course_utils.attention import RotaryEmbedding
from course_utils.model import GPTConfig, TinyGPT, lm_loss, norm_eps_of, parameter_count
from course_utils.norms import DynamicTanh, RMSNorm, gain_of
from course_utils.training import TrainConfig, train, z_loss_term


# ----------------------------------------------------------------------------------------------------
# the recipes say what the reference code does (the sources are named in each recipe's `source`)
# ----------------------------------------------------------------------------------------------------
def cfg_of(name):
    return GPTConfig(**recipes.RECIPES[name].model)


def test_recipes_match_the_reference_code():
    # Pre-norm families: GPT-2 with LayerNorm, Llama 3 and Qwen3 with RMSNorm; only Qwen3 normalizes q and k
    assert (cfg_of("gpt2").norm, cfg_of("gpt2").placement, cfg_of("gpt2").qk_norm) == ("layernorm", "pre", None)
    assert (cfg_of("llama3").norm, cfg_of("llama3").placement, cfg_of("llama3").qk_norm) == ("rmsnorm", "pre", None)
    assert (cfg_of("qwen3").placement, cfg_of("qwen3").qk_norm, cfg_of("qwen3").embed_scale) == ("pre", "head", None)
    # Gemma 2: four norms per block, (1 + w), softcaps 50 / 30, embeddings times sqrt(d), no QK-Norm
    g2 = cfg_of("gemma2")
    assert (g2.placement, g2.gain, g2.attn_softcap, g2.logit_softcap, g2.embed_scale, g2.qk_norm) == (
        "peri",
        "1+w",
        50.0,
        30.0,
        "sqrt_d",
        None,
    )
    # Gemma 3: the same norms, QK-Norm per head, and no softcap at all (the digest says it also softcaps)
    g3 = cfg_of("gemma3")
    assert (g3.placement, g3.gain, g3.qk_norm, g3.attn_softcap, g3.logit_softcap, g3.embed_scale) == (
        "peri",
        "1+w",
        "head",
        None,
        None,
        "sqrt_d",
    )
    # OLMo 2: x + Norm(F(x)) (not Post-LN), full-width QK-Norm, z-loss 1e-5
    o2 = cfg_of("olmo2")
    assert (o2.placement, o2.qk_norm, recipes.RECIPES["olmo2"].train) == ("reordered", "full", {"z_loss": 1e-5})
    # nobody here L2-normalizes embeddings
    assert all(cfg_of(n).embed_scale != "l2" for n in recipes.RECIPES)


@pytest.mark.parametrize("name", list(recipes.RECIPES))
def test_each_recipe_cites_its_reference_and_builds(name):
    r = recipes.RECIPES[name]
    assert any(s in r.source for s in ("model.py", "modeling_", "_modules.py", "_gemma.py")), r.source
    cfg = recipes.recipe_config(name, vocab_size=40, block_size=16, n_layer=2)
    model = TinyGPT(cfg)
    assert sum(p.numel() for p in model.parameters()) == parameter_count(cfg)
    assert torch.isfinite(model(torch.randint(0, 40, (2, 16)))).all()


def test_recipes_are_plain_data_checked_when_written():
    assert recipes.RECIPES == {
        "gpt2": recipes.GPT2,
        "llama3": recipes.LLAMA3,
        "qwen3": recipes.QWEN3,
        "gemma2": recipes.GEMMA2,
        "gemma3": recipes.GEMMA3,
        "olmo2": recipes.OLMO2,
    }
    assert all(name == r.name for name, r in recipes.RECIPES.items())
    # the switches a recipe may set are fields of GPTConfig and TrainConfig, and never the model's size
    gpt_fields = {f.name for f in dataclasses.fields(GPTConfig)}
    assert (
        recipes.ModelSwitches.__optional_keys__ < gpt_fields
        and "d_model" not in recipes.ModelSwitches.__optional_keys__
    )
    assert recipes.TrainSwitches.__optional_keys__ < {f.name for f in dataclasses.fields(TrainConfig)}
    # a wrong switch fails where the recipe is written, not when a notebook trains it
    for model, train_switches, message in (
        ({"d_model": 32}, {}, "are not ModelSwitches"),
        ({"placement": "sideways"}, {}, "GPTConfig.placement must be one of"),
        ({}, {"lr": 0.1}, "are not TrainSwitches"),
        ({}, {"z_loss": math.nan}, "must be finite numbers"),
    ):
        with pytest.raises(ValueError, match=message):
            recipes.Recipe("wrong", "Wrong", "nowhere", model, train_switches)


def test_the_recipes_load_no_drawing_code():
    """The sweeps import the recipes: the cards' torch.fx tracing and matplotlib stay in recipe_cards."""
    drawing = "{'course_utils.placement_diagram', 'matplotlib'}"
    code = f"import sys, course_utils.recipes; print(sorted({drawing} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_recipe_config_refuses_to_override_a_recipe_choice():
    with pytest.raises(ValueError, match="belong to the recipe"):
        recipes.recipe_config("gemma3", placement="pre")
    with pytest.raises(ValueError, match="recipe must be one of"):
        recipes.recipe_config("gemma4")


def test_table_and_cards_are_read_from_the_configs(monkeypatch):
    rows = {r["recipe"]: r for r in recipe_cards.recipe_rows()}
    assert rows["Gemma 3"]["softcap attn / out"] == "none / none" and rows["Gemma 2"]["softcap attn / out"] == "50 / 30"
    assert rows["OLMo 2"]["z-loss"] == "1e-05" and rows["Qwen3"]["QK-Norm"].startswith("per head")
    text = recipe_cards.describe_recipes()
    assert "Gemma 2: embedding × √d → RMSNorm (1+w) → attention, softcap 50 → RMSNorm (1+w) → +" in text
    assert "OLMo 2: embedding → attention, QK-Norm full width → RMSNorm → +" in text
    # change a recipe and the card changes with it: nothing is drawn by hand
    changed = replace(recipes.RECIPES["llama3"], model={"norm": "rmsnorm", "placement": "post"})
    monkeypatch.setitem(recipes.RECIPES, "llama3", changed)
    assert (
        "Llama 3: embedding → attention → + → RMSNorm → MLP → + → RMSNorm → LM head" in recipe_cards.describe_recipes()
    )


def test_recipe_cards_render_readably():
    import matplotlib

    matplotlib.use("Agg")
    from course_utils.figures import figure_problems

    fig = recipe_cards.draw_recipe_cards()
    assert figure_problems(fig) == []
    assert len(fig.axes) == len(recipes.RECIPES)


# ----------------------------------------------------------------------------------------------------
# the switches
# Every recipe's norm eps, and where it comes from (each value is quoted in the recipe's source too):
SOURCE_EPS = {
    "gpt2": (1e-5, "openai/gpt-2 src/model.py: def norm(x, scope, *, axis=-1, epsilon=1e-5)"),
    "llama3": (1e-5, "meta-llama/llama3 llama/model.py: ModelArgs.norm_eps: float = 1e-5"),
    "qwen3": (1e-6, "Qwen/Qwen3-8B config.json: rms_norm_eps 1e-06"),
    "gemma2": (1e-6, "google-deepmind/gemma _layers.py RMSNorm: jax.lax.rsqrt(var + 1e-06)"),
    "gemma3": (1e-6, "google-deepmind/gemma _layers.py RMSNorm: jax.lax.rsqrt(var + 1e-06)"),
    "olmo2": (1e-6, "allenai/OLMo-2-1124-7B config.json: rms_norm_eps 1e-06"),
}


@pytest.mark.parametrize("name", list(recipes.RECIPES))
def test_every_norm_of_a_recipe_has_its_familys_eps(name):
    """The eps of every norm in the built model, the q/k norms included, is the one its family's source sets."""
    eps, source = SOURCE_EPS[name]
    assert norm_eps_of(cfg_of(name)) == eps, source
    assert f"{eps:g}".replace("-0", "-") in recipes.RECIPES[name].source.replace("-0", "-"), recipes.RECIPES[
        name
    ].source
    model = TinyGPT(recipes.recipe_config(name, vocab_size=20, n_layer=2))
    found = [m.eps for m in model.modules() if isinstance(m, (torch.nn.LayerNorm, torch.nn.RMSNorm, RMSNorm))]
    assert found and all(e == eps for e in found), (name, sorted(set(found)), source)


def test_a_config_without_norm_eps_keeps_each_norms_usual_eps():
    """The chapters' plain models: LayerNorm 1e-5, RMSNorm (and every q/k norm) 1e-6."""
    for norm, expected in (("layernorm", 1e-5), ("rmsnorm", 1e-6)):
        model = TinyGPT(GPTConfig(vocab_size=20, norm=norm, qk_norm="head"))
        blocks = [
            m.eps for m in model.modules() if isinstance(m, (torch.nn.LayerNorm,)) or m.__class__ is torch.nn.RMSNorm
        ]
        assert blocks[0] == expected
        assert model.blocks[0].attn.q_norm.eps == 1e-6
    with pytest.raises(ValueError, match="norm_eps"):
        GPTConfig(norm_eps=0.0)


def test_the_plus_one_gain_is_formed_in_float32_as_the_reference_does():
    """With bfloat16 parameters, transformers' GemmaRMSNorm computes (x_normed.float() * (1.0 + w.float())), cast
    back once. Forming 1 + w in bfloat16 first lands about a quarter of the outputs one bfloat16 step away."""
    torch.manual_seed(0)
    norm = RMSNorm(512, eps=1e-6, plus_one=True).to(torch.bfloat16)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(512) * 0.3)
    x = torch.randn(64, 512).to(torch.bfloat16)
    h = x.float()
    reference = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + norm.weight.float())).type_as(x)
    assert torch.equal(norm(x), reference)
    from course_utils.norms import rms_norm

    in_bf16 = rms_norm(x, norm.weight + 1, 1e-6)  # the slip this guards against: the test can fail
    assert float((in_bf16 != reference).float().mean()) > 0.1
    assert gain_of(norm).dtype == torch.float32 and gain_of(RMSNorm(4, plus_one=True).double()).dtype == torch.float64


# ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 16), (4, 1, 2, 6)])
def test_plus_one_gain_is_rmsnorm_with_gain_one_plus_w(shape):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    norm = RMSNorm(shape[-1], plus_one=True)
    assert torch.equal(norm.weight, torch.zeros(shape[-1]))  # starts at 0: the gain is 1
    with torch.no_grad():
        norm.weight.normal_()
    expected = F.rms_norm(x, (shape[-1],), 1 + norm.weight.detach(), eps=1e-6)
    torch.testing.assert_close(norm(x), expected)
    torch.testing.assert_close(gain_of(norm), 1 + norm.weight)
    assert "gain=1+w" in repr(norm)


def test_plus_one_and_plain_gains_train_alike_without_weight_decay_and_differ_with_it():
    corpus = experiments._corpus(2000)

    def run(gain, wd):
        torch.manual_seed(0)
        model = TinyGPT(GPTConfig(vocab_size=corpus.vocab_size, norm="rmsnorm", gain=gain, n_layer=1, d_model=32))
        cfg = TrainConfig(steps=25, batch_size=4, block_size=32, lr=3e-2, warmup=5, weight_decay=wd, record_every=0)
        return train(model, corpus, cfg, progress=False).losses

    same = max(abs(a - b) for a, b in zip(run("w", 0.0), run("1+w", 0.0)))
    apart = max(abs(a - b) for a, b in zip(run("w", 0.5), run("1+w", 0.5)))
    assert same < 1e-4 < 1e-2 < apart  # rounding only, versus a real difference once w is decayed


def test_gain_plus_one_needs_rmsnorm():
    with pytest.raises(ValueError, match="1\\+w"):
        GPTConfig(norm="layernorm", gain="1+w")
    with pytest.raises(ValueError, match="embed_scale"):
        GPTConfig(embed_scale="l1")


def test_gemma_qk_norms_use_the_plus_one_gain_too():
    attn = TinyGPT(recipes.recipe_config("gemma3", vocab_size=20, n_layer=1)).blocks[0].attn
    assert attn.q_norm.plus_one and attn.k_norm.plus_one


def test_dynamic_tanh_formula_and_defaults():
    torch.manual_seed(0)
    dyt = DynamicTanh(6)
    assert dyt.alpha.item() == 0.5 and torch.equal(dyt.weight, torch.ones(6)) and torch.equal(dyt.bias, torch.zeros(6))
    x = torch.randn(3, 6) * 10
    with torch.no_grad():
        dyt.weight.normal_(), dyt.bias.normal_(), dyt.alpha.fill_(0.3)
    torch.testing.assert_close(dyt(x), torch.tanh(0.3 * x) * dyt.weight + dyt.bias)
    # no statistics: scaling one element leaves the others alone (a norm would change them all)
    y = x.clone()
    y[0, 0] *= 100
    torch.testing.assert_close(dyt(y)[0, 1:], dyt(x)[0, 1:])
    assert TinyGPT(GPTConfig(norm="dyt", n_layer=1)).blocks[0].norm1.__class__ is DynamicTanh


@pytest.mark.parametrize("mode", ["sqrt_d", "l2"])
def test_embedding_scale(mode):
    torch.manual_seed(0)
    cfg = GPTConfig(vocab_size=30, n_layer=1, d_model=16, embed_scale=mode)
    model = TinyGPT(cfg)
    seen = []
    model.blocks[0].register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    idx = torch.randint(0, 30, (2, 8))
    model(idx)
    e = model.embed(idx)
    expected = e * 4 if mode == "sqrt_d" else e / e.norm(dim=-1, keepdim=True) * 4
    torch.testing.assert_close(seen[0], expected)
    if mode == "l2":
        torch.testing.assert_close(
            seen[0].norm(dim=-1), torch.full((2, 8), 4.0)
        )  # every row on the sphere of radius sqrt(d)


def test_z_loss_term_is_mean_squared_log_normalizer():
    logits = torch.randn(2, 5, 11) * 3
    torch.testing.assert_close(z_loss_term(logits), (torch.log(torch.exp(logits).sum(-1)) ** 2).mean())
    # shifting every logit of a position leaves cross-entropy unchanged, but not the z-loss
    y = torch.randint(0, 11, (2, 5))
    torch.testing.assert_close(lm_loss(logits + 7, y), lm_loss(logits, y))
    assert z_loss_term(logits + 7) > z_loss_term(logits) + 10


def test_z_loss_changes_training_but_records_cross_entropy():
    corpus = experiments._corpus(2000)

    def run(z):
        torch.manual_seed(0)
        model = TinyGPT(GPTConfig(vocab_size=corpus.vocab_size, n_layer=1, d_model=32))
        cfg = TrainConfig(steps=10, batch_size=4, block_size=32, lr=1e-2, warmup=2, z_loss=z, record_every=0)
        return train(model, corpus, cfg, progress=False).losses

    plain, with_z = run(0.0), run(1e-2)
    assert plain[0] == with_z[0]  # step 0 records the same cross-entropy (the z term is not in the record)
    assert plain[-1] != with_z[-1]  # and the z term did change the updates


def test_qk_norm_switched_on_mid_run_matches_the_baseline_before_the_switch():
    corpus = experiments._corpus(2000)

    def run(**kw):
        torch.manual_seed(0)
        model = TinyGPT(GPTConfig(vocab_size=corpus.vocab_size, n_layer=1, d_model=32, **kw.pop("model", {})))
        cfg = TrainConfig(steps=20, batch_size=4, block_size=32, lr=1e-2, warmup=2, record_every=0, **kw)
        return model, train(model, corpus, cfg, progress=False).losses

    _, never = run()
    model, late = run(model={"qk_norm": "head"}, qk_norm_from=0.5)
    assert late[:10] == never[:10] and late[10] != never[10]  # identical until step 10, where the norms switch on
    assert all(a.qk_norm_on for a in model.attention_layers())
    with pytest.raises(ValueError, match="QK-Norm layers"):
        run(qk_norm_from=0.5)


# ----------------------------------------------------------------------------------------------------
# RoPE and a gainless RMSNorm commute; the parameter count with the new switches
# ----------------------------------------------------------------------------------------------------
def test_rope_and_gainless_rmsnorm_commute_but_a_gain_breaks_it():
    """The digest's reason for normalizing before RoPE ("it destroys position information") is wrong: RoPE
    keeps each head vector's norm, so without a gain the order does not matter. A per-channel gain does."""
    torch.manual_seed(0)
    rope = RotaryEmbedding(16, 12)
    q = torch.randn(2, 3, 12, 16)
    rms = lambda t, g=None: F.rms_norm(t, (16,), g, eps=1e-6)
    torch.testing.assert_close(rms(rope(q)), rope(rms(q)))
    g = torch.rand(16) + 0.5
    assert (rms(rope(q), g) - rope(rms(q, g))).abs().max() > 0.1


@pytest.mark.parametrize(
    "kw",
    [
        dict(norm=n, placement=p, gain=g, embed_scale=e)
        for n, p, g, e in itertools.product(("rmsnorm", "dyt"), ("pre", "peri"), ("w", "1+w"), (None, "l2"))
        if not (n == "dyt" and g == "1+w")
    ],
    ids=str,
)
def test_parameter_count_with_the_new_switches(kw):
    cfg = GPTConfig(vocab_size=30, n_layer=2, d_model=16, block_size=8, qk_norm="head", **kw)
    assert sum(p.numel() for p in TinyGPT(cfg).parameters()) == parameter_count(cfg)

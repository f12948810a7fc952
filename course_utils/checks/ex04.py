"""Checks for exercise 04 (residual norms): Pre-LN and Post-LN block forwards, per-layer gradient norms, and two
questions: one read off the learner's own printed gradient profile (ex04.profile), one on warmup (ex04.warmup).

The learner's functions take plain data (tensors, a dict of a block's or a model's weights, strings),
so the instructors' grader can call them in the learner's kernel. The sub-layers themselves are given:

    norm(x, params, "norm1")      the block's first (or second) norm, with its own weights
    attention(x, params)          the block's causal self-attention
    mlp(x, params)                the block's MLP

so the exercise is only about *where the norm sits*. The reference is `course_utils.model.Block`
loaded with the same weights; the cases shake the norms' gains and biases away from (1, 0) so that a
swapped norm1/norm2 or a missing norm shows, and use both LayerNorm and RMSNorm.

    ✅ pre_ln_block: all 4 cases match the reference (max abs error below 1e-06, tolerance 1e-04)
    ❌ post_ln_block: 4 of 4 cases differ from the reference
       ✗ LayerNorm block, 2×8 tokens of width 32: max abs error 2.1 > tolerance 1e-04
       Hint: your output matches the Pre-LN block ...
"""

from __future__ import annotations

import functools
import math

import torch

from ..i18n import N_
from ..model import Block, GPTConfig, Norm, Placement, TinyGPT, lm_loss
from ..probes import gradient_profile
from .core import Case, CheckReport, FunctionCheck, Message
from .forbidden import Forbidden
from .questions import MultipleChoice
from .registry import Exercise, Graded

__all__ = [
    "EXERCISE",
    "PROFILE_QUESTION",
    "WARMUP_QUESTION",
    "PRE_LN_CHECK",
    "POST_LN_CHECK",
    "GRAD_NORMS_CHECK",
    "norm",
    "attention",
    "mlp",
    "block_from_params",
    "model_from_state",
    "check_pre_ln_block",
    "check_post_ln_block",
    "check_layer_grad_norms",
    "example_block",
    "example_model",
    "example_batch",
]

N_HEAD = 4


# ----------------------------------------------------------------------------------------------------
# the given sub-layers: a Block rebuilt from a dict of its weights
# ----------------------------------------------------------------------------------------------------
def _config_of(params: dict, placement: Placement = "pre", n_layer: int = 1, vocab_size: int = 64) -> GPTConfig:
    prefix = next(k for k in params if k.endswith("norm1.weight")).removesuffix("norm1.weight")
    d = params[prefix + "norm1.weight"].shape[0]
    layernorm = (prefix + "norm1.bias") in params
    return GPTConfig(
        vocab_size=vocab_size,
        block_size=256,
        n_layer=n_layer,
        n_head=N_HEAD,
        d_model=d,
        norm="layernorm" if layernorm else "rmsnorm",
        placement=placement,
    )


def _untouched_rng():
    """Building a module draws its initial weights from torch's global generator. The checks build modules only
    inside this context, which restores that generator's state afterwards: running a check (or the given
    sub-layers) never changes the learner's random numbers."""
    return torch.random.fork_rng(devices=[])


@functools.lru_cache(maxsize=16)
def _block_template(d_model: int, norm_kind: Norm, placement: Placement, dtype: torch.dtype) -> Block:
    """One Block per shape: its weights are never used, each call supplies its own (torch.func.functional_call)."""
    cfg = GPTConfig(block_size=256, n_head=N_HEAD, d_model=d_model, norm=norm_kind, placement=placement)
    with _untouched_rng():
        return Block(cfg).to(dtype).requires_grad_(False)


def _run_part(params: dict, part: str | None, x: torch.Tensor, placement: Placement = "pre") -> torch.Tensor:
    """Block part `part` ('norm1', 'attn', 'mlp', ...; None: the whole block) applied to x with the weights in
    params. As strict as load_state_dict: the part's weights must all be there, and nothing else."""
    cfg = _config_of(params, placement)
    module = _block_template(cfg.d_model, cfg.norm, placement, next(iter(params.values())).dtype)
    if part is not None:
        module = getattr(module, part)
        params = {k.removeprefix(part + "."): v for k, v in params.items() if k.startswith(part + ".")}
    expected = set(module.state_dict())
    if set(params) != expected:
        raise KeyError(f"the weights do not fit the block: missing {sorted(expected - set(params))}")
    return torch.func.functional_call(module, params, (x,))


def block_from_params(params: dict, placement: Placement = "pre") -> Block:
    """A reference Block holding `params` (a Block's state_dict), in float64 when the weights are."""
    with _untouched_rng():
        block = Block(_config_of(params, placement))
    dtype = next(iter(params.values())).dtype
    block = block.to(dtype)
    block.load_state_dict(params)
    return block


def norm(x: torch.Tensor, params: dict, which: str) -> torch.Tensor:
    """The block's norm `which` ('norm1' or 'norm2') applied to x, with that norm's own weights."""
    if which not in ("norm1", "norm2"):
        raise ValueError(f"which must be 'norm1' or 'norm2', got {which!r}")
    return _run_part(params, which, x)


def attention(x: torch.Tensor, params: dict) -> torch.Tensor:
    """The block's causal self-attention (no norm, no residual): Attention(x)."""
    return _run_part(params, "attn", x)


def mlp(x: torch.Tensor, params: dict) -> torch.Tensor:
    """The block's MLP (no norm, no residual): MLP(x)."""
    return _run_part(params, "mlp", x)


def model_from_state(state: dict, placement: Placement) -> TinyGPT:
    """The TinyGPT holding `state` (a TinyGPT state_dict), built with the given placement."""
    n_layer = 1 + max(int(k.split(".")[1]) for k in state if k.startswith("blocks."))
    vocab = state["embed.weight"].shape[0]
    cfg = _config_of({k: v for k, v in state.items() if k.startswith("blocks.0.")}, placement, n_layer, vocab)
    with _untouched_rng():
        model = TinyGPT(cfg)
    model.load_state_dict(state)
    return model


@functools.lru_cache(maxsize=16)
def _model_shapes(placement: Placement, n_layer: int) -> dict:
    cfg = GPTConfig(vocab_size=64, block_size=64, n_layer=n_layer, n_head=N_HEAD, d_model=32, placement=placement)
    with _untouched_rng():
        return {k: v.shape for k, v in TinyGPT(cfg).state_dict().items()}


def _draw(shapes: dict, g: torch.Generator, weight) -> dict:
    """Fresh weights for a state_dict's shapes from the generator g (never torch's global one): the norms'
    gains 1 and biases 0, every other weight matrix weight(shape)."""
    params = {}
    for k, shape in shapes.items():
        if "norm" in k:
            params[k] = torch.ones(shape) if k.endswith("weight") else torch.zeros(shape)
        else:
            params[k] = weight(shape)
    return params


def example_block(norm_kind: Norm = "layernorm", d_model: int = 32, seed: int = 0) -> dict:
    """The weights of a Block with shaken norm gains and biases (as the checks use), as a dict of tensors.

    The weight matrices are drawn as nn.Linear draws them (uniform within ±1/sqrt(fan_in)), from a generator of
    their own seeded with `seed`: torch's global random state is left as it was."""
    g = torch.Generator().manual_seed(seed)
    shapes = {k: v.shape for k, v in _block_template(d_model, norm_kind, "pre", torch.float32).state_dict().items()}
    params = _draw(shapes, g, lambda shape: (torch.rand(shape, generator=g) * 2 - 1) / math.sqrt(shape[1]))
    for k in params:
        if "norm" in k:
            params[k] = params[k] + 0.4 * torch.randn(params[k].shape, generator=g)
    return params


def example_model(placement: Placement, n_layer: int = 4, seed: int = 0) -> dict:
    """The weights of a small TinyGPT (vocabulary 64, width 32), as a dict of tensors: every weight matrix and the
    embedding drawn from normal(0, 0.1) (TinyGPT's kind of init, at a scale between GPT-2's 0.02 and 1/sqrt(32)),
    the norms' gains 1 and biases 0, from a generator of their own seeded with `seed`.

    The exercise prints the gradient profiles of example_model("post") and example_model("pre") and asks about
    them (PROFILE_QUESTION); tests/test_ch04_model.py checks that its key fits the reference probe's numbers."""
    g = torch.Generator().manual_seed(seed)
    return _draw(_model_shapes(placement, n_layer), g, lambda shape: 0.1 * torch.randn(shape, generator=g))


def example_batch(batch: int = 4, tokens: int = 16, seed: int = 0) -> tuple:
    """(idx, targets): random token ids in [0, 64) and random next tokens, from a generator of their own."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 64, (batch, tokens), generator=g), torch.randint(0, 64, (batch, tokens), generator=g)


# ----------------------------------------------------------------------------------------------------
# pre_ln_block(x, params) and post_ln_block(x, params)
# ----------------------------------------------------------------------------------------------------
def _block_ref(placement):
    """The reference forward of a `placement` block, in float64: the Block with these weights."""

    def ref(x, params):
        with torch.no_grad():
            return _run_part(_double(params), None, x.double(), placement)

    return ref


def _block_cases(placement):
    def make(g: torch.Generator) -> list:
        specs: list[tuple[str, Norm, tuple[int, int], float]] = [
            (N_("LayerNorm block, 2×8 tokens of width 32"), "layernorm", (2, 8), 1.0),
            (N_("RMSNorm block, 3×5 tokens of width 32"), "rmsnorm", (3, 5), 1.0),
            (N_("LayerNorm block, a large residual stream (scale 10)"), "layernorm", (2, 6), 10.0),
            (N_("one sequence of 12 tokens"), "layernorm", (1, 12), 1.0),
        ]
        cases = []
        for i, (name, kind, (B, T), scale) in enumerate(specs):
            params = example_block(kind, seed=int(torch.randint(0, 10_000, (1,), generator=g)) + i)
            x = torch.randn(B, T, 32, generator=g) * scale
            cases.append(Case(name, (x, params), _block_ref(placement)(x, params)))
        return cases

    return make


def _double(params: dict) -> dict:
    return {k: v.double() for k, v in params.items()}


def _wrong(fn):
    """A wrong block forward written with the given sub-layers, evaluated in float64."""

    def run(x, params):
        with torch.no_grad():
            p = _double(params)
            return fn(x.double(), p)

    return run


def _pre(x, p):
    x = x + attention(norm(x, p, "norm1"), p)
    return x + mlp(norm(x, p, "norm2"), p)


def _post(x, p):
    x = norm(x + attention(x, p), p, "norm1")
    return norm(x + mlp(x, p), p, "norm2")


def _reordered(x, p):
    """OLMo 2's reordered norm, x + norm(F(x)): the sub-layer reads the raw stream, its output is normalized."""
    x = x + norm(attention(x, p), p, "norm1")
    return x + norm(mlp(x, p), p, "norm2")


def _pre_no_residual(x, p):
    x = attention(norm(x, p, "norm1"), p)
    return mlp(norm(x, p, "norm2"), p)


def _pre_normalized_stream(x, p):
    x = norm(x, p, "norm1")
    x = x + attention(x, p)
    x = norm(x, p, "norm2")
    return x + mlp(x, p)


def _pre_swapped_norms(x, p):
    x = x + attention(norm(x, p, "norm2"), p)
    return x + mlp(norm(x, p, "norm1"), p)


def _post_norm_before(x, p):
    x = norm(x, p, "norm1") + attention(norm(x, p, "norm1"), p)
    return norm(x, p, "norm2") + mlp(norm(x, p, "norm2"), p)


def _post_swapped_norms(x, p):
    x = norm(x + attention(x, p), p, "norm2")
    return norm(x + mlp(x, p), p, "norm1")


def _post_no_residual(x, p):
    x = norm(attention(x, p), p, "norm1")
    return norm(mlp(x, p), p, "norm2")


BLOCK_FORBIDDEN = Forbidden(
    calls=("course_utils.model.Block",),
    hint=N_(
        "build the block from the given pieces, norm(x, params, 'norm1'), attention(x, params) and mlp(x, params); "
        "the course's whole `Block` is what your output is compared with."
    ),
    why="the course's Block, loaded with these weights, is the reference: it computes the answer.",
)

_PRE_HINT = N_(
    "Pre-LN normalizes only the *input of each sub-layer* and adds the result to the untouched stream: "
    "x = x + attention(norm(x, params, 'norm1'), params), then x = x + mlp(norm(x, params, 'norm2'), params)."
)
_POST_HINT = N_(
    "Post-LN adds first and normalizes the *sum*: x = norm(x + attention(x, params), params, 'norm1'), "
    "then x = norm(x + mlp(x, params), params, 'norm2')."
)

PRE_LN_CHECK = FunctionCheck(
    name="pre_ln_block",
    make_cases=_block_cases("pre"),
    tolerance=1e-4,
    hint=_PRE_HINT,
    mistakes={
        Message(N_("your output matches the Post-LN block (norm of the sum). {fix}"), fix=_PRE_HINT): _wrong(_post),
        Message(
            N_(
                "your output matches OLMo 2's reordered-norm block, x + norm(F(x)): the norm sits after the "
                "sub-layer. {fix}"
            ),
            fix=_PRE_HINT,
        ): _wrong(_reordered),
        N_("your output has no residual connection: keep x and add the sub-layer's output to it, x = x + ...."): _wrong(
            _pre_no_residual
        ),
        N_(
            "your output matches normalizing the residual stream itself (x = norm(x), then x + F(x)). Pre-LN "
            "normalizes a *copy* that goes into the sub-layer; the stream x that is added to stays as it was."
        ): _wrong(_pre_normalized_stream),
        N_(
            "your output matches using norm2 before attention and norm1 before the MLP: norm1 belongs to "
            "attention, norm2 to the MLP."
        ): _wrong(_pre_swapped_norms),
    },
    reference=_block_ref("pre"),
    forbidden=BLOCK_FORBIDDEN,
)

POST_LN_CHECK = FunctionCheck(
    name="post_ln_block",
    make_cases=_block_cases("post"),
    tolerance=1e-4,
    hint=_POST_HINT,
    mistakes={
        Message(
            N_("your output matches the Pre-LN block (norm before the sub-layer, sum left unnormalized). {fix}"),
            fix=_POST_HINT,
        ): _wrong(_pre),
        Message(
            N_(
                "your output matches OLMo 2's reordered-norm block, x + norm(F(x)): the sum itself must be "
                "normalized. {fix}"
            ),
            fix=_POST_HINT,
        ): _wrong(_reordered),
        N_(
            "your output matches normalizing before adding (norm(x) + F(norm(x))). Post-LN adds first, then "
            "normalizes the sum: norm(x + F(x))."
        ): _wrong(_post_norm_before),
        N_(
            "your output matches using norm2 after attention and norm1 after the MLP: norm1 belongs to "
            "attention, norm2 to the MLP."
        ): _wrong(_post_swapped_norms),
        N_("your output has no residual connection: normalize x + F(x), not F(x) alone."): _wrong(_post_no_residual),
    },
    reference=_block_ref("post"),
    forbidden=BLOCK_FORBIDDEN,
)


def check_pre_ln_block(fn, seed: int = 0) -> CheckReport:
    """Check a learner's `pre_ln_block(x, params)` against the reference Pre-LN Block with the same weights."""
    return PRE_LN_CHECK(fn, seed)


def check_post_ln_block(fn, seed: int = 0) -> CheckReport:
    """Check a learner's `post_ln_block(x, params)` against the reference Post-LN Block with the same weights."""
    return POST_LN_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# layer_grad_norms(state, placement, idx, targets): one number per block, ‖∇ of the block's parameters‖
# ----------------------------------------------------------------------------------------------------
def _grad_norms_ref(state, placement, idx, targets, part=None):
    model = model_from_state(state, placement)
    return torch.tensor(gradient_profile(model, idx, targets, part), dtype=torch.float64)


def _grad_cases(g: torch.Generator) -> list:
    specs: list[tuple[str, Placement, int, tuple[int, int]]] = [
        (N_("Pre-LN, 4 blocks"), "pre", 4, (4, 16)),
        (N_("Post-LN, 4 blocks"), "post", 4, (4, 16)),
        (N_("Peri-LN (a norm before and after each sub-layer), 3 blocks"), "peri", 3, (2, 24)),
        (N_("Pre-LN, 6 blocks, one sequence"), "pre", 6, (1, 32)),
    ]
    cases = []
    for i, (name, placement, n_layer, (B, T)) in enumerate(specs):
        state = example_model(placement, n_layer, seed=100 + i)
        idx = torch.randint(0, 64, (B, T), generator=g)
        targets = torch.randint(0, 64, (B, T), generator=g)
        cases.append(Case(name, (state, placement, idx, targets), _grad_norms_ref(state, placement, idx, targets)))
    return cases


def _grad_squared(state, placement, idx, targets):
    return _grad_norms_ref(state, placement, idx, targets) ** 2


def _grad_mlp_only(state, placement, idx, targets):
    return _grad_norms_ref(state, placement, idx, targets, part="mlp")


def _grad_attn_only(state, placement, idx, targets):
    return _grad_norms_ref(state, placement, idx, targets, part="attn")


def _grad_per_parameter_sum(state, placement, idx, targets):
    """Adding the norms of the parameters instead of their squares (the norm of a concatenation)."""
    model = model_from_state(state, placement)
    lm_loss(model(idx), targets).backward()
    return torch.tensor(
        [sum(float(p.grad.norm()) for p in b.parameters() if p.grad is not None) for b in model.blocks],
        dtype=torch.float64,
    )


def _grad_of_block_outputs(state, placement, idx, targets):
    """The gradient with respect to each block's *output* (the hidden state), not its parameters."""
    model = model_from_state(state, placement)
    outputs = []

    def keep(_module, _inputs, output):
        output.retain_grad()
        outputs.append(output)

    handles = [b.register_forward_hook(keep) for b in model.blocks]
    lm_loss(model(idx), targets).backward()
    for h in handles:
        h.remove()
    return torch.tensor([float(o.grad.norm()) for o in outputs], dtype=torch.float64)


GRAD_NORMS_CHECK = FunctionCheck(
    name="layer_grad_norms",
    make_cases=_grad_cases,
    tolerance=1e-4,
    hint=N_(
        "register a hook on every parameter of block i (`p.register_hook(fn)`) that adds `(grad ** 2).sum()` to "
        "`total[i]`; run `loss.backward()` once; return a tensor of the square roots, one per block; remove the "
        "hooks afterwards (`handle.remove()`)."
    ),
    mistakes={
        N_(
            "your numbers are the *squares* of the gradient norms: take the square root of each block's sum of "
            "squares at the end."
        ): _grad_squared,
        N_(
            "your numbers match the MLP's parameters only: include every parameter of the block "
            "(block.parameters(): both norms, attention and the MLP)."
        ): _grad_mlp_only,
        N_(
            "your numbers match the attention's parameters only: include every parameter of the block "
            "(block.parameters(): both norms, attention and the MLP)."
        ): _grad_attn_only,
        (
            N_(
                "your numbers add up the norms of the separate parameters. The block's gradient norm is the norm of "
                "all its gradients together: sum the *squares* over every parameter, then take one square root."
            )
        ): _grad_per_parameter_sum,
        N_(
            "your numbers are the gradients with respect to each block's *output* (the hidden state). This task asks "
            "for the gradient of the block's *parameters*, the quantity an optimizer step uses."
        ): _grad_of_block_outputs,
    },
    reference=_grad_norms_ref,
    forbidden=Forbidden(
        calls=(
            "course_utils.probes.gradient_profile",
            "course_utils.probes.GradNormProbe",
            "course_utils.probes.block_grad_norms",
        ),
        hint=N_(
            "register a hook on every parameter of each block (p.register_hook) and add up the squares, as the "
            "task describes; the course's probes are what your numbers are compared with."
        ),
        why="the task: 'Write that probe yourself'; course_utils.probes measures these norms (gradient_profile is "
        "the reference).",
    ),
)


def check_layer_grad_norms(fn, seed: int = 0) -> CheckReport:
    """Check a learner's `layer_grad_norms(state, placement, idx, targets)` against the reference probe."""
    return GRAD_NORMS_CHECK(fn, seed)


# ----------------------------------------------------------------------------------------------------
# the questions, the registry
# ----------------------------------------------------------------------------------------------------
PROFILE_QUESTION = MultipleChoice(
    id="ex04.profile",
    prompt=N_(
        "Read the two gradient profiles that your layer_grad_norms printed (4 blocks of width 32, every weight "
        "drawn with std 0.1, one batch of random tokens). Which statement describes them?"
    ),
    choices={
        "a": N_("Post-LN's gradient grows toward the output, and Pre-LN's is about the same at every block"),
        "b": N_("Post-LN's is almost flat and below Pre-LN's at every block; Pre-LN's falls about 3× to block 4"),
        "c": N_("both fall toward the output at a similar rate, and Post-LN's gradients are the larger at every block"),
        "d": N_("Pre-LN's is almost flat, and Post-LN's falls about 3× from its first block to its fourth"),
    },
    answer="b",
    explanation=N_(
        "compare block 1 with block 4 in each row. Pre-LN's gradient falls toward the output, as chapter 04 "
        "measured at both initializations. Post-LN's four numbers barely change and stay below Pre-LN's: these weights "
        "(std 0.1) are smaller than 1/√d ≈ 0.18 at width 32, and, as with GPT-2's 0.02 in the chapter, branches "
        "well below the stream's size leave every Post-LN block near the identity, so its profile is flat."
    ),
    wrong_hints={
        "a": N_(
            "that describes a paper's figure, not your printout: read the Post-LN row from block 1 to block 4, "
            "then the Pre-LN row, whose first block has the largest number of all."
        ),
        "c": N_(
            "only one row falls much: compare the first and the last number of each row, and then the two rows "
            "block by block to see which placement gets the larger gradients."
        ),
        "d": N_(
            "the rows are the other way round: the falling row is Pre-LN's (its identity path reaches block 1 "
            "whole, while the top blocks' gradient shrinks), and the Post-LN row barely changes."
        ),
    },
)

WARMUP_QUESTION = MultipleChoice(
    id="ex04.warmup",
    prompt=N_(
        "Xiong et al. (2020, arXiv 2002.04745) train Pre-LN transformers without the learning-rate warmup "
        "that Post-LN transformers need. What is their explanation?"
    ),
    choices={
        "a": N_("Pre-LN has fewer parameters than Post-LN, so each update of the same size moves the model less"),
        "b": N_(
            "Pre-LN's norms rescale the gradients that flow back through them, so Pre-LN acts like gradient clipping"
        ),
        "c": N_("RMSNorm is more stable than LayerNorm, and Pre-LN models use RMSNorm"),
        "d": N_(
            "at Xavier-size init Post-LN's gradients grow toward the output, so full-size first steps move the top "
            "layers too far"
        ),
    },
    answer="d",
    explanation=N_(
        "in Post-LN every residual sum passes through a norm. With weights of size about 1/√d (Xavier), "
        "Post-LN's gradients grow toward the output, so the first full-size steps are too big for the top layers; "
        "warmup keeps them small. In Pre-LN the identity path reaches every layer untouched. Chapter 04 measured both "
        "sides: at init 1/√d and lr 3e-3 Post-LN failed without warmup and trained with it. With GPT-2's std 0.02 "
        "Post-LN's gradients were flat and smaller than Pre-LN's, so the argument does not apply there."
    ),
    wrong_hints={
        "a": N_(
            "Pre-LN and Post-LN have the same weights, apart from one final norm (ln_f) that Pre-LN adds; the "
            "difference is where the norms sit, not how many parameters there are."
        ),
        "b": N_(
            "no norm touches the gradients directly, and a norm's backward pass is no clipping; the norm's "
            "position changes the path the gradients take back through the residual sums."
        ),
        "c": N_(
            "the placement question does not depend on the norm's kind: GPT-2 is Pre-LN with LayerNorm, Llama "
            "Pre-LN with RMSNorm, and chapter 04's Post-LN and Pre-LN runs both used LayerNorm."
        ),
    },
)

EXERCISE = Exercise(
    "ex04_residual_norms",
    graded=[
        Graded("pre_ln_block", "pre_ln_block", 2),
        Graded("post_ln_block", "post_ln_block", 2),
        Graded("layer_grad_norms", "layer_grad_norms", 3),
        Graded("ex04.profile", "answer_profile", 1),
        Graded("ex04.warmup", "answer_warmup", 1),
    ],
    checks=[PRE_LN_CHECK, POST_LN_CHECK, GRAD_NORMS_CHECK],
    questions=[PROFILE_QUESTION, WARMUP_QUESTION],
)

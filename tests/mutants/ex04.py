"""Exercise 04 (where the norm sits): pre_ln_block(x, params), post_ln_block(x, params) and
layer_grad_norms(state, placement, idx, targets), written with the sub-layers the exercise gives."""

import math

import torch

from course_utils.checks.ex04 import attention, mlp, model_from_state, norm
from course_utils.model import lm_loss


# ----------------------------------------------------------------------------------------------------
# pre_ln_block: x + Attn(Norm1(x)), then x + MLP(Norm2(x))
# ----------------------------------------------------------------------------------------------------
def pre_ln_with_named_steps(x, params):
    """Correct: each sub-layer's update computed first, then added to the stream."""
    attn_update = attention(norm(x, params, "norm1"), params)
    h = x + attn_update
    mlp_update = mlp(norm(h, params, "norm2"), params)
    return h + mlp_update


def pre_ln_is_post_ln(x, params):
    """Post-LN: normalizes the sum, norm(x + F(x))."""
    x = norm(x + attention(x, params), params, "norm1")
    return norm(x + mlp(x, params), params, "norm2")


def pre_ln_is_reordered_norm(x, params):
    """OLMo 2's reordered norm: normalizes the sub-layer's output, x + norm(F(x)), instead of its input."""
    x = x + norm(attention(x, params), params, "norm1")
    return x + norm(mlp(x, params), params, "norm2")


def pre_ln_no_residual(x, params):
    """No residual connection: x = F(norm(x))."""
    x = attention(norm(x, params, "norm1"), params)
    return mlp(norm(x, params, "norm2"), params)


def pre_ln_normalizes_the_stream(x, params):
    """Normalizes the stream itself (x = norm(x)) before adding to it."""
    x = norm(x, params, "norm1")
    x = x + attention(x, params)
    x = norm(x, params, "norm2")
    return x + mlp(x, params)


def pre_ln_swapped_norms(x, params):
    """Uses norm2 before attention and norm1 before the MLP."""
    x = x + attention(norm(x, params, "norm2"), params)
    return x + mlp(norm(x, params, "norm1"), params)


def pre_ln_norm1_twice(x, params):
    """Uses norm1 before both sub-layers (norm2 never used)."""
    x = x + attention(norm(x, params, "norm1"), params)
    return x + mlp(norm(x, params, "norm1"), params)


def pre_ln_mlp_added_to_the_block_input(x, params):
    """Adds the MLP's output to the block's input x instead of the stream after attention."""
    h = x + attention(norm(x, params, "norm1"), params)
    return x + mlp(norm(h, params, "norm2"), params)


def pre_ln_parallel_block(x, params):
    """Runs attention and the MLP side by side on the same input (GPT-J's parallel block)."""
    return x + attention(norm(x, params, "norm1"), params) + mlp(norm(x, params, "norm2"), params)


def pre_ln_mlp_first(x, params):
    """Applies the MLP before attention."""
    x = x + mlp(norm(x, params, "norm2"), params)
    return x + attention(norm(x, params, "norm1"), params)


# ----------------------------------------------------------------------------------------------------
# post_ln_block: Norm1(x + Attn(x)), then Norm2(x + MLP(x))
# ----------------------------------------------------------------------------------------------------
def post_ln_with_named_steps(x, params):
    """Correct: each residual sum computed first, then normalized."""
    after_attention = norm(x + attention(x, params), params, "norm1")
    residual_sum = after_attention + mlp(after_attention, params)
    return norm(residual_sum, params, "norm2")


def post_ln_is_pre_ln(x, params):
    """Pre-LN: normalizes the sub-layer's input and leaves the sum unnormalized."""
    x = x + attention(norm(x, params, "norm1"), params)
    return x + mlp(norm(x, params, "norm2"), params)


def post_ln_is_reordered_norm(x, params):
    """OLMo 2's reordered norm: normalizes the sub-layer's output, x + norm(F(x)), instead of the sum."""
    x = x + norm(attention(x, params), params, "norm1")
    return x + norm(mlp(x, params), params, "norm2")


def post_ln_norm_before_adding(x, params):
    """Normalizes before adding: norm(x) + F(norm(x))."""
    x = norm(x, params, "norm1") + attention(norm(x, params, "norm1"), params)
    return norm(x, params, "norm2") + mlp(norm(x, params, "norm2"), params)


def post_ln_swapped_norms(x, params):
    """Uses norm2 after attention and norm1 after the MLP."""
    x = norm(x + attention(x, params), params, "norm2")
    return norm(x + mlp(x, params), params, "norm1")


def post_ln_no_residual(x, params):
    """No residual connection: norm(F(x))."""
    x = norm(attention(x, params), params, "norm1")
    return norm(mlp(x, params), params, "norm2")


def post_ln_norm1_twice(x, params):
    """Uses norm1 after both sub-layers (norm2 never used)."""
    x = norm(x + attention(x, params), params, "norm1")
    return norm(x + mlp(x, params), params, "norm1")


def post_ln_only_the_final_norm(x, params):
    """Normalizes only once, at the end: norm2(x + Attn(x) + MLP(...)), without norm1."""
    x = x + attention(x, params)
    return norm(x + mlp(x, params), params, "norm2")


def post_ln_mlp_on_the_unnormalized_sum(x, params):
    """Feeds the MLP the sum before norm1 (the normalized stream is only used for the residual)."""
    s = x + attention(x, params)
    return norm(norm(s, params, "norm1") + mlp(s, params), params, "norm2")


# ----------------------------------------------------------------------------------------------------
# layer_grad_norms: per block, the norm of the gradient of all its parameters
# ----------------------------------------------------------------------------------------------------
def grad_norms_from_autograd_grad(state, placement, idx, targets):
    """Correct: torch.autograd.grad over each block's parameters, no hooks, no .grad."""
    model = model_from_state(state, placement)
    params = [list(block.parameters()) for block in model.blocks]
    grads = torch.autograd.grad(lm_loss(model(idx), targets), [p for ps in params for p in ps])
    norms, start = [], 0
    for ps in params:
        block_grads = grads[start : start + len(ps)]
        start += len(ps)
        norms.append(math.sqrt(sum(float(g.pow(2).sum()) for g in block_grads)))
    return torch.tensor(norms)


def _squares_per_block(state, placement, idx, targets, keep=lambda name: True):
    model = model_from_state(state, placement)
    lm_loss(model(idx), targets).backward()
    return [
        sum(float(p.grad.pow(2).sum()) for name, p in block.named_parameters() if keep(name)) for block in model.blocks
    ]


def grad_norms_squared(state, placement, idx, targets):
    """Returns each block's sum of squares, without the square root."""
    return torch.tensor(_squares_per_block(state, placement, idx, targets))


def grad_norms_mlp_only(state, placement, idx, targets):
    """Hooks only the MLP's parameters."""
    squares = _squares_per_block(state, placement, idx, targets, keep=lambda name: name.startswith("mlp."))
    return torch.tensor([math.sqrt(s) for s in squares])


def grad_norms_attention_only(state, placement, idx, targets):
    """Hooks only the attention's parameters."""
    squares = _squares_per_block(state, placement, idx, targets, keep=lambda name: name.startswith("attn."))
    return torch.tensor([math.sqrt(s) for s in squares])


def grad_norms_without_the_norms(state, placement, idx, targets):
    """Leaves out the norms' gains and biases (only the weight matrices)."""
    squares = _squares_per_block(state, placement, idx, targets, keep=lambda name: "norm" not in name)
    return torch.tensor([math.sqrt(s) for s in squares])


def grad_norms_sum_of_parameter_norms(state, placement, idx, targets):
    """Adds the norms of the separate parameters instead of their squares."""
    model = model_from_state(state, placement)
    lm_loss(model(idx), targets).backward()
    return torch.tensor([sum(float(p.grad.pow(2).sum().sqrt()) for p in block.parameters()) for block in model.blocks])


def grad_norms_rms_per_element(state, placement, idx, targets):
    """Divides each block's sum of squares by its number of parameters (an RMS, not a norm)."""
    model = model_from_state(state, placement)
    lm_loss(model(idx), targets).backward()
    return torch.tensor(
        [
            math.sqrt(sum(float(p.grad.pow(2).sum()) for p in b.parameters()) / sum(p.numel() for p in b.parameters()))
            for b in model.blocks
        ]
    )


def grad_norms_of_block_outputs(state, placement, idx, targets):
    """Measures the gradient with respect to each block's output (the hidden state), not its parameters."""
    model = model_from_state(state, placement)
    outputs = []

    def keep(module, inputs, out):
        out.retain_grad()
        outputs.append(out)

    handles = [b.register_forward_hook(keep) for b in model.blocks]
    lm_loss(model(idx), targets).backward()
    for h in handles:
        h.remove()
    return torch.tensor([float(o.grad.pow(2).sum().sqrt()) for o in outputs])


def grad_norms_in_backward_order(state, placement, idx, targets):
    """Appends one value per block in the order the hooks fire: backward order, last block first."""
    model = model_from_state(state, placement)
    squares = {}
    order = []

    def hook_for(i):
        def add(grad):
            if i not in squares:
                order.append(i)
            squares[i] = squares.get(i, 0.0) + float(grad.pow(2).sum())

        return add

    handles = [p.register_hook(hook_for(i)) for i, b in enumerate(model.blocks) for p in b.parameters()]
    lm_loss(model(idx), targets).backward()
    for h in handles:
        h.remove()
    return torch.tensor([math.sqrt(squares[i]) for i in order])


def grad_norms_hooks_registered_twice(state, placement, idx, targets):
    """Registers every hook twice (the cell ran twice on one model), so each square is counted twice."""
    model = model_from_state(state, placement)
    squares = [0.0] * len(model.blocks)
    handles = []
    for _ in range(2):
        for i, block in enumerate(model.blocks):
            for p in block.parameters():
                handles.append(
                    p.register_hook(lambda g, i=i: squares.__setitem__(i, squares[i] + float(g.pow(2).sum())))
                )
    lm_loss(model(idx), targets).backward()
    for h in handles:
        h.remove()
    return torch.tensor([math.sqrt(s) for s in squares])


def grad_norms_whole_model_per_block(state, placement, idx, targets):
    """Returns the gradient norm of the whole model (embedding and head included) for every block."""
    model = model_from_state(state, placement)
    lm_loss(model(idx), targets).backward()
    total = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters()))
    return torch.tensor([total] * len(model.blocks))


CORRECT = {
    "pre_ln_block": pre_ln_with_named_steps,
    "post_ln_block": post_ln_with_named_steps,
    "layer_grad_norms": grad_norms_from_autograd_grad,
}
MUTANTS = {
    "pre_ln_block": [
        pre_ln_is_post_ln,
        pre_ln_is_reordered_norm,
        pre_ln_no_residual,
        pre_ln_normalizes_the_stream,
        pre_ln_swapped_norms,
        pre_ln_norm1_twice,
        pre_ln_mlp_added_to_the_block_input,
        pre_ln_parallel_block,
        pre_ln_mlp_first,
    ],
    "post_ln_block": [
        post_ln_is_pre_ln,
        post_ln_is_reordered_norm,
        post_ln_norm_before_adding,
        post_ln_swapped_norms,
        post_ln_no_residual,
        post_ln_norm1_twice,
        post_ln_only_the_final_norm,
        post_ln_mlp_on_the_unnormalized_sum,
    ],
    "layer_grad_norms": [
        grad_norms_squared,
        grad_norms_mlp_only,
        grad_norms_attention_only,
        grad_norms_without_the_norms,
        grad_norms_sum_of_parameter_norms,
        grad_norms_rms_per_element,
        grad_norms_of_block_outputs,
        grad_norms_in_backward_order,
        grad_norms_hooks_registered_twice,
        grad_norms_whole_model_per_block,
    ],
}

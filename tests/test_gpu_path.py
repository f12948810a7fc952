"""The GPU preset's code path, run on the CPU: mixed precision (bf16 autocast; fp16 with a gradient scaler on a GPU
without bf16), and chapters 05 and 06 under a preset other than the stored one. The sweep's GPU branch and the presets
are tested with the rest of course_utils.experiments, in test_experiments.py.

No GPU takes part in `make test`. What would break on one is mostly code that only runs there: the autocast, the
precision choice, the sequential sweep, and the notebooks' cells that handle another preset (claims shown as
expectations, the extra runs chapter 06 trains when its sweep is not the quick one). The "smoke" preset is the gpu
preset's configuration at a tiny size on the CPU (course_utils/experiments.py), and COURSE_PRESET=smoke makes the
chapters pick it as they would pick "gpu" on a CUDA machine.
"""

import math
import os
import subprocess
import sys

import pytest
import torch

from course_utils import training
from course_utils.callbacks import Callback
from course_utils.data import Corpus
from course_utils.model import GPTConfig, TinyGPT
from course_utils.training import TrainConfig, amp_dtype, autocast, precision, train

from conftest import ROOT


@pytest.mark.parametrize(
    "capability, dtype", [((9, 0), torch.bfloat16), ((8, 0), torch.bfloat16), ((7, 5), torch.float16)]
)
def test_a_gpu_without_bf16_gets_fp16_and_says_so(monkeypatch, capability, dtype):
    """H100/H200 and A100 have bf16; a T4 (7.5) or V100 (7.0) does not, and gets fp16 with a gradient scaler."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    assert amp_dtype("cuda") is dtype
    words = precision("cuda", amp=True)
    assert ("fp16" in words and "scaler" in words) if dtype is torch.float16 else words == "bf16 autocast"
    assert precision("cuda", amp=False) == "float32"


def test_the_cpu_has_bf16_autocast_and_mps_float32():
    assert amp_dtype("cpu") is torch.bfloat16 and precision("cpu", True) == "bf16 autocast"
    assert amp_dtype("mps") is None and precision("mps", True) == "float32"
    with autocast("cpu", False):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype is torch.float32
    with autocast("cpu", True):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype is torch.bfloat16


def tiny_run(amp, monkeypatch=None, fp16=False, steps=12):
    corpus = Corpus(n_sentences=300, seed=0)
    torch.manual_seed(0)
    model = TinyGPT(GPTConfig(vocab_size=corpus.vocab_size, block_size=16, n_layer=1, n_head=2, d_model=32))
    seen = {"dtypes": set(), "grad_norms": []}
    model.blocks[0].attn.q_proj.register_forward_hook(lambda m, i, o: seen["dtypes"].add(o.dtype))
    if fp16:  # what a T4 gets: fp16 autocast and a gradient scaler (CPU autocast computes fp16 too)
        monkeypatch.setattr(training, "amp_dtype", lambda device: torch.float16)

    class GradNorms(Callback):  # after the backward pass, before the optimizer step
        def after_backward(self, step, m):
            seen["grad_norms"].append(
                math.sqrt(sum(float(p.grad.pow(2).sum()) for p in m.parameters() if p.grad is not None))
            )

    cfg = TrainConfig(steps=steps, batch_size=4, block_size=16, lr=3e-3, warmup=2, record_every=4, amp=amp)
    history = train(model, corpus, cfg, progress=False, callbacks=[GradNorms()])
    return history, seen


def test_training_under_bf16_autocast_runs_in_bf16_on_the_cpu():
    history, seen = tiny_run(amp=True)
    assert seen["dtypes"] == {torch.bfloat16}
    assert not history.diverged and len(history.losses) == 12 and history.losses[-1] < history.losses[0]
    assert history.probe_steps == [0, 4, 8, 11] and all(math.isfinite(v) for v in history.max_logit)
    plain, seen32 = tiny_run(amp=False)
    assert seen32["dtypes"] == {torch.float32}
    assert abs(history.losses[-1] - plain.losses[-1]) < 0.1  # the same training, in lower precision


def test_fp16_training_scales_the_loss_and_shows_the_callback_true_gradients(monkeypatch):
    made = []
    real = torch.amp.GradScaler

    class Spy(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(torch.amp, "GradScaler", Spy)
    history, seen = tiny_run(amp=True, monkeypatch=monkeypatch, fp16=True)
    assert len(made) == 1 and made[0].get_scale() > 1  # the loss was scaled up (65536 at the start)
    assert seen["dtypes"] == {torch.float16} and not history.diverged
    _, plain = tiny_run(amp=False)
    # unscaled before the callback: the same size as float32's gradients, not 65536 times larger
    assert all(0.5 < a / b < 2 for a, b in zip(seen["grad_norms"], plain["grad_norms"]))


EXECUTE = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
notes = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.get("name") == "stdout"]
print("\\n".join(notes))
"""


@pytest.mark.slow
@pytest.mark.parametrize("chapter", ["05_qk_norm_attention", "06_real_model_recipes"])
def test_the_chapters_run_to_the_end_under_the_gpu_presets_code(chapter):
    """Chapters 05 and 06 under COURSE_PRESET=smoke: every cell runs (the tests' strict claims included: under a
    preset other than the quick one, a claim is an expectation and never raises), and the claims say so."""
    path = ROOT / "chapters" / f"{chapter}.ipynb"
    env = dict(os.environ, COURSE_PRESET="smoke", COURSE_STRICT_CLAIMS="1")
    done = subprocess.run(
        [sys.executable, "-c", EXECUTE, str(path), str(path.parent)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "used the smoke preset, where they are what to expect" in done.stdout
    assert "'smoke'" in done.stdout  # the preset the chapter reports it picked

"""Helpers for the course "Normalization and training stability".

Modules (import what you need; importing this package loads none of them, so it costs nothing):
    norms       reference LayerNorm, RMSNorm, BatchNorm (functions and nn.Modules)
    handcalc    exact, step-by-step hand computations (layer_norm_steps, rms_norm_steps)
    checks      the exercise checks: the framework, and one module per exercise (checks.ex01.check_layer_norm, ...)
    quiz        end-of-chapter check questions
    widgets     explorers that also render statically
    figures     show(): a figure with its alt text, refused when its text is too small to read
    claims      claims about training runs, checked in front of the learner: ✓ or ✗ for each, never a crash
    i18n        the language (English or Japanese) and the message catalogs
    diagrams    which elements share statistics: axis diagrams and the norm-axes explorer (chapter 03)
    causal_leak BatchNorm's leak of future tokens into a causal model, measured (chapter 03)
    placement_diagram  where the norms sit in a block: Pre-LN, Post-LN, Peri-LN, reordered (chapter 04)
    stability_plots  the figures of chapter 05 and exercise 05: saturation, softcapping, the sweep
    display     cmp(), show_source(), text tables and Table (text and HTML from one set of rows)
    norm_cost   LayerNorm vs RMSNorm timing and the ATen operators each dispatches (chapter 02)
    model       TinyGPT and GPTConfig: norm (layernorm | rmsnorm | dyt), placement (pre | post | peri | reordered),
                gain (w | 1+w) and embedding-scale switches
    attention   causal attention with QK-Norm, RoPE, softcapping and logit/entropy probes
    data        the synthetic corpus (agreement, recall, copy) and its word tokenizer
    probes      what measures without changing anything: gradient-norm, hidden-norm and attention probes (context
                managers, chapter 04) and the training logs (AttentionLog, GainLog, OutputRMSLog)
    training    the flat training loop: warmup, loss functions (ZLoss), callbacks, a deterministic progress bar
    callbacks   the loop's hooks, and what changes training mid-run (QKNormSwitch)
    experiments the stability lab: variants (each a Recipe), presets, build_run(), stability_sweep() (05, 06)
    records     what a run leaves (RunRecord), the sweep's verdicts and tables (SweepResult), lr_sensitivity()
    pool        worker processes for independent CPU runs (parallel_map, usable_cpus)
    run_cache   training runs memoized on disk when COURSE_RUN_CACHE is set (the tests)
    recipes     the norm recipes of real models (GPT-2, Llama 3, Qwen3, Gemma 2/3, OLMo 2) as plain data (06)
    recipe_cards the recipes as a table and as drawn cards (06)
    recipe_lab  chapter 06's extra runs (log Z, QK-Norm switched on late, output growth) and its figures
    digest_check the seed digest's claims about real models, checked against the recipes and cited code (06)
    grade       `python -m course_utils.grade SUBMISSIONS...`: the instructors' batch grader
    grading     the grader itself: cli, run (one submission), kernel (the protocol), judge (the verdict)
    tracing     CallTrace: which of a set of functions a call really runs (the checks' forbidden calls)
    env         seed_everything(), pick_device(), environment_report(), course_releases()
    exercises   `python -m course_utils.exercises` writes exercises/ from solutions/
    nbtools     `python -m course_utils.nbtools execute ...` re-executes notebooks deterministically
    learner_work  a learner's changed notebook is copied to backups/ before a course command rewrites it
    lone        a notebook opened alone (Colab): installs only the requirements that are missing
"""

__version__ = "0.1.0"

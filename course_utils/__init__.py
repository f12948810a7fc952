"""Helpers for the course "Normalization and training stability".

Modules (import what you need; importing this package loads none of them, so it costs nothing):
    norms       reference LayerNorm, RMSNorm, BatchNorm (functions and nn.Modules)
    handcalc    exact, step-by-step hand computations (layer_norm_steps, rms_norm_steps)
    checks      the exercise checks (check_layer_norm, check_choice, ...)
    quiz        end-of-chapter check questions
    widgets     explorers that also render statically
    diagrams    which elements share statistics: axis diagrams and the norm-axes explorer (chapter 03)
    display     cmp() and show_source()
    env         seed_everything(), pick_device(), environment_report()
    exercises   `python -m course_utils.exercises` writes exercises/ from solutions/
    nbtools     `python -m course_utils.nbtools execute ...` re-executes notebooks deterministically
"""
__version__ = "0.1.0"

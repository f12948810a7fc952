"""The seed digest's claims about real models, checked against the recipes and against cited reference code.

Chapter 06 reads the digest's adoption table (which model uses QK-Norm, where its norms sit) as data: each
claim is a value (`DigestRow`), paraphrased in English. A claim about a model that has a recipe in
`course_utils.recipes` is compared with that recipe's GPTConfig, so that the table and the trained models can
never disagree. For the three models without a recipe (GLM-4.5/4.7, MiniMax-M2, DeepSeek-V3) the facts come from
`REFERENCE_FACTS`, a small table in which every value names the public code it was read from.

    rows = check_adoption_table()       # one dict per digest row: what it says, what the code does, the verdict
    rows[2]["verdict"]                  # 'wrong'
    check_adoption_table(shown=True)    # the same rows for display: headers, phrases, verdicts in the course's language
    verdict_summary({"agrees": 5, "wrong": 2})   # 'agrees 5, wrong 2' (in Japanese: '一致5行、誤り2行')
    embedding_claims()                  # the digest's "Gemma 3 and Qwen3 L2-normalize their embeddings"
    rope_commutation(gain=None)         # max |Norm(RoPE(x)) - RoPE(Norm(x))|: 0 up to rounding without a gain

Verdicts: **agrees**; **wrong** (at least one claim contradicts the code; the row says what the code does);
**unverifiable** (no claim contradicts the code, but at least one could not be checked against public code).
The rows' keys and values stay English (the chapter's code reads them); every phrase is marked with `N_()`, so the
rows built with `shown=True` read in the course's language (course_utils.i18n).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch

from .attention import RotaryEmbedding
from .i18n import N_, _
from .model import GPTConfig
from .recipes import RECIPES

__all__ = [
    "DigestRow",
    "DIGEST_TABLE",
    "REFERENCE_FACTS",
    "PLACEMENT_WORDS",
    "model_facts",
    "check_row",
    "check_adoption_table",
    "verdict_summary",
    "embedding_claims",
    "rope_commutation",
]

# how each placement is written, for people (the GPTConfig names on the left)
PLACEMENT_WORDS = {
    "pre": "Pre-Norm, x + F(Norm(x))",
    "post": "Post-Norm, Norm(x + F(x))",
    "peri": "sandwich / Peri-LN, x + Norm(F(Norm(x)))",
    "reordered": "output-only norm, x + Norm(F(x))",
}
# the name part of each (what a claim and a fact say), marked for the catalog
_PLACEMENT_NAMES = {
    "pre": N_("Pre-Norm"),
    "post": N_("Post-Norm"),
    "peri": N_("sandwich / Peri-LN"),
    "reordered": N_("output-only norm"),
}
assert all(PLACEMENT_WORDS[p].split(",")[0] == name for p, name in _PLACEMENT_NAMES.items())
# the columns of a checked row and the three verdicts, marked for the catalog (shown with _())
COLUMNS = (N_("model"), N_("digest says"), N_("the code does"), N_("verdict"), N_("correction"), N_("checked against"))
VERDICTS = (N_("agrees"), N_("wrong"), N_("unverifiable"))
Verdict = Literal["agrees", "wrong", "unverifiable"]  # VERDICTS, as a type


@dataclass(frozen=True)
class DigestRow:
    """One row of the digest's adoption table (its lines 296-302), as values.

    qk_norm: the ✅ / — column. placement: the "Norm placement" column, as a GPTConfig placement name.
    extra: the remarks column turned into checkable claims, {fact name: claimed value}.
    """

    model: str  # as the digest writes it
    qk_norm: bool
    placement: str
    remark: str = ""  # the remarks column, paraphrased in English
    extra: dict[str, object] = field(default_factory=dict)
    recipe: str | None = None  # the course_utils.recipes name that this row is checked against, if any


DIGEST_TABLE = (
    DigestRow("OLMo 2/3", True, "post", "Post-Norm combined with QK-Norm", recipe="olmo2"),
    DigestRow("Qwen3", True, "pre", "QK-Norm took the place of the QKV bias", {"qkv_bias": False}, recipe="qwen3"),
    DigestRow("Gemma 3", True, "pre", "also uses logit softcapping", {"softcap": True}, recipe="gemma3"),
    DigestRow("GLM-4.5/4.7", True, "pre"),
    DigestRow("MiniMax-M2", True, "pre"),
    DigestRow("DeepSeek-V3", False, "pre", "its own normalization inside MLA", {"mla_latent_norms": True}),
    DigestRow("Llama 3", False, "pre", "no QK-Norm", recipe="llama3"),
)

# Facts read from public reference code, for the rows without a recipe and for what a GPTConfig cannot hold:
# {fact: (value, in words, source)}; value None means no public code settles it. Full citations with line
# numbers: instructor/06_real_model_recipes.md.
REFERENCE_FACTS: dict[str, dict[str, tuple[object, str, str]]] = {
    "GLM-4.5/4.7": {
        "qk_norm": (
            True,
            N_("QK-Norm per head, before a partial RoPE (GLM-4.5 and GLM-4.7; not GLM-4.5-Air)"),
            "transformers glm4_moe; zai-org/GLM-4.7 config.json; Megatron-Bridge glm45_provider.py",
        ),
        "placement": ("pre", N_("Pre-Norm"), "transformers glm4_moe"),
    },
    "MiniMax-M2": {
        "qk_norm": (True, N_("QK-Norm full width (like OLMo 2)"), "transformers minimax_m2"),
        "placement": ("pre", N_("Pre-Norm"), "transformers minimax_m2"),
    },
    "DeepSeek-V3": {
        "qk_norm": (False, N_("no QK-Norm"), "deepseek-ai/DeepSeek-V3 inference/model.py"),
        "placement": ("pre", N_("Pre-Norm"), "deepseek-ai/DeepSeek-V3 inference/model.py"),
        "mla_latent_norms": (
            True,
            N_("RMSNorm on the compressed q and kv latents"),
            "deepseek-ai/DeepSeek-V3 inference/model.py",
        ),
    },
    "Qwen3": {"qkv_bias": (False, N_("no QKV bias (Qwen2 had one)"), "transformers qwen2, qwen3")},
}
# what each claim says, in words: {fact: (words when true, words when false)}
_CLAIM_WORDS = {
    "qk_norm": (N_("QK-Norm"), N_("no QK-Norm")),
    "softcap": (N_("softcaps logits"), N_("no softcap")),
    "qkv_bias": (N_("has a QKV bias"), N_("QKV bias dropped")),
    "mla_latent_norms": (N_("norms inside MLA"), N_("no norms inside MLA")),
}


def _as_is(text: str) -> str:
    return text


def model_facts(row: DigestRow, tr: Callable[[str], str] = _as_is) -> dict[str, tuple[object, str, str]]:
    """{fact: (value, in words, source)} for one row: from its recipe's GPTConfig where it has one, else
    from REFERENCE_FACTS (which also holds the facts a GPTConfig cannot express, such as a QKV bias).
    tr: how the words are shown (as written, in English; or `_`, in the course's language)."""
    facts = {name: (value, tr(words), src) for name, (value, words, src) in REFERENCE_FACTS.get(row.model, {}).items()}
    if row.recipe is not None:
        recipe = RECIPES[row.recipe]
        cfg = GPTConfig(**recipe.model)
        src = tr(N_("recipe {name}")).format(name=row.recipe)
        qk = {None: N_("no QK-Norm"), "head": N_("QK-Norm per head"), "full": N_("QK-Norm full width")}[cfg.qk_norm]
        facts["qk_norm"] = (cfg.qk_norm is not None, tr(qk), src)
        facts["placement"] = (cfg.placement, tr(_PLACEMENT_NAMES[cfg.placement]), src)
        caps = [
            tr(where).format(value=v)
            for where, v in ((N_("attention {value:g}"), cfg.attn_softcap), (N_("output {value:g}"), cfg.logit_softcap))
            if v
        ]
        words = tr(N_("softcap {caps}")).format(caps=tr(N_(", ")).join(caps)) if caps else tr(N_("no softcap"))
        facts["softcap"] = (bool(caps), words, src)
    return facts


def _claim_words(name: str, value: object, tr: Callable[[str], str] = _as_is) -> str:
    if name == "placement":
        return tr(_PLACEMENT_NAMES[str(value)])
    return tr(_CLAIM_WORDS[name][0 if value else 1])


def check_row(row: DigestRow, shown: bool = False) -> dict[str, str]:
    """Compare one digest row's claims with the facts: the row of the chapter's table.

    Its keys and words are English (what code reads); `shown=True` gives the same row in the course's language."""
    tr = _ if shown else _as_is
    facts = model_facts(row, tr)
    claims = {"qk_norm": row.qk_norm, "placement": row.placement, **row.extra}
    wrong: list[str] = []
    unknown: list[str] = []
    says: list[str] = []
    does: list[str] = []
    for name, claimed in claims.items():
        says.append(_claim_words(name, claimed, tr))
        value, words, _src = facts.get(name, (None, tr(N_("not found in public code")), ""))
        does.append(words)
        if value is None:
            unknown.append(name)
        elif value != claimed:
            wrong.append(tr(N_("{does}, not {says}")).format(does=words, says=_claim_words(name, claimed, tr)))
    verdict: Verdict = "wrong" if wrong else "unverifiable" if unknown else "agrees"
    sources = dict.fromkeys(src for name in claims if name in facts for src in facts[name][2].split("; "))
    sep = tr(N_("; "))
    cells = (
        row.model,
        sep.join(says),
        sep.join(dict.fromkeys(does)),
        tr(verdict),
        sep.join(wrong or [facts.get(n, (0, tr(N_("no public code found"))))[1] for n in unknown]),
        sep.join(sources),
    )
    return {tr(column): cell for column, cell in zip(COLUMNS, cells)}


def check_adoption_table(rows: Iterable[DigestRow] = DIGEST_TABLE, shown: bool = False) -> list[dict[str, str]]:
    """The digest's adoption table, one checked row per model (see check_row; `shown=True`: for display, in the
    course's language)."""
    return [check_row(r, shown) for r in rows]


def verdict_summary(counts: dict[str, int]) -> str:
    """{verdict: number of rows} in words: "agrees 5, wrong 2, unverifiable 0" (in the course's language)."""
    return _(", ").join(_("{verdict} {n}").format(verdict=_(v), n=n) for v, n in counts.items())


def embedding_claims() -> dict[str, str | None]:
    """The digest says Gemma 3 and Qwen3 L2-normalize their embeddings (e / |e| * sqrt(d)). What their recipes do:
    {model: embed_scale of its GPTConfig} (None: a plain lookup; "sqrt_d": times the constant sqrt(d_model))."""
    return {RECIPES[name].title: GPTConfig(**RECIPES[name].model).embed_scale for name in ("gemma3", "qwen3")}


def rope_commutation(
    gain: Sequence[float] | torch.Tensor | None = None, d_head: int = 16, positions: int = 32, seed: int = 0
) -> float:
    """max |RoPE(Norm(x)) - Norm(RoPE(x))| over random float64 head vectors, with an optional RMSNorm gain.

    RoPE rotates pairs of channels, so it keeps every vector's RMS: without a gain (or with a constant one) the
    two orders agree up to rounding. A per-channel gain that differs within a rotated pair breaks it.
    """
    rope = RotaryEmbedding(d_head, positions)
    x = torch.randn(positions, d_head, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 3
    g = torch.ones(d_head, dtype=torch.float64) if gain is None else torch.as_tensor(gain, dtype=torch.float64)

    def norm(v: torch.Tensor) -> torch.Tensor:
        return v / v.pow(2).mean(-1, keepdim=True).sqrt() * g

    return float((rope(norm(x)) - norm(rope(x))).abs().max())

"""A synthetic corpus generated in code: no download, the same tokens on every machine for a given seed.

It is built so that attention matters: many next words can only be predicted by looking back.

* agreement   "the big cat near the dogs sleeps ."      the verb agrees with the first noun, not the nearest
* recall      "k3 v7 k1 v2 k5 v9 ; k1 v2 ."             the value after the query key sits several words back
* copy        "copy v4 v1 v8 = v4 v1 v8 ."              the second half repeats the first

A word-level tokenizer maps the fixed vocabulary to ids; `Corpus` holds train and validation token
streams and draws random windows as batches from a torch.Generator.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

import torch

__all__ = ["VOCABULARY", "WordTokenizer", "make_text", "Corpus"]

_NOUNS = [
    ("cat", "cats"),
    ("dog", "dogs"),
    ("bird", "birds"),
    ("fox", "foxes"),
    ("child", "children"),
    ("horse", "horses"),
    ("mouse", "mice"),
    ("wolf", "wolves"),
]
_VERBS = [
    ("sleeps", "sleep"),
    ("runs", "run"),
    ("sings", "sing"),
    ("waits", "wait"),
    ("jumps", "jump"),
    ("eats", "eat"),
]
_ADJECTIVES = ["big", "small", "old", "young", "quick", "lazy"]
_PREPOSITIONS = ["near", "behind", "with", "under"]
_KEYS = [f"k{i}" for i in range(12)]
_VALUES = [f"v{i}" for i in range(12)]
_SYMBOLS = [".", ";", "=", "the", "copy"]

VOCABULARY = tuple(
    _SYMBOLS
    + [w for pair in _NOUNS for w in pair]
    + [w for pair in _VERBS for w in pair]
    + _ADJECTIVES
    + _PREPOSITIONS
    + _KEYS
    + _VALUES
)


class WordTokenizer:
    """Whitespace-separated words <-> integer ids over a fixed vocabulary."""

    def __init__(self, vocabulary: Iterable[str] = VOCABULARY) -> None:
        self.itos = list(vocabulary)
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("the vocabulary has duplicate words")

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def encode(self, text: str) -> list[int]:
        try:
            return [self.stoi[w] for w in text.split()]
        except KeyError as exc:
            raise ValueError(f"word {exc.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids: Iterable[int | torch.Tensor]) -> str:
        return " ".join(self.itos[int(i)] for i in ids)


def _noun_phrase(rng: random.Random) -> tuple[list[str], int]:
    singular, plural = rng.choice(_NOUNS)
    number = rng.randrange(2)
    words = ["the"] + ([rng.choice(_ADJECTIVES)] if rng.random() < 0.5 else []) + [(singular, plural)[number]]
    return words, number


def _agreement(rng: random.Random) -> list[str]:
    subject, number = _noun_phrase(rng)
    words = list(subject)
    for _ in range(rng.randrange(3)):  # zero to two distracting prepositional phrases
        distractor, _ = _noun_phrase(rng)
        words += [rng.choice(_PREPOSITIONS)] + distractor
    words.append(rng.choice(_VERBS)[number])
    return words + ["."]


def _recall(rng: random.Random) -> list[str]:
    pairs = rng.sample(range(len(_KEYS)), rng.randrange(3, 6))
    values = [rng.randrange(len(_VALUES)) for _ in pairs]
    words = [w for k, v in zip(pairs, values) for w in (_KEYS[k], _VALUES[v])]
    query = rng.randrange(len(pairs))
    return words + [";", _KEYS[pairs[query]], _VALUES[values[query]], "."]


def _copy(rng: random.Random) -> list[str]:
    symbols = [rng.choice(_VALUES) for _ in range(rng.randrange(3, 6))]
    return ["copy"] + symbols + ["="] + symbols + ["."]


_KINDS = (_agreement, _recall, _copy)


def make_text(n_sentences: int, seed: int = 0) -> str:
    """n_sentences sentences of the three kinds in random order; Python's Random makes it machine-independent."""
    rng = random.Random(seed)
    return " ".join(w for _ in range(n_sentences) for w in rng.choice(_KINDS)(rng))


@dataclass
class Corpus:
    """Train and validation token streams of the synthetic language."""

    n_sentences: int = 20_000
    seed: int = 0
    val_fraction: float = 0.1

    def __post_init__(self):
        self.tokenizer = WordTokenizer()
        ids = torch.tensor(self.tokenizer.encode(make_text(self.n_sentences, self.seed)), dtype=torch.long)
        n_val = int(len(ids) * self.val_fraction)
        self.train, self.val = ids[:-n_val], ids[-n_val:]

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def batch(
        self, split: str, batch_size: int, block_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets), both (batch_size, block_size): random windows and the same shifted by one."""
        data = self.train if split == "train" else self.val
        starts = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
        x = torch.stack([data[s : s + block_size] for s in starts.tolist()])
        y = torch.stack([data[s + 1 : s + block_size + 1] for s in starts.tolist()])
        return x, y

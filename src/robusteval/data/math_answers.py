"""The gold answers of the math releases, as their files write them: GSM8K's worked solution ends
in ``#### 18``, MATH's holds its answer in the last ``\\boxed{...}``. Here, below the readers, since
the loaders read the gold with them (`data.math`); `readers.math` reads a model's boxed answer with
the same `last_boxed`."""

from __future__ import annotations

import re


def gsm8k_gold(solution: str) -> str:
    """GSM8K's final answer: what follows ``####`` in its worked solution (commas kept as written)."""
    if "####" not in solution:
        raise ValueError("no '####' in the GSM8K solution")
    return solution.rsplit("####", 1)[1].strip()


def last_boxed(text: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces nested to any depth, or of
    ``\\boxed 5``; None when there is none or it is cut off before its closing brace."""
    starts = list(re.finditer(r"\\(?:boxed|fbox)\s*", text))
    for m in reversed(starts):
        rest = text[m.end():]
        if rest.startswith("{"):
            depth = 0
            for i, ch in enumerate(rest):
                depth += (ch == "{") - (ch == "}")
                if depth == 0:
                    content = rest[1:i].strip()
                    if content:
                        return content
                    break
        else:
            token = re.match(r"[^\s$]+", rest)
            if token:
                return token.group(0)
    return None


__all__ = ["gsm8k_gold", "last_boxed"]

"""Compare what a run wrote with what it wrote on another machine: every float within a stated
tolerance, everything else exactly.

Different CPUs and BLAS/libm builds round the last bits of a sum, a logarithm or a matrix product
differently (SIMD widths change the order of a sum), so a golden captured on one machine holds floats
whose last digits another machine does not reproduce: 0.20877725288701351 there, ...354 here. The
results are right on both; a test that compares them bit for bit is not portable. `differences`
compares floats with ``math.isclose(rel_tol=REL, abs_tol=ABS)`` (ABS for values that are 0 in exact
arithmetic: -1.8e-16 against 0.0; float32 values such as embedding similarities, whose last bit
moves with the CPU and the thread count, at F32_REL) and everything else (keys, strings, integers, None, lengths)
exactly; inside a string, the numbers it prints are compared within the same tolerance and the text
around them exactly. `perturbed` moves every float by one unit in its last place, which a
comparison within the tolerance must accept.
"""

from __future__ import annotations

import math
import re
import struct
from typing import Any

REL = 1e-9  # relative: far above float rounding (1e-16 per operation), far below any real change of a metric
ABS = 1e-12  # absolute, for values that are 0 in exact arithmetic
# float32 values (embedding similarities): a float32 carries ~7 digits; 1e-5 is ~160 units in its last
# place at 0.9, room for a transformer pass and a 384-dimension dot product rounded another way
F32_REL = 1e-5

# a decimal number as JSON, CSV or Markdown print it (the sign kept with the number)
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def close(a: float, b: float, *, rel: float = REL, abs_tol: float = ABS) -> bool:
    """Whether two numbers are equal within the tolerance (NaN equals NaN: both undefined). Two
    values that are both float32 numbers (embedding similarities: computed in float32, which carries
    7 digits) are compared at `F32_REL` instead, the most their last bits can move."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol):
        return True
    return _is_float32(a) and _is_float32(b) and math.isclose(a, b, rel_tol=max(rel, F32_REL), abs_tol=abs_tol)


def _is_float32(x: float) -> bool:
    try:
        return struct.unpack("f", struct.pack("f", x))[0] == x
    except (OverflowError, struct.error):
        return False


def differences(got: Any, want: Any, *, rel: float = REL, abs_tol: float = ABS, path: str = "$") -> list[str]:
    """Where ``got`` differs from ``want`` (JSON-like values), one line per difference: floats within
    the tolerance, numbers inside strings likewise, all else exactly. Empty when they agree."""
    if isinstance(want, bool) or isinstance(got, bool) or want is None or got is None:
        return [] if got is want or (type(got) is type(want) and got == want) else [f"{path}: {got!r} != {want!r}"]
    if isinstance(want, float) or isinstance(got, float):
        numbers = isinstance(got, int | float) and isinstance(want, int | float)
        if numbers and close(got, want, rel=rel, abs_tol=abs_tol):
            return []
        return [f"{path}: {got!r} != {want!r}"]
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}: keys {sorted(set(got) ^ set(want))} in one only"] if set(got) != set(want) else []
        for key in [k for k in want if k in got]:
            out += differences(got[key], want[key], rel=rel, abs_tol=abs_tol, path=f"{path}.{key}")
        return out
    if isinstance(want, list | tuple) and isinstance(got, list | tuple):
        if len(got) != len(want):
            return [f"{path}: {len(got)} entries != {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in
                differences(g, w, rel=rel, abs_tol=abs_tol, path=f"{path}[{i}]")]
    if isinstance(want, str) and isinstance(got, str):
        return [] if _same_text(got, want, rel, abs_tol) else [f"{path}: {_first_change(got, want)}"]
    return [] if type(got) is type(want) and got == want else [f"{path}: {got!r} != {want!r}"]


def _same_text(got: str, want: str, rel: float, abs_tol: float) -> bool:
    if got == want:
        return True
    g, w = NUMBER.split(got), NUMBER.split(want)
    if g != w:  # the text around the numbers differs, or their count
        return False
    return all(close(float(x), float(y), rel=rel, abs_tol=abs_tol)
               for x, y in zip(NUMBER.findall(got), NUMBER.findall(want), strict=True))


def _first_change(got: str, want: str) -> str:
    i = next((n for n, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
    return f"text differs at {i}: {got[max(0, i - 40):i + 40]!r} != {want[max(0, i - 40):i + 40]!r}"


def perturbed(value: Any) -> Any:
    """``value`` with every float moved one unit in its last place (`math.nextafter` away from 0),
    in JSON values and in the numbers with a decimal point that strings print; integers, and
    integers printed in strings, unchanged. What another machine's rounding could do at most."""
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return _next(value)
    if isinstance(value, dict):
        return {k: perturbed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(perturbed(v) for v in value)
    if isinstance(value, str):
        return NUMBER.sub(lambda m: repr(_next(float(m.group()))) if "." in m.group() else m.group(), value)
    return value


def _next(x: float) -> float:
    return math.nextafter(x, math.inf if x >= 0 else -math.inf) if math.isfinite(x) else x


__all__ = ["ABS", "F32_REL", "REL", "close", "differences", "perturbed"]

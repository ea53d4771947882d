"""With llama.cpp's prompt cache on, a prompt asked a second time in one process is evaluated whole
(`models.llamacpp.whole_if_repeated`): found cached whole, its last token would be evaluated alone and
round differently (check-determinism's second pass changed 1 reply of 40, docs/performance.md)."""

from __future__ import annotations

from robusteval.models.chat_format import chat_body
from robusteval.models.llamacpp import whole_if_repeated
from robusteval.types import GenParams, Message

ASK = (Message("user", "Which planet is closest to the Sun?"),)
OTHER = (Message("user", "Which planet is farthest from the Sun?"),)


def test_a_repeated_prompt_skips_the_cache_and_only_it():
    seen: set[bytes] = set()
    first = chat_body(ASK, GenParams(max_tokens=8))
    assert whole_if_repeated(first, seen, cache_prompt=True) is first  # new: the cache serves its shared prefix
    assert whole_if_repeated(chat_body(OTHER, GenParams()), seen, cache_prompt=True).get("cache_prompt") is None
    again = whole_if_repeated(chat_body(ASK, GenParams(max_tokens=64, stop=("\n\n",))), seen, cache_prompt=True)
    assert again["cache_prompt"] is False and again["max_tokens"] == 64  # same prompt, other parameters: whole
    assert "cache_prompt" not in first  # the caller's body is not changed


def test_nothing_changes_with_the_cache_off():
    seen: set[bytes] = set()
    for _ in range(2):
        body = chat_body(ASK, GenParams())
        assert whole_if_repeated(body, seen, cache_prompt=False) is body
    assert not seen

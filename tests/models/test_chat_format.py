"""The chat-completions parser: prompt tokens are the whole prompt, cache reuse included."""

from robusteval.models.chat_format import parse_chat_completion


def _reply(usage: dict, timings: dict | None = None) -> dict:
    out = {"choices": [{"message": {"content": "The best answer is B"}, "finish_reason": "stop"}], "usage": usage}
    if timings is not None:
        out["timings"] = timings
    return out


def test_prompt_tokens_count_those_reused_from_the_prompt_cache():
    # a llama.cpp that reports only the evaluated tokens: 10 evaluated, 32 reused from its cache
    c = parse_chat_completion(_reply({"prompt_tokens": 10, "completion_tokens": 5}, {"prompt_n": 10, "cache_n": 32}))
    assert (c.prompt_tokens, c.completion_tokens) == (42, 5)


def test_prompt_tokens_as_reported_when_they_already_include_the_cache_or_there_are_no_timings():
    full = parse_chat_completion(_reply({"prompt_tokens": 42, "completion_tokens": 5}, {"prompt_n": 10, "cache_n": 32}))
    plain = parse_chat_completion(_reply({"prompt_tokens": 17, "completion_tokens": 5}))
    assert full.prompt_tokens == 42 and plain.prompt_tokens == 17

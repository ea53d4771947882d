"""The `openai` backend's HTTP contract, against a scripted aiohttp server on loopback: the headers it
sends, how each error status maps to a retryable / non-retryable / rate-limited BackendError, and the
clear UserErrors at start."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from robusteval.errors import BackendError, UserError
from robusteval.models import parse_model_spec
from robusteval.models.openai_compat import OpenAIBackend
from robusteval.types import GenParams, Message

REPLY = {"choices": [{"message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}],
         "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


async def _serve(replies: list[web.Response], models: web.Response | None = None, seen: list | None = None,
                 delay_s: float = 0.0):
    """A server whose /v1/models answers ``models`` (default: one model "m") and whose chat endpoint
    answers ``replies`` in order after ``delay_s``; every chat request's headers and body land in ``seen``."""

    async def list_models(_request):
        return models if models is not None else web.json_response({"data": [{"id": "m"}]})

    async def chat(request):
        if seen is not None:
            seen.append((dict(request.headers), await request.json()))
        await asyncio.sleep(delay_s)
        return replies.pop(0)

    app = web.Application()
    app.router.add_get("/v1/models", list_models)
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/v1"


def _backend(url: str, extra: str = "") -> OpenAIBackend:
    return OpenAIBackend.from_spec(parse_model_spec(f"openai:m?base_url={url}{extra}"))


async def _one_chat(replies, seen=None, extra="", models=None, delay_s=0.0):
    runner, url = await _serve(replies, models, seen, delay_s)
    backend = _backend(url, extra)
    try:
        await backend.start()
        return backend, await backend.chat((Message("user", "hi"),), GenParams(max_tokens=4))
    finally:
        await backend.close()
        await runner.cleanup()


def test_sends_key_org_and_json_body_and_parses_reply(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    seen: list = []
    backend, completion = asyncio.run(_one_chat([web.json_response(REPLY)], seen, "&api_key_env=MY_KEY"))
    headers, body = seen[0]
    assert headers["Authorization"] == "Bearer sk-test"
    assert headers["OpenAI-Organization"] == "org-1"
    assert headers["Content-Type"] == "application/json"
    assert body["model"] == "m" and body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["max_tokens"] == 4
    assert completion.text == "B"
    assert backend.fingerprint.endswith(":m:m")  # the id /models reported


def test_no_key_sent_to_a_loopback_server_without_one(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen: list = []
    asyncio.run(_one_chat([web.json_response(REPLY)], seen))
    assert "Authorization" not in seen[0][0]


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (503, True), (408, True), (400, False),
                                                   (404, False), (422, False)])
def test_error_status_maps_to_retryable_or_not(status, retryable):
    reply = web.json_response({"error": {"message": f"server says {status}"}}, status=status)
    with pytest.raises(BackendError) as caught:
        asyncio.run(_one_chat([reply]))
    assert caught.value.retryable is retryable
    assert f"HTTP {status}" in str(caught.value) and f"server says {status}" in str(caught.value)
    assert not caught.value.rate_limited


def test_429_is_rate_limited_with_retry_after():
    reply = web.json_response({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "1.5"})
    with pytest.raises(BackendError) as caught:
        asyncio.run(_one_chat([reply]))
    assert caught.value.rate_limited and caught.value.retry_after == 1.5 and "slow down" in str(caught.value)


def test_429_with_an_http_date_leaves_backoff_to_the_engine():
    reply = web.json_response({}, status=429, headers={"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"})
    with pytest.raises(BackendError) as caught:
        asyncio.run(_one_chat([reply]))
    assert caught.value.rate_limited and caught.value.retry_after is None


def test_rejected_key_mid_run_is_not_retried():
    with pytest.raises(BackendError) as caught:
        asyncio.run(_one_chat([web.json_response({"error": {"message": "bad key"}}, status=401)]))
    assert not caught.value.retryable and "API key" in str(caught.value)


def test_invalid_json_reply_is_a_retryable_backend_error():
    with pytest.raises(BackendError, match="invalid JSON") as caught:
        asyncio.run(_one_chat([web.Response(text="{not json", content_type="application/json")]))
    assert caught.value.retryable


def test_rejected_key_at_start_is_a_user_error():
    with pytest.raises(UserError, match="rejected the API key"):
        asyncio.run(_one_chat([], models=web.json_response({"error": {}}, status=401)))


def test_server_without_models_endpoint_is_fingerprinted_unlisted():
    backend, completion = asyncio.run(_one_chat([web.json_response(REPLY)], models=web.Response(status=404)))
    assert backend.fingerprint.endswith(":unlisted") and completion.text == "B"


def test_unreachable_server_is_a_user_error():
    async def start() -> None:
        backend = _backend("http://127.0.0.1:9/v1")  # discard port: nothing listens
        try:
            await backend.start()
        finally:
            await backend.close()

    with pytest.raises(UserError, match="cannot reach"):
        asyncio.run(start())


def test_timeout_is_a_retryable_backend_error():
    with pytest.raises(BackendError, match="timed out") as caught:
        asyncio.run(_one_chat([web.json_response(REPLY)], extra="&timeout=0.2", delay_s=2))
    assert caught.value.retryable


def test_proxy_from_the_environment_is_looked_up_once_and_honours_no_proxy(monkeypatch):
    from robusteval.models.openai_compat import _env_proxy

    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert _env_proxy("https://api.example.com/v1") == "http://proxy.example:3128"
    assert _env_proxy("https://internal.example/v1") is None
    assert _env_proxy("http://api.example.com/v1") is None  # no HTTP_PROXY set


def test_failed_start_leaves_no_open_session():
    async def start() -> OpenAIBackend:
        backend = _backend("http://127.0.0.1:9/v1")
        with pytest.raises(UserError):
            await backend.start()
        return backend

    assert asyncio.run(start())._session is None


def test_backend_does_not_cap_concurrency_below_the_engines_limit():
    """`--concurrency` may exceed the spec's max_concurrency; the backend must not queue the excess."""
    in_flight = peak = 0

    async def chat(_request):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.2)
        in_flight -= 1
        return web.json_response(REPLY)

    async def scenario() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        backend = _backend(f"http://127.0.0.1:{runner.addresses[0][1]}/v1", "&max_concurrency=2")
        try:
            await backend.start()
            await asyncio.gather(*(backend.chat((Message("user", f"q{i}"),), GenParams()) for i in range(6)))
        finally:
            await backend.close()
            await runner.cleanup()

    asyncio.run(scenario())
    assert peak == 6


# --- replies that are valid JSON but not a chat completion: a failed attempt, never an answer ---

def _reply(**changes):
    """REPLY with top-level fields replaced; ``choice``/``message`` dicts update those parts."""
    reply = {"choices": [{"message": {"role": "assistant", "content": "B"}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
    choice = reply["choices"][0]
    choice.update(changes.pop("choice", {}))
    choice["message"].update(changes.pop("message", {}))
    reply.update(changes)
    return reply


BAD_REPLIES = {
    "content a list of parts": _reply(message={"content": [{"type": "text", "text": "B"}]}),
    "content a number": _reply(message={"content": 42}),
    "content null": _reply(message={"content": None}),
    "a tool call": _reply(message={"content": None, "tool_calls": [{"id": "c", "type": "function"}]},
                          choice={"finish_reason": "tool_calls"}),
    "no choices": {"usage": {"prompt_tokens": 3, "completion_tokens": 1}},
    "empty choices": _reply(choices=[]),
    "choices not a list": _reply(choices={"0": {}}),
    "no message": {"choices": [{"finish_reason": "stop"}]},
    "message a string": {"choices": [{"message": "B", "finish_reason": "stop"}]},
    "finish_reason a number": _reply(choice={"finish_reason": 7}),
    "finish_reason content_filter": _reply(choice={"finish_reason": "content_filter"}),
    "usage a string": _reply(usage="many"),
    "usage count a string": _reply(usage={"prompt_tokens": "3", "completion_tokens": 1}),
    "usage count negative": _reply(usage={"prompt_tokens": 3, "completion_tokens": -1}),
    "usage count a float": _reply(usage={"prompt_tokens": 3.5, "completion_tokens": 1}),
    "logprob a string": _reply(choice={"logprobs": {"content": [{"token": "B", "logprob": "high"}]}}),
    "logprob NaN": _reply(choice={"logprobs": {"content": [{"token": "B", "logprob": float("nan")}]}}),
    "a JSON array": [_reply()],
}


@pytest.mark.parametrize("shape", list(BAD_REPLIES))
def test_a_reply_that_is_not_a_chat_completion_is_a_retryable_backend_error(shape):
    with pytest.raises(BackendError, match="bad response") as caught:
        asyncio.run(_one_chat([web.json_response(BAD_REPLIES[shape])]))
    assert caught.value.retryable and not caught.value.rate_limited


@pytest.mark.parametrize("usage", [None, {"prompt_tokens": None, "completion_tokens": None}, {}])
def test_usage_missing_or_null_is_zero_tokens_not_a_crash(usage):
    """The answer itself is intact; a server that does not count tokens is common (accounted as 0)."""
    _, completion = asyncio.run(_one_chat([web.json_response(_reply(usage=usage))]))
    assert (completion.text, completion.prompt_tokens, completion.completion_tokens) == ("B", 0, 0)
    assert isinstance(completion.prompt_tokens, int) and isinstance(completion.completion_tokens, int)


def test_an_unusual_finish_reason_string_and_empty_content_are_answers():
    _, completion = asyncio.run(_one_chat([web.json_response(_reply(message={"content": ""},
                                                                     choice={"finish_reason": "eos_token"}))]))
    assert (completion.text, completion.finish_reason) == ("", "eos_token")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-5", "soon", "", "1e999"])
def test_a_retry_after_that_is_not_a_finite_wait_is_left_to_the_engines_backoff(value):
    reply = web.json_response({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": value})
    with pytest.raises(BackendError) as caught:
        asyncio.run(_one_chat([reply]))
    assert caught.value.rate_limited and caught.value.retry_after is None


def test_retry_after_zero_is_kept():
    reply = web.json_response({}, status=429, headers={"Retry-After": "0"})
    with pytest.raises(BackendError) as caught:
        asyncio.run(_one_chat([reply]))
    assert caught.value.retry_after == 0.0


# --- secrets ---

def test_an_error_body_echoing_the_key_is_redacted(monkeypatch):
    key = "sk-hostile-0123456789abcdef"
    monkeypatch.setenv("MY_KEY", key)
    echo = web.json_response({"error": {"message": f"bad header Authorization: Bearer {key}; key={key}"}},
                             status=500)
    with pytest.raises(BackendError) as caught:
        asyncio.run(_one_chat([echo], extra="&api_key_env=MY_KEY"))
    assert key not in str(caught.value) and "0123456789abcdef" not in str(caught.value)
    assert "HTTP 500" in str(caught.value) and "Bearer [redacted]" in str(caught.value)


def test_a_key_the_server_never_saw_is_redacted_wherever_it_appears(monkeypatch):
    """Not only after "Bearer": the exact value the backend read from the environment."""
    key = "plainkeyvalue42"
    monkeypatch.setenv("MY_KEY", key)
    echo = web.json_response({"error": {"message": f"unknown credential {key}"}}, status=400)
    with pytest.raises(BackendError) as caught:
        asyncio.run(_one_chat([echo], extra="&api_key_env=MY_KEY"))
    assert key not in str(caught.value) and "unknown credential [redacted]" in str(caught.value)


# --- base URLs ---

@pytest.mark.parametrize(("url", "says"), [
    ("localhost:8080/v1", "http://localhost:8080/v1"),
    ("127.0.0.1:8080/v1", "does not start with http:// or https://"),
    ("ftp://example.com/v1", "does not start with http:// or https://"),
    ("http:///v1", "names no host"),
    ("http://localhost:80a/v1", "port is not a number"),
    ("https://user:sk-secret123456@example.com/v1", "must not hold credentials"),
    ("user:sk-secret123456@example.com/v1", "must not hold credentials"),
    ("https://example.com/v1?key=sk-secret123456", "'https://example.com/v1...' must not carry a query"),
    ("http://127.0.0.1:8080/v1?api_key=sk-secret123456", "must not carry a query, a fragment or a key"),
    ("http://127.0.0.1:8080/v1#sk-secret123456", "must not carry a query, a fragment or a key"),
])
def test_a_base_url_that_cannot_be_an_endpoint_says_what_is_wrong_with_it(monkeypatch, url, says):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError) as caught:
        OpenAIBackend.from_spec(parse_model_spec(f"openai:m?base_url={url}"))
    assert says in str(caught.value) and "API key" not in str(caught.value)
    assert "sk-secret123456" not in str(caught.value)


def test_openai_base_url_from_the_environment_is_checked_and_named(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8080/v1")
    with pytest.raises(UserError, match="OPENAI_BASE_URL 'localhost:8080/v1' does not start with http"):
        OpenAIBackend.from_spec(parse_model_spec("openai:m"))

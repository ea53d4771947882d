"""Defaults the llamacpp backend derives from the machine (no model is loaded here)."""

from __future__ import annotations

import os

import pytest

from robusteval.models import parse_model_spec
from robusteval.models.llamacpp import LlamaCppBackend, default_threads


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 2), (16, 16)])
def test_default_threads_are_the_granted_cores(monkeypatch, cores, threads):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)  # the host's count is not what this process may use
    assert default_threads() == threads
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp")).n_threads == threads


def test_default_threads_without_affinity_fall_back_to_cpu_count(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert default_threads() == 4


def test_explicit_threads_win(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp?n_threads=8")).n_threads == 8


def test_reproducible_settings_are_the_default():
    """One slot, no prompt cache, no flash attention: llama.cpp's numerics then depend neither on
    other requests nor on the thread count (tests/models/test_llamacpp_determinism.py checks the
    replies themselves)."""
    from robusteval.models.llamacpp import server_params

    backend = LlamaCppBackend.from_spec(parse_model_spec("llamacpp"))
    import xllamacpp as xl

    assert (backend.n_parallel, backend.cache_prompt, backend.flash_attn) == (1, False, False)
    assert backend.max_concurrency == 1
    params = server_params(backend.path, backend.n_parallel, backend.n_ctx_per_slot, 1,
                           cache_ram_mib=backend.cache_ram_mib, cache_prompt=backend.cache_prompt,
                           flash_attn=backend.flash_attn)
    assert (params.n_parallel, params.cache_prompt, params.cache_ram_mib) == (1, False, 0)
    assert params.flash_attn_type == xl.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED


def test_the_faster_setting_is_an_option():
    import xllamacpp as xl

    from robusteval.models.llamacpp import server_params

    backend = LlamaCppBackend.from_spec(parse_model_spec("llamacpp?n_parallel=4&cache_prompt=1&flash_attn=1"))
    assert (backend.n_parallel, backend.cache_prompt, backend.flash_attn, backend.max_concurrency) == (4, True, True, 4)
    params = server_params(backend.path, 4, 4096, 1, cache_ram_mib=backend.cache_ram_mib, cache_prompt=True,
                           flash_attn=True)
    assert (params.cache_prompt, params.cache_ram_mib, params.n_ctx) == (True, 1024, 4 * 4096)
    assert params.flash_attn_type == xl.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_AUTO
    explicit = LlamaCppBackend.from_spec(parse_model_spec("llamacpp?cache_prompt=true&cache_ram_mib=256"))
    assert explicit.cache_prompt and explicit.cache_ram_mib == 256


def test_a_bad_flag_is_one_clear_message():
    from robusteval.errors import UserError

    with pytest.raises(UserError, match=r"cache_prompt='maybe' must be 1 or 0"):
        LlamaCppBackend.from_spec(parse_model_spec("llamacpp?cache_prompt=maybe"))


def test_settings_that_change_the_numerics_are_in_the_fingerprint():
    """Answers stored under llama.cpp's faster, non-reproducible settings (or the old defaults) are
    never served to a run with the reproducible default, and the reverse."""
    import asyncio

    from robusteval.models import parse_model_spec
    from robusteval.models.llamacpp import LlamaCppBackend

    async def fingerprint(spec: str) -> str:
        backend = LlamaCppBackend.from_spec(parse_model_spec(spec))
        await backend.start()  # hashes the weights; the model itself loads on the first request
        await backend.close()
        return backend.fingerprint

    prints = [asyncio.run(fingerprint(spec)) for spec in
              ("llamacpp", "llamacpp?cache_prompt=1", "llamacpp?flash_attn=1", "llamacpp?n_parallel=4",
               "llamacpp?n_parallel=1&cache_prompt=0&flash_attn=0")]
    assert prints[0].endswith(":np1-cp0-fa0") and prints[0].startswith("llamacpp:SmolLM2-135M")
    assert len(set(prints[:4])) == 4 and prints[4] == prints[0]

"""Defaults the llamacpp backend derives from the machine (no model is loaded here)."""

from __future__ import annotations

import os

import pytest

from robusteval.models import parse_model_spec
from robusteval.models.llamacpp import LlamaCppBackend, default_threads


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 2), (16, 16)])
def test_default_threads_on_an_idle_machine_are_the_granted_cores(monkeypatch, cores, threads):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)  # the host's count is not what this process may use
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert default_threads() == threads
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp")).n_threads == threads


@pytest.mark.parametrize(("cores", "host", "load", "threads"), [
    (2, 2, 0.3, 2),  # an idle machine (this process's own start-up): both cores
    (2, 2, 0.6, 1),  # more than half a core busy: one thread, not two
    (2, 2, 1.0, 1),
    (2, 2, 14.0, 1),  # the load the issue saw: never fewer than 1
    (16, 16, 3.0, 13),
    (16, 16, 3.6, 12),
    (8, 8, 2.5, 6),  # 5.5 free: rounded to the nearest core
    (4, 64, 32.0, 2),  # 4 of 64 host cores granted: half the host busy, so half of them
])
def test_default_threads_are_the_free_cores(monkeypatch, cores, host, load, threads):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: host)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, 0.0, 0.0))
    assert default_threads() == threads
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp")).n_threads == threads
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp?n_threads=3")).n_threads == 3  # explicit wins


def test_default_threads_without_affinity_or_load_fall_back_to_cpu_count(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)

    def no_load():
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", no_load)
    assert default_threads() == 4
    monkeypatch.delattr(os, "getloadavg", raising=False)
    assert default_threads() == 4


def test_explicit_threads_win(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (7.5, 0.0, 0.0))
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp?n_threads=8")).n_threads == 8


def test_helper_models_cap_torch_threads_to_the_free_cores_and_never_raise_them(monkeypatch):
    torch = pytest.importorskip("torch")
    from robusteval.models.threads import cap_torch_threads

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(4)
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
        monkeypatch.setattr(os, "cpu_count", lambda: 4)
        monkeypatch.setattr(os, "getloadavg", lambda: (2.8, 0.0, 0.0))
        assert cap_torch_threads() == 1 and torch.get_num_threads() == 1
        monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
        assert cap_torch_threads() == 1  # a lower ceiling (OMP_NUM_THREADS, a user's setting) stays
    finally:
        torch.set_num_threads(before)


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

    with pytest.raises(UserError, match=r"cache_prompt='maybe' is not a yes or no; write cache_prompt=1"):
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

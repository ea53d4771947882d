"""Defaults the llamacpp backend derives from the machine (no model is loaded here)."""

from __future__ import annotations

import os

import pytest

from robusteval.models import parse_model_spec, threads
from robusteval.models.llamacpp import LlamaCppBackend, default_threads


def _machine(monkeypatch, cores: int, host: int, load: float | None, busy: float | None = None,
             quota: float | None = None) -> None:
    """This process granted ``cores`` of ``host``, the given load average, busy cores over the window
    and cgroup CPU quota: the readings are injected, so no test depends on the machine's real load,
    its cgroup or on time."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: host)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, 0.0, 0.0))
    monkeypatch.setattr(threads, "busy_cores", lambda cpus, window=threads.WINDOW_S: busy)
    monkeypatch.setattr(threads, "cpu_quota", lambda root=None: quota)


@pytest.mark.parametrize(("cores", "expected"), [(1, 1), (2, 2), (16, 16)])
def test_default_threads_on_an_idle_machine_are_the_granted_cores(monkeypatch, cores, expected):
    _machine(monkeypatch, cores, 64, 0.0, 0.0)  # the host's count is not what this process may use
    assert default_threads() == expected
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp")).n_threads == expected


@pytest.mark.parametrize(("cores", "host", "load", "busy", "expected"), [
    (2, 2, 0.3, 0.0, 2),  # an idle machine (this process's own start-up): both cores
    (2, 2, 0.6, 0.0, 1),  # more than half a core busy over the last minute: one thread, not two
    (2, 2, 14.0, 2.0, 1),  # the load issue 28 saw: never fewer than 1
    (2, 2, 0.27, 1.0, 1),  # a busy loop started a moment ago: the load average missed it, the window did not
    (16, 16, 3.0, 1.0, 13),
    (8, 8, 2.5, None, 6),  # no /proc/stat (macOS): the load average alone, 5.5 free rounded
    (4, 64, 32.0, 0.5, 2),  # 4 of 64 host cores granted: half the host busy, so half of them
])
def test_default_threads_are_the_free_cores(monkeypatch, cores, host, load, busy, expected):
    _machine(monkeypatch, cores, host, load, busy)
    assert default_threads() == expected
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp")).n_threads == expected
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp?n_threads=3")).n_threads == 3  # explicit wins


@pytest.mark.parametrize(("quota", "expected"), [(2.0, 2), (1.5, 1), (None, 16), (32.0, 16)])
def test_default_threads_stay_within_a_container_cpu_quota(monkeypatch, quota, expected):
    """Docker ``--cpus 2`` leaves all 16 cores in the affinity: the quota, not the affinity, decides."""
    _machine(monkeypatch, 16, 16, 0.0, 0.0, quota)
    assert default_threads() == expected
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp")).n_threads == expected


def test_an_explicit_thread_count_does_not_measure_the_machine(monkeypatch):
    """``?n_threads=N`` wins without the window's wait (the default was computed and thrown away)."""
    def watched(cpus, window=threads.WINDOW_S):
        raise AssertionError("measured the cores although n_threads was given")

    monkeypatch.setattr(threads, "busy_cores", watched)
    assert LlamaCppBackend.from_spec(parse_model_spec("llamacpp?n_threads=8")).n_threads == 8


def test_default_threads_without_affinity_load_proc_stat_or_cgroup_fall_back_to_cpu_count(monkeypatch, tmp_path):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(threads, "PROC_STAT", tmp_path / "absent")  # as on macOS
    monkeypatch.setattr(threads, "CGROUP_ROOT", tmp_path / "absent")

    def no_load():
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", no_load)
    assert default_threads() == 4
    monkeypatch.delattr(os, "getloadavg", raising=False)
    assert default_threads() == 4


def test_helper_models_cap_torch_threads_to_the_free_cores_and_never_raise_them(monkeypatch):
    torch = pytest.importorskip("torch")
    from robusteval.models.threads import cap_torch_threads

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(4)
        _machine(monkeypatch, 4, 4, 2.8, 1.0)
        assert cap_torch_threads() == 1 and torch.get_num_threads() == 1
        _machine(monkeypatch, 4, 4, 0.0, 0.0)
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

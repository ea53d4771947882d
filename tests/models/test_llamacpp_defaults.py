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

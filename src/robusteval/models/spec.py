"""Model spec strings, parsed in one place: ``kind:name?key=value&key=value``.

Examples: ``llamacpp`` (the embedded default), ``llamacpp:/path/model.gguf?n_parallel=4``,
``openai:gpt-4o-mini``, ``openai:smollm?base_url=http://127.0.0.1:8080/v1&api_key_env=MY_KEY``,
``hf:/path/to/model?device=cpu``.

A pool of replicas of one model (docs/scale.md): several base URLs, comma-separated or as a repeated
option, ``openai:NAME?base_url=http://a:8000/v1,http://b:8000/v1`` or
``openai:NAME?base_url=http://a:8000/v1&base_url=http://b:8000/v1`` (both parse to the same spec).
Through the OpenAI Batch API at half the price: ``openai:NAME?batch=1`` (`models.openai_batch`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar, overload
from urllib.parse import parse_qsl, urlencode

from robusteval.errors import UserError
from robusteval.models.base import Backend
from robusteval.models.batch_file import name_problem
from robusteval.ranges import FINITE, Range, check
from robusteval.redact import redact

KINDS = ("llamacpp", "openai", "hf", "batchfile")
DEFAULT_SPEC = "llamacpp"
# The options each backend reads in its ``from_spec``; any other is a mistake (a typo would
# otherwise be ignored in silence). A backend that reads a new option lists it here.
OPTIONS = {
    "llamacpp": ("n_parallel", "n_ctx", "n_threads", "cache_ram_mib", "cache_prompt", "flash_attn"),
    "openai": ("base_url", "api_key_env", "max_concurrency", "timeout", "batch", "batch_window", "batch_poll",
               "context_window"),
    "hf": ("device", "dtype", "max_concurrency", "batch_size"),
    "batchfile": (),
}
# The numeric options' types and declared ranges (`ranges.Range`), checked when a spec is parsed,
# before any backend is built: ``n_parallel=0`` or ``timeout=nan`` is one message naming the option
# and its range, never a failure deep in a thread pool or a run that waits for ever.
NUMERIC_OPTIONS: dict[str, tuple[type[int] | type[float], Range]] = {
    "n_parallel": (int, Range(1, 256)),
    "n_ctx": (int, Range(16, 2**22)),  # tokens per slot
    "context_window": (int, Range(16, 2**24)),  # tokens an OpenAI-compatible server's model holds
    "n_threads": (int, Range(1, 1024)),
    "cache_ram_mib": (int, Range(-1, 2**22, hint="-1 for the default")),
    "max_concurrency": (int, Range(1, 10**5)),
    "batch_size": (int, Range(1, 4096)),  # requests per call to an hf model; or ``auto`` (`AUTO_OPTIONS`)
    "timeout": (float, Range(0, 7 * 86400, low_open=True)),  # seconds
    "batch_window": (float, Range(0, 86400)),  # seconds a batch waits for more requests
    "batch_poll": (float, Range(0, 86400, low_open=True)),  # seconds between status requests
}
# Yes/no options: 1/0, true/false, yes/no, on/off (checked at parse as the numbers are).
YES, NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
FLAG_OPTIONS = ("batch", "cache_prompt", "flash_attn")
# Numeric options that may also be ``auto`` (the backend chooses).
AUTO_OPTIONS = ("batch_size",)
# The options a helper model (a rewriter, judge, oracle, interlocutor) of another name takes from a
# model under test of its kind when it does not set them: how llama.cpp or transformers use this
# machine (threads, slots, device), which the user chose for the machine, not for one model. A helper
# with the very name of a model under test takes all of that model's options (the same server too).
MACHINE_OPTIONS = {"llamacpp": OPTIONS["llamacpp"], "openai": (), "hf": ("device", "dtype")}
# Options that may list several values (comma-separated or repeated): the replicas of a pool.
POOL_OPTIONS = ("base_url",)
# An option that would carry a secret: the spec is written into results.json and the report.
SECRET_OPTION = re.compile(r"key|token|secret|password|passwd|auth|credential", re.IGNORECASE)


@dataclass(frozen=True)
class ModelSpec:
    kind: str
    name: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """A short human name for tables and results (never contains secrets: keys live in env)."""
        return f"{self.kind}:{self.name}" if self.name else self.kind

    @overload
    def option(self, key: str) -> str | None: ...

    @overload
    def option(self, key: str, default: str) -> str: ...

    def option(self, key: str, default: str | None = None) -> str | None:
        return self.options.get(key, default)

    def float_option(self, key: str, default: float) -> float:
        return _number(self, key, default, float)

    def int_option(self, key: str, default: int) -> int:
        return _number(self, key, default, int)


def spec_text(spec: ModelSpec) -> str:
    """The spec as text again (``parse_model_spec(spec_text(s)) == s``): what results.json records."""
    query = urlencode(spec.options, safe=":/,")
    return spec.label + (f"?{query}" if query else "")


def inherit_options(helper: ModelSpec, under_test: Sequence[ModelSpec]) -> ModelSpec:
    """``helper`` with the options it leaves unset taken from the first model under test of its kind.

    Why: ``--model 'llamacpp?n_threads=1'`` says how this machine should run llama.cpp; a rewriter or
    judge spelled plain ``llamacpp`` (every default) would otherwise start a second copy with every
    core as threads, beside the first, and crawl on a busy machine. An option the helper sets itself
    wins. A model under test is never changed (its spec is the user's), nor a helper of another kind
    (its options mean other things)."""
    if helper in under_test:
        return helper
    for parent in under_test:
        if parent.kind != helper.kind:
            continue
        keys = OPTIONS[helper.kind] if parent.name == helper.name else MACHINE_OPTIONS.get(helper.kind, ())
        taken = {k: v for k, v in parent.options.items() if k in keys and k not in helper.options}
        return ModelSpec(helper.kind, helper.name, {**taken, **helper.options}) if taken else helper
    return helper


Number = TypeVar("Number", int, float)


def _number(spec: ModelSpec, key: str, default: Number, cast: type[Number]) -> Number:
    raw = spec.options.get(key)
    return default if raw is None else _decoded(spec.label, key, raw, cast)


def _decoded(label: str, key: str, raw: str, cast: type[Number]) -> Number:
    """The value of numeric option ``key``, checked against its declared range."""
    what = ("an integer" if cast is int else "a number") + (" or auto" if key in AUTO_OPTIONS else "")
    try:
        value = cast(raw.strip())
    except ValueError:
        raise UserError(f"--model {label!r}: option {key}={raw!r} is not {what}") from None
    declared = NUMERIC_OPTIONS[key][1] if key in NUMERIC_OPTIONS else FINITE
    check(f"--model {label!r}: option {key}", value, declared, sep="=")
    return value


def parse_model_spec(text: str | None) -> ModelSpec:
    """Parse ``kind:name?k=v&k=v``; an empty spec means the embedded default model."""
    text = (text or "").strip() or DEFAULT_SPEC
    head, _, query = text.partition("?")
    kind, _, name = head.partition(":")
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise UserError(
            f"unknown model kind {kind!r} in --model {text!r}; use one of {', '.join(KINDS)} "
            "(e.g. llamacpp, llamacpp:model.gguf, openai:gpt-4o-mini?base_url=..., hf:path)"
        )
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise UserError(f"--model {redact(text)!r}: options after '?' must look like key=value&key=value") from None
    if kind in ("openai", "hf", "batchfile") and not name:
        raise UserError(f"--model {redact(text)!r}: {kind} needs a model name, e.g. {kind}:NAME")
    if kind == "batchfile" and (problem := name_problem(name)):
        raise UserError(f"--model batchfile:NAME: the name {problem}")
    _check_options(kind, head, dict(pairs))
    spec = ModelSpec(kind=kind, name=name, options=_fold_repeats(head, pairs))
    for key, value in spec.options.items():
        if key in NUMERIC_OPTIONS and not (key in AUTO_OPTIONS and value.strip().lower() == "auto"):
            _decoded(spec.label, key, value, NUMERIC_OPTIONS[key][0])
        if key in FLAG_OPTIONS and value.strip().lower() not in YES + NO:
            raise UserError(f"--model {spec.label!r}: option {key}={value!r} is not a yes or no; write {key}=1 or "
                            f"{key}=0")
    if "base_url" in spec.options:
        from robusteval.models.openai_compat import checked_host

        for url in spec.options["base_url"].split(","):
            if url.strip():  # an empty one (a stray comma) is the pool's message
                checked_host(url.strip(), "base_url in --model")
    return spec


def _fold_repeats(head: str, pairs: list[tuple[str, str]]) -> dict[str, str]:
    """The options as a dict; a repeated ``base_url`` joins the pool's list (the comma-separated form,
    so both spellings are one spec), any other repeated option is a mistake (which one was meant?)."""
    options: dict[str, str] = {}
    for key, value in pairs:
        if key not in options:
            options[key] = value
        elif key in POOL_OPTIONS:
            options[key] += "," + value
        else:
            raise UserError(f"--model {head!r}: option {key!r} is given twice; give it once")
    return options


def _check_options(kind: str, head: str, options: dict[str, str]) -> None:
    """Refuse an option the backend does not read, and above all a secret in the spec."""
    valid = OPTIONS[kind]
    for key in options:
        if key in valid:
            continue
        if SECRET_OPTION.search(key) and "api_key_env" in valid:
            raise UserError(
                f"--model {head!r}: option {key!r} would put a secret into the model spec, which is written into "
                f"results.json and the report; put the key in an environment variable instead and name the "
                f"variable with api_key_env=VAR (e.g. export MY_KEY=...; --model '{head}?api_key_env=MY_KEY')")
        raise UserError(f"--model {head!r}: unknown option {redact(key)!r} for {kind}; "
                        f"valid options: {', '.join(valid) or 'none'}")


def load_backend(spec: ModelSpec) -> Backend:
    """Build (not start) the backend a spec names; heavy imports happen only for the kind used."""
    if spec.kind == "llamacpp":
        from robusteval.models.llamacpp import LlamaCppBackend

        return LlamaCppBackend.from_spec(spec)
    if spec.kind == "openai":
        from robusteval.models.openai_batch import OpenAIBatchBackend, batch_requested
        from robusteval.models.openai_compat import OpenAIBackend

        if batch_requested(spec):
            return OpenAIBatchBackend.from_spec(spec)
        if "," in spec.option("base_url", ""):
            from robusteval.models.pool import PoolBackend

            return PoolBackend.from_spec(spec)

        return OpenAIBackend.from_spec(spec)
    if spec.kind == "batchfile":
        from robusteval.models.batch_file import BatchFileBackend

        return BatchFileBackend(spec.name)
    from robusteval.models.hf import HFBackend

    return HFBackend.from_spec(spec)

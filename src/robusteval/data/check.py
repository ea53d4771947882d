"""``robusteval data check FILE|DATASET --suite mcq``: the data audit of a dataset, asking no model.

It loads the dataset exactly as a run of the suite would and prints what a run would print under
"data": rows read and used, rows left out by reason, quirks counted (printed letters out of order,
repeated option texts, repeated questions...) and where the gold comes from. Use it before a long
run, or on a new release of a benchmark.
"""

from __future__ import annotations

from pathlib import Path

from robusteval.data.audit import DataAudit
from robusteval.data.ids import DEFAULT_ID_RULE
from robusteval.errors import UserError
from robusteval.suite_specs import SUITES


def check_mcq(source: str, audit: DataAudit, duplicates: str = "drop-both",
              duplicate_ids: str = DEFAULT_ID_RULE) -> None:
    """mcq's loader (`SuiteSpec.checker`): a known dataset or a JSONL/CSV file, audited."""
    from robusteval.data import mcq

    if source not in mcq.known_sources() and not Path(source).expanduser().is_file():
        raise UserError(f"data check {source!r}: no such file, and not a known mcq dataset "
                        f"({', '.join(mcq.known_sources())}); give a JSONL/CSV file or one of those names")
    mcq.load_items(source, audit=audit, duplicates=duplicates, duplicate_ids=duplicate_ids)


def checked_suites() -> list[str]:
    """The suites whose `SuiteSpec` names a loader that records into the audit."""
    return [name for name, spec in SUITES.items() if spec.checker is not None]


def check(source: str, suite: str, duplicates: str = "drop-both", duplicate_ids: str = DEFAULT_ID_RULE) -> DataAudit:
    """The audit of ``source`` as ``suite`` would load it (``duplicates``: mcq's rule for rows that
    repeat a question with another answer; ``duplicate_ids``: for two rows with one id, `data.ids`)."""
    checker = SUITES[suite].checker_of() if suite in SUITES else None
    if checker is None:
        raise UserError(f"data check --suite {suite}: not supported; supported: {', '.join(checked_suites())}")
    audit = DataAudit()
    checker(source, audit, duplicates, duplicate_ids)
    return audit

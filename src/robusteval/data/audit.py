"""What a run read from its data, and everything it left out, repaired or assumed on the way.

Real releases carry quirks (null fields beside real ones, printed option letters out of order,
repeated option texts, rows with one option, a language known only from the file name, contexts
longer than the model's window). A loader that drops, repairs or guesses anything says so here,
with a count and a few examples; the run records the audit in results.json under ``data``, prints
it and shows it in the report, and ``robusteval data check`` prints it without asking a model.
Nothing is dropped or guessed without a line here.

A source read from a file records the sha256 of the file's bytes (``sha256``): what a run read is
identified by its content, not its name, so ``merge`` refuses shards that read different contents
of one file. What concerns the run rather than one source (``--shard``'s share of the items) is a
note of the whole audit (`DataAudit.notes`), never a source of its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from robusteval.files import file_sha256, names_a_file

MAX_EXAMPLES = 5  # where-strings kept per reason: enough to find the rows, not a copy of the file


@dataclass
class SourceAudit:
    """One data source (a file, a named dataset, a questionnaire): rows in, rows out, and why.

    ``left_out`` counts rows not used, by reason; ``anomalies`` counts rows used but odd (kept as
    published, or repaired: the reason text says which); ``assumed`` records guesses such as a
    language inferred from a file name (key -> "value (how)").
    """

    source: str
    rows_read: int = 0
    rows_used: int = 0  # after left-outs and any --limit sample
    left_out: Counter[str] = field(default_factory=Counter)
    anomalies: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    assumed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sha256: str = ""  # of the file's bytes, when the source is a file ("" for a named dataset)
    file: str = ""  # that file's path, as given

    def leave_out(self, reason: str, where: str = "") -> None:
        """Count a row not used, with where it is (``file:line``)."""
        self.left_out[reason] += 1
        self._example(reason, where)

    def anomaly(self, kind: str, where: str = "") -> None:
        """Count a row used despite something odd (what was done belongs in ``kind``)."""
        self.anomalies[kind] += 1
        self._example(kind, where)

    def assume(self, key: str, value: str) -> None:
        self.assumed[key] = value

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _example(self, reason: str, where: str) -> None:
        if where:
            kept = self.examples.setdefault(reason, [])
            if len(kept) < MAX_EXAMPLES:
                kept.append(where)

    def as_dict(self) -> dict:
        return {"source": self.source, "rows_read": self.rows_read, "rows_used": self.rows_used,
                "left_out": dict(self.left_out), "anomalies": dict(self.anomalies),
                "examples": self.examples, "assumed": self.assumed, "notes": self.notes,
                **({"sha256": self.sha256, "file": self.file} if self.sha256 else {})}

    @classmethod
    def from_dict(cls, d: dict) -> SourceAudit:
        return cls(source=str(d.get("source", "?")), rows_read=int(d.get("rows_read", 0)),
                   rows_used=int(d.get("rows_used", 0)), left_out=Counter(d.get("left_out", {})),
                   anomalies=Counter(d.get("anomalies", {})), examples=dict(d.get("examples", {})),
                   assumed=dict(d.get("assumed", {})), notes=list(d.get("notes", [])),
                   sha256=str(d.get("sha256") or ""), file=str(d.get("file") or ""))

    def lines(self) -> list[str]:
        """Plain-text lines for the terminal, the report and ``data check`` (no markup)."""
        out = [f"{self.source}: {self.rows_read} rows read, {self.rows_used} used"]
        for reason, n in sorted(self.left_out.items(), key=lambda kv: -kv[1]):
            out.append(f"  left out {n}: {reason}{self._where(reason)}")
        for kind, n in sorted(self.anomalies.items(), key=lambda kv: -kv[1]):
            out.append(f"  {n} x {kind}{self._where(kind)}")
        out += [f"  assumed {key}: {value}" for key, value in self.assumed.items()]
        out += [f"  note: {text}" for text in self.notes]
        return out

    def _where(self, reason: str) -> str:
        kept = self.examples.get(reason)
        if not kept:
            return ""
        n = self.left_out.get(reason, 0) or self.anomalies.get(reason, 0)
        more = f", +{n - len(kept)} more" if n > len(kept) else ""
        return f" (e.g. {', '.join(kept)}{more})"


@dataclass
class DataAudit:
    """The audit of every source one run (or one ``data check``) read."""

    sources: list[SourceAudit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # about the run's items, not one source (--shard)

    def source(self, name: str, file: str | Path | None = None) -> SourceAudit:
        """The audit of ``name``, created on first use. It records the sha256 of ``file``, or of
        ``name`` itself where that names a file (the data a run read, identified by content)."""
        for s in self.sources:
            if s.source == name:
                return s
        s = SourceAudit(name)
        path = str(file if file is not None else name)
        if names_a_file(path):
            s.sha256, s.file = file_sha256(path), path
        self.sources.append(s)
        return s

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def __bool__(self) -> bool:
        return bool(self.sources or self.notes)

    def as_dict(self) -> dict:
        return {"sources": [s.as_dict() for s in self.sources], **({"notes": self.notes} if self.notes else {})}

    @classmethod
    def from_dict(cls, d: dict | None) -> DataAudit:
        return cls([SourceAudit.from_dict(s) for s in (d or {}).get("sources", [])],
                   [str(n) for n in (d or {}).get("notes", [])])

    def lines(self) -> list[str]:
        return [line for s in self.sources for line in s.lines()] + [f"note: {text}" for text in self.notes]

    def has_findings(self) -> bool:
        """Whether anything was left out, odd or assumed (worth printing even with --quiet)."""
        return bool(self.notes) or any(s.left_out or s.anomalies or s.assumed or s.notes for s in self.sources)

    def hashes(self) -> dict[str, tuple[str, str]]:
        """source -> (its file, the sha256 of the file's bytes), for the sources read from a file."""
        return {s.source: (s.file or s.source, s.sha256) for s in self.sources if s.sha256}

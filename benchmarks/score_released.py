"""How long ``robusteval score`` takes on MMLU-Pro's released answers (12,032 replies per file), and
how much of each stage: reading the zip and placing the replies, reading and scoring them, the
metrics, the files. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/score_released.py [ZIP ...] [--reader mmlu-pro]

Default: the three files in ../shared/realdata/mmlu-pro/outputs/, each scored on its own.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from robusteval.data.audit import DataAudit
from robusteval.readers import get_reader
from robusteval.scoring.flow import ScoreRequest, _reply_sample, score_files
from robusteval.scoring.replies import read_mmlu_pro

OUTPUTS = Path(__file__).resolve().parents[2] / "shared" / "realdata" / "mmlu-pro" / "outputs"


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("zips", nargs="*", type=Path)
    parser.add_argument("--reader", default="mmlu-pro")
    args = parser.parse_args()
    zips = args.zips or sorted(OUTPUTS.glob("model_outputs_*.zip"))
    reader = get_reader(args.reader)
    for path in zips:
        wall, c = time.perf_counter(), cpu()
        placed = list(read_mmlu_pro(path, DataAudit(), None))
        t_read = time.perf_counter() - wall
        t0 = time.perf_counter()
        samples = [_reply_sample(p, reader) for p in placed]
        t_score = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            score_files(ScoreRequest(paths=(str(path),), reader=args.reader, out_dir=out, run_id="bench"))
            t_all = time.perf_counter() - t0
        valid = sum(s.status == "ok" for s in samples)
        print(f"{path.name}: {len(placed)} replies ({valid} read); zip + items {t_read:.2f} s, reading "
              f"{t_score:.2f} s, whole score (results.json + samples.jsonl, no report) {t_all:.2f} s; "
              f"CPU {cpu() - c:.2f} s in all")


if __name__ == "__main__":
    main()

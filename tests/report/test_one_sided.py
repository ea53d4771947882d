"""A hallucination detector that always picks the same position is flagged (issue 34: its F1 hid it)."""

from __future__ import annotations

from robusteval.estimate import Estimate
from robusteval.report.terminal_hallucination import summary_markdown
from robusteval.results.hallucination import DetectorMetrics, HallucinationMetrics, PositionBias, StepMetrics, one_sided


def _detector(chose_first: float | None, samples: int = 20, invalid: int = 0) -> DetectorMetrics:
    return DetectorMetrics(f1=Estimate(0.667), samples=samples, invalid=invalid,
                           position_bias=PositionBias(chose_first=Estimate(chose_first)), detector="m", prompt="p")


def test_a_detector_that_always_chose_one_position_is_flagged():
    step = StepMetrics(detectors={"first": _detector(1.0), "second": _detector(0.0), "fair": _detector(0.55),
                                  "few": _detector(1.0, samples=5, invalid=2), "none": _detector(None)})
    warnings = one_sided("detection", step)
    assert len(warnings) == 2
    assert warnings[0].startswith("detection: first chose the hypothesis shown first in 100% of its 20 valid replies")
    assert "F1 0.667 measures where the hallucination was shown" in warnings[0]
    assert warnings[1].startswith("detection: second chose the hypothesis shown second in 100%")
    markdown = summary_markdown(HallucinationMetrics(detection=step))
    assert markdown.count("**warning**") == 2

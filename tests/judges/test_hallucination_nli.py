import pytest

from robusteval.judges.hallucination_nli import entailed, nli_detect


@pytest.mark.parametrize(("p1", "p2", "expected"), [
    (0.9, 0.2, "hyp2"),   # one entailed, one not -> the not-entailed one
    (0.3, 0.7, "hyp1"),
    (0.9, 0.6, "hyp2"),   # both entailed -> the lower entailment
    (0.55, 0.95, "hyp1"),
    (0.1, 0.4, "hyp1"),   # both not entailed -> the higher non-entailment (0.9 > 0.6)
    (0.45, 0.05, "hyp2"),
    (0.5, 0.49, "hyp2"),  # 0.5 counts as entailed
    (0.7, 0.7, "hyp2"),   # an exact tie goes to hyp2
    (0.2, 0.2, "hyp2"),
])
def test_decision_rules(p1, p2, expected):
    assert nli_detect(p1, p2) == expected


def test_entailed_threshold():
    assert entailed(0.5) and not entailed(0.4999)

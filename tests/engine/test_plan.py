"""A dry run's `Plan`: every distinct request tallied, a seeded sample kept, the requests themselves
only when asked for."""

from robusteval.engine.plan import Plan
from robusteval.types import GenParams, Message, Request


def _request(i: int, max_tokens: int = 16) -> Request:
    return Request((Message("user", "q" * (i % 7 + 1)),), GenParams(max_tokens=max_tokens))


def test_a_repeated_key_is_planned_once():
    plan = Plan(keep_requests=True)
    plan.add("a", _request(1))
    plan.add("a", _request(1))
    plan.add("b", _request(2, max_tokens=8))
    assert len(plan) == 2 and list(plan.requests) == ["a", "b"]
    assert list(plan.chars) == [2, 3] and list(plan.messages) == [1, 1] and list(plan.max_tokens) == [16, 8]


def test_up_to_its_size_the_sample_is_every_request_in_order():
    plan = Plan(keep_requests=False, sample_size=10)
    requests = [_request(i) for i in range(10)]
    for i, r in enumerate(requests):
        plan.add(str(i), r)
    assert plan.complete_sample and plan.sample == requests and plan.requests == {}


def test_above_its_size_the_sample_is_seeded_and_spread_over_the_whole_plan():
    def sampled(seed: int) -> list[int]:
        plan = Plan(keep_requests=False, sample_size=100, seed=seed)
        for i in range(5000):
            plan.add(str(i), Request((Message("user", str(i)),), GenParams()))
        assert len(plan) == 5000 and len(plan.sample) == 100 and not plan.complete_sample
        return sorted(int(r.messages[0].content) for r in plan.sample)

    first = sampled(0)
    assert first == sampled(0) and first != sampled(1)
    assert len(set(first)) == 100
    late = sum(i >= 2500 for i in first)  # a uniform sample: about half from the second half
    assert 30 <= late <= 70

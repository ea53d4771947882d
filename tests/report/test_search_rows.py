from robusteval.metrics.stats import Estimate
from robusteval.report.search import rows, shared_lines
from robusteval.results.search import FoundVariant, SearchResult

INSTRUCTION = "Answer the following multiple-choice question. End your reply with the sentence 'The answer is X.'"


def test_the_instruction_every_variant_begins_with_is_not_what_the_text_column_shows():
    best = FoundVariant("f11", Estimate(0.5), f"{INSTRUCTION}\n\nQuestion: {{question}}\nOptions: (a) ...")
    worst = FoundVariant("f16", Estimate(0.1), f"{INSTRUCTION}\n\nQUESTION:: {{question}} -- I) ...")
    r = SearchResult("halving", best, worst, Estimate(0.4), calls=10, cells=40, share=0.25)
    shown = rows(r, None)
    assert shown[0][4].startswith("…⏎Question: {question}") and shown[1][4].startswith("…⏎QUESTION:: {question}")
    assert INSTRUCTION[:20] not in shown[0][4] + shown[1][4]


def test_shared_lines_keeps_at_least_one_line_of_each_text():
    assert shared_lines(["a\nb", "a\nc"]) == 1
    assert shared_lines(["a\nb", "a\nb"]) == 1  # identical texts keep their last line
    assert shared_lines(["a", "b"]) == 0 and shared_lines([]) == 0

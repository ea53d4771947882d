import pytest

from robusteval.readers.hallucigen import read_detection, read_joint, read_sentence, read_separate, read_yes_no

SOURCE = "The shop opens at eight."


def test_joint_clean_and_wrapped():
    g = read_joint("hyp+: The shop opens its doors at eight.\nhyp-: The shop opens its doors at ten.", SOURCE)
    assert (g.status, g.hyp_plus, g.hyp_minus) == ("ok", "The shop opens its doors at eight.",
                                                    "The shop opens its doors at ten.")
    messy = ("Sure!\n\n**Hyp+:** \"At eight, the shop opens.\"\n- **HYP-** : 'At nine, the shop opens.'\n"
             "I hope this helps.")
    g = read_joint(messy, SOURCE)
    assert (g.status, g.hyp_plus, g.hyp_minus) == ("ok", "At eight, the shop opens.", "At nine, the shop opens.")
    # the label alone on its line takes the next non-empty line
    g = read_joint("hyp+:\n\nThe shop opens at 8.\nhyp−:\nThe shop closes at 8.", SOURCE)
    assert (g.status, g.hyp_plus, g.hyp_minus) == ("ok", "The shop opens at 8.", "The shop closes at 8.")


@pytest.mark.parametrize(("reply", "reason"), [
    ("The shop opens at eight.\nThe shop opens at ten.", "no hyp+"),
    ("hyp+: The shop opens at eight o'clock.", "no hyp-"),
    ("hyp+: A.\nhyp-: B.\nhyp+: C.", "hyp+ given 2 times"),
    ("hyp+: The shop opens at ten!\nhyp-: the shop opens at ten", "hyp+ and hyp- are the same"),
    ("hyp+: The shop opens its doors at eight.\nhyp-: The shop opens at eight.", "hyp- copies the source"),
    ("hyp+:\nhyp-: The shop opens at ten.", "no hyp+"),  # an empty label does not swallow the next label
    ("", "no hyp+"),
])
def test_joint_invalid(reply, reason):
    g = read_joint(reply, SOURCE)
    assert (g.status, g.reason) == ("invalid", reason)


def test_joint_failed():
    assert read_joint(None, SOURCE).status == "failed"


@pytest.mark.parametrize(("reply", "sentence"), [
    ("The shop opens its doors at eight.", "The shop opens its doors at eight."),
    ('  "The shop opens its doors at eight."  ', "The shop opens its doors at eight."),
    ("Here is the paraphrase:\nAt eight, the shop opens.", "At eight, the shop opens."),
    ("Reply (English): At eight, the shop opens.", "At eight, the shop opens."),
    ("Translation: Der Laden öffnet um acht.", "Der Laden öffnet um acht."),
    ("**Paraphrase:** At eight the shop opens.", "At eight the shop opens."),
])
def test_sentence(reply, sentence):
    assert read_sentence(reply) == (sentence, None)


def test_sentence_invalid():
    assert (read_sentence("At eight.\n\nIn this paraphrase I kept the meaning.")
            == (None, "2 lines instead of one sentence"))
    assert read_sentence("   \n ") == (None, "empty reply")
    assert read_sentence("Translation:") == (None, "empty reply")
    assert read_sentence(None) == (None, "failed")


def test_separate():
    g = read_separate("At eight, the shop opens.", "At ten, the shop opens.", SOURCE)
    assert (g.status, g.hyp_plus, g.hyp_minus) == ("ok", "At eight, the shop opens.", "At ten, the shop opens.")
    g = read_separate("At eight, the shop opens.", "Line one.\nLine two.", SOURCE)
    assert (g.status, g.reason) == ("invalid", "hyp-: 2 lines instead of one sentence")
    g = read_separate("", "At ten.", SOURCE)
    assert (g.status, g.reason) == ("invalid", "hyp+: empty reply")
    assert read_separate(None, "x", SOURCE).status == "failed"


@pytest.mark.parametrize(("reply", "position"), [
    ("hyp2", 2),
    ("Hyp1", 1),
    ("**hyp2**", 2),
    ("Answer: hyp1", 1),
    ("The answer is: Hypothesis 2", 2),
    ("hyp1. It changes the number.", 1),
    ("The source is hyp1, which is a hallucinated paraphrase.", 1),
    ("Looking at hyp1 and hyp2 ... Answer: hyp2", 2),  # the label after the last answer mark wins
    ("hyp 2", 2),
    ("`hyp_1`", 1),
    ("hyp2: The mural was painted by Anna.", 2),  # an echo of one line only: its label is the only one named
])
def test_detection_ok(reply, position):
    d = read_detection(reply)
    assert (d.position, d.status) == (position, "ok")


@pytest.mark.parametrize(("reply", "reason"), [
    ("The second one.", "no label"),
    ("", "no label"),
    ("I think that hyp1 is fine but hyp2 changes the date.", "ambiguous"),
    ("hyp3", "outside {hyp1, hyp2}"),
    ("Answer: hyp0", "outside {hyp1, hyp2}"),
    ("Answer with exactly one word: hyp1 or hyp2.", "ambiguous"),  # an echo of the instruction
    ("Hyp1: My sister likes bicycles.\nHyp2", "ambiguous"),  # an echo of the listing, not an answer
    ("hyp1 (English): The cat sleeps.\nhyp2 (English): The dog sleeps.", "ambiguous"),
])
def test_detection_invalid(reply, reason):
    d = read_detection(reply)
    assert (d.position, d.status, d.reason) == (None, "invalid", reason)


def test_detection_failed():
    assert read_detection(None).status == "failed"


@pytest.mark.parametrize(("reply", "verdict", "status"), [
    ("Yes.", True, "ok"),
    ("no, the date differs", False, "ok"),
    ("**No**", False, "ok"),
    ("Nej.", False, "ok"),
    ("Ja, det stämmer.", True, "ok"),
    ("The translation is not faithful.", None, "invalid"),  # "not" is not "no"
    ("Maybe", None, "invalid"),
    (None, None, "failed"),
])
def test_yes_no(reply, verdict, status):
    assert read_yes_no(reply) == (verdict, status)

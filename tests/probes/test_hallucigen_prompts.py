from robusteval.data.hallucigen import HALLUCINATION_TYPES, HalluItem
from robusteval.probes import hallucigen_prompts as p

PARA = HalluItem("a", "paraphrase", "sv", "Vi målade staketet.", "I helgen målade vi staketet.",
                 "De målade staketet.", "pronoun", "hyp2")
MT = HalluItem("b", "translation", "fr-en", "Le chat dort.", "The cat sleeps.", "The dog sleeps.", "natural", "hyp2")


def test_requested_types():
    assert p.requested_types(PARA, ("item",)) == ("pronoun",)
    assert p.requested_types(PARA, ("none",)) == ()
    assert p.requested_types(PARA, ("all",)) == HALLUCINATION_TYPES
    assert p.requested_types(PARA, ("date", "number")) == ("date", "number")
    untyped = HalluItem("c", "paraphrase", "en", "x")
    assert p.requested_types(untyped, ("item",)) == ()


def test_generation_prompts_name_language_task_and_type():
    joint = p.generation_joint(PARA, ("pronoun",))[0].content
    assert "paraphrase in Swedish" in joint and "type pronoun" in joint
    assert "Source (Swedish): Vi målade staketet." in joint
    assert "hyp+: Butiken öppnar sina dörrar klockan åtta." in joint  # the Swedish format example
    joint = p.generation_joint(MT, ())[0].content
    assert "translation into English" in joint and "Source (French): Le magasin ouvre à huit heures." in joint
    assert "hyp-: The shop opens at ten." in joint and "not supported by the source" in joint
    faithful = p.generation_faithful(MT)[0].content
    assert "faithful translation into English" in faithful and "Le chat dort." in faithful
    many = p.generation_hallucinated(MT, ("date", "number"))[0].content
    assert "one of these types (date: change a date" in many and "number: change a number" in many


def test_seeded_order_is_stable_and_balanced():
    flips = [p.seeded_swap(7, "", f"item{n}") for n in range(400)]
    assert flips == [p.seeded_swap(7, "", f"item{n}") for n in range(400)]
    assert flips != [p.seeded_swap(8, "", f"item{n}") for n in range(400)]
    assert 150 < sum(flips) < 250


def test_shown_pair_maps_positions_back():
    straight, swapped = p.shown(MT, False), p.shown(MT, True)
    assert (straight.first, straight.order, straight.original(1), straight.original(2)) == (
        "The cat sleeps.", "12", "hyp1", "hyp2")
    assert (swapped.first, swapped.order, swapped.original(1), swapped.original(2)) == (
        "The dog sleeps.", "21", "hyp2", "hyp1")


def test_detection_and_judge_prompts():
    texts = {v: p.detection(MT, p.shown(MT, True), v)[0].content for v in p.DETECTION_PROMPTS}
    assert "incorrect translation" in texts["incorrect"]
    assert "different meaning" in texts["meaning"]
    assert "not supported by the source" in texts["support"]
    for text in texts.values():
        assert "hyp1 (English): The dog sleeps.\nhyp2 (English): The cat sleeps." in text
        assert text.endswith("hyp1 or hyp2.")
    judge = p.judge(PARA, "De målade staketet.")[0].content
    assert "Paraphrase (Swedish): De målade staketet." in judge and judge.endswith("Answer yes or no.")

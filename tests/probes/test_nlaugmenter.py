"""NL-Augmenter's transformations against their own test.json cases.

The cases below are the inputs and outputs of GEM-benchmark/NL-Augmenter's
`transformations/butter_fingers_perturbation/test.json`, `transformations/whitespace_perturbation/test.json`
and `nlaugmenter/transformations/random_upper_transformation/test.json` (MIT License, Copyright (c) 2021
GEM-benchmark), copied as test fixtures. NL-Augmenter seeds each with 0 and its default probability.
butter_fingers' file lists its first case twice: all six are covered. `ocr_perturbation/test.json`
is Tesseract's reading of a rendered image, not a rule's output, and is not reproduced
(`registry.UNAVAILABLE["nlaug:ocr"]`, tested in test_registry.py).
"""

from __future__ import annotations

import asyncio
import random

import pytest

from robusteval.probes import nlaugmenter
from robusteval.probes.apply import perturb_text

INPUTS = (
    "Andrew finally returned the French book to Chris that I bought last week",
    "Sentences with gapping, such as Paul likes coffee and Mary tea, lack an overt predicate to indicate the "
    "relation between two or more arguments.",
    "Alice in Wonderland is a 2010 American live-action/animated dark fantasy adventure film",
    "Ujjal Dev Dosanjh served as 33rd Premier of British Columbia from 2000 to 2001",
    "Neuroplasticity is a continuous processing allowing short-term, medium-term, and long-term remodeling of the "
    "neuronosynaptic organization.",
)
BUTTER_FINGERS = (
    "Andgew finally returned the French book to Chrus thav I bought last week",
    "Senhences with gapping, such as Paul likes coffwe and Mary tea, lack an overt predicate to indicatx the "
    "relauion between two or more argumentd.",
    "Alife in Wonderland is a 2010 American live-action/abimatev dark fantasy adventure film",
    "Ujjwl Dev Dosanjh served as 33rd Premier of Britush Conumbia from 2000 to 2001",
    "Neugoplasticity is a continuous processing alliwing vhort-term, medium-term, and long-term remodeling of the "
    "beuronosynaptic organization.",
)
WHITESPACE = (
    "Andrew finally returned the French b ook t o Chris that I bought last week",
    "Sentences with gapping, such as Paul  like s coffee and Mary tea, lack an overt predicate to indicate the "
    "relationbetwe en twoo r morearguments .",
    "Alice in Wonderland is a 2010 Americ an li ve-action/animated dark fantasy adventure film",
    "Ujjal Dev Dosanjh served as 33rd Pre mierof British Columbia from 2000 to 2001",
    "Neuroplasticity is a continuous proc essin g allowing short-term, medium-term, and long-term remodeling of "
    "the neur onosy naptico rganiza tion.",
)
RANDOM_UPPER = (
    "Andrew Finally returneD thE FrEnch book to Chris thAt I bought last week",
    "SentencES with gApping, such as Paul likes coFfee and MaRy tea, lack an overt predicate to indIcAte tHe "
    "relaTion betweEn two or moRe aRguments.",
    "AlIce in WondErland is a 2010 American liVe-aCtion/anImated dark fAntasy adventure film",
    "Ujjal Dev Dosanjh served as 33Rd Premier of BRitiSh Columbia frOm 2000 to 2001",
    "NeuroplaSticity is a conTiNUous pRocessing alLowing short-term, mediUm-teRm, and long-term remodeling of the "
    "neuronosyNaptIc organizatioN.",
)


@pytest.mark.parametrize("i", range(len(INPUTS)))
def test_nlaugmenter_test_json(i):
    assert nlaugmenter.butter_fingers(INPUTS[i], random.Random(0), 0.05) == BUTTER_FINGERS[i]
    assert nlaugmenter.whitespace(INPUTS[i], random.Random(0), 0.1) == WHITESPACE[i]
    assert nlaugmenter.random_upper_seeded(INPUTS[i], 0, 0.1) == RANDOM_UPPER[i]


def test_a_runs_first_copy_is_nlaugmenters_seed_0():
    """Through the registry and a run's seeding (copy index 0), the test.json strings come out."""
    for name, expected in (("nlaug:butter_fingers", BUTTER_FINGERS), ("nlaug:whitespace", WHITESPACE)):
        out = asyncio.run(perturb_text(name, INPUTS[0], seed="0:q:x#1", instance=("q", 0)))
        assert out.text == expected[0]
    other = asyncio.run(perturb_text("nlaug:butter_fingers", INPUTS[1], seed="0:q:x#2", instance=("q", 1)))
    assert other.text != BUTTER_FINGERS[1]  # the second copy is seed 1


def test_random_upper_upper_cases_the_share_of_positions_only():
    text = INPUTS[2]
    out = nlaugmenter.random_upper(text, random.Random(5), 0.3)
    assert out.lower() == text.lower()
    assert sum(a != b for a, b in zip(text, out)) <= int(len(text) * 0.3)

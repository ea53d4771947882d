"""The golden comparison: floats within the stated tolerance, all else exactly."""

from __future__ import annotations

import math
import struct

from robusteval.testing.floats import REL, differences, perturbed


def test_floats_within_the_tolerance_agree_and_a_real_change_does_not():
    want = {"ci_low": 0.20877725288701351, "n": 5, "zero": 0.0, "nan": math.nan, "list": [1.5, None, True]}
    assert differences({**want, "ci_low": 0.20877725288701354, "zero": -1.8e-16}, want) == []
    assert differences({**want, "ci_low": 0.20877725288701351 * (1 + 10 * REL)}, want) == [
        f"$.ci_low: {0.20877725288701351 * (1 + 10 * REL)!r} != 0.20877725288701351"]
    assert differences({**want, "n": 6}, want) == ["$.n: 6 != 5"]  # integers exactly
    assert differences({**want, "list": [1.5, None, 1]}, want) == ["$.list[2]: 1 != True"]  # a bool is no number
    assert differences({**want, "nan": 0.0}, want) == ["$.nan: 0.0 != nan"]
    assert differences({k: v for k, v in want.items() if k != "n"}, want) == ["$: keys ['n'] in one only"]
    assert differences([1.0, 2.0], [1.0]) == ["$: 2 entries != 1"]


def test_numbers_inside_text_are_compared_within_the_tolerance_and_the_text_exactly():
    line = "| order | 0.20877725288701351 [0.1, 0.5] | 3 |"
    assert differences(line.replace("351", "354"), line) == []
    assert differences(line.replace("0.5]", "0.6]"), line) != []
    assert differences(line.replace("order", "format"), line) != []
    assert differences("3 of 4", "3 of 5") != []


def test_perturbed_moves_every_float_one_unit_in_the_last_place_and_no_integer():
    value = {"a": 0.1, "b": [2, -3.5, 0.0], "text": "acc 0.25 of 4 items", "flag": False}
    moved = perturbed(value)
    assert moved["a"] == math.nextafter(0.1, 1) and moved["b"][1] == math.nextafter(-3.5, -math.inf)
    assert moved["b"][0] == 2 and moved["b"][2] > 0.0 and moved["flag"] is False
    assert moved["text"] == f"acc {math.nextafter(0.25, 1)!r} of 4 items"
    assert differences(moved, value) == []


def test_float32_values_get_float32_precision_and_float64_values_do_not():
    # an embedding similarity on two machines: one float32 unit apart (6e-8 relative)
    assert differences(0.8949092626571655, 0.8949092030525208) == []
    # the same gap between values that are not float32 numbers is a real change
    assert differences(0.8949092626571654, 0.8949092030525207) != []
    farther = struct.unpack("f", struct.pack("f", 0.895))[0]  # a float32 number 1e-4 away
    assert farther != 0.895 and differences(0.8949092626571655, farther) != []

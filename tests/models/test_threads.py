"""models/threads.py: the thread count as a pure function of injected readings, and the readings
parsed from ``/proc`` text (never the machine's real load, never wall time)."""

from __future__ import annotations

import pytest

from robusteval.models import threads
from robusteval.models.threads import CpuReadings, Ticks, busy_between, cpu_ticks, own_ticks, threads_for

STAT = """cpu  300 0 100 600 0 0 0 0 0 0
cpu0 100 0 50 350 0 0 0 0 0 0
cpu1 200 0 50 250 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
"""


@pytest.mark.parametrize(("readings", "expected"), [
    (CpuReadings(2, 2), 2),  # nothing known: every granted core
    (CpuReadings(2, 2, load=0.27, busy=1.0), 1),  # the make-demo case: a loop started with the run
    (CpuReadings(2, 2, load=1.4, busy=0.1), 1),  # a competitor that paused during the window: the minute saw it
    (CpuReadings(2, 2, load=0.2, busy=0.3), 2),  # an idle machine: less than half a core busy rounds to free
    (CpuReadings(2, 2, load=None, busy=0.9), 1),  # no load average
    (CpuReadings(4, 64, load=32.0, busy=0.0), 2),  # the host's load spread over its cores: half of these 4
    (CpuReadings(4, 64, load=0.0, busy=3.0), 1),  # busy is on the granted cores themselves: not scaled
    (CpuReadings(8, 8, load=20.0, busy=8.0), 1),  # never fewer than one
])
def test_threads_are_the_granted_cores_less_the_busier_reading(readings, expected):
    assert threads_for(readings) == expected


def test_cpu_ticks_sum_the_granted_cpus_lines():
    assert cpu_ticks(STAT, {0}) == (150, 500, 1)
    assert cpu_ticks(STAT, {1}) == (250, 500, 1)
    assert cpu_ticks(STAT, None) == (400, 1000, 2)  # every CPU line, not the aggregate twice
    assert cpu_ticks(STAT, {0, 5}) is None  # a granted CPU the file does not show: fall back, do not guess
    assert cpu_ticks("intr 1\n", None) is None


def test_iowait_is_idle_and_steal_is_busy():
    text = "cpu0 10 5 5 40 30 1 1 8 0 0\n"  # user nice system idle iowait irq softirq steal
    assert cpu_ticks(text, {0}) == (30, 100, 1)


def test_own_ticks_read_utime_and_stime_after_a_command_name_with_spaces():
    stat = "4242 (a (weird) name) R 1 4242 4242 0 -1 4194304 100 0 0 0 70 30 0 0 20 0 3 0 1117723 3133440 359"
    assert own_ticks(stat) == 100


def test_busy_cores_are_other_processes_ticks_over_one_cpus_ticks():
    before = Ticks(busy=1000, total=4000, cpus=2, own=0)
    # 0.3 s at 100 Hz on 2 CPUs: 60 ticks in all; 45 busy, 15 of them this process's own
    after = Ticks(busy=1045, total=4060, cpus=2, own=15)
    assert busy_between(before, after) == pytest.approx(1.0)
    assert busy_between(before, before) == 0.0  # no tick passed: nothing seen busy
    assert busy_between(before, Ticks(1000, 4060, 2, 30)) == 0.0  # never below zero
    assert busy_between(before, Ticks(1200, 4060, 2, 0)) == 2.0  # never above the CPUs read


def test_busy_cores_read_proc_twice_and_fall_back_where_it_is_absent(monkeypatch, tmp_path):
    readings = iter([Ticks(0, 0, 2, 0), Ticks(50, 60, 2, 5)])
    monkeypatch.setattr(threads, "read_ticks", lambda cpus: next(readings))
    assert threads.busy_cores({0, 1}, window=0) == pytest.approx(1.5)

    monkeypatch.undo()
    monkeypatch.setattr(threads, "PROC_STAT", tmp_path / "absent")
    assert threads.busy_cores(None, window=0) is None
    (tmp_path / "stat").write_text(STAT)
    (tmp_path / "self").write_text("1 (python) S 0 1 1 0 -1 0 0 0 0 0 7 3 0 0")
    monkeypatch.setattr(threads, "PROC_STAT", tmp_path / "stat")
    monkeypatch.setattr(threads, "PROC_SELF_STAT", tmp_path / "self")
    assert threads.read_ticks({0, 1}) == Ticks(400, 1000, 2, 10)
    assert threads.busy_cores({0, 1}, window=0) == 0.0  # the same ticks twice

"""models/threads.py: the thread count as a pure function of injected readings, and the readings
parsed from ``/proc`` text and a fake cgroup tree (never the machine's real load or cgroup, never
wall time)."""

from __future__ import annotations

import pytest

from robusteval.models import threads
from robusteval.models.threads import (
    CpuReadings,
    Ticks,
    busy_between,
    cpu_quota,
    cpu_ticks,
    own_ticks,
    quota_cores,
    threads_for,
)

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


@pytest.mark.parametrize(("readings", "expected"), [
    (CpuReadings(64, 64, quota=2.0), 2),  # docker --cpus 2 on a 64-core host: 2, not 64
    (CpuReadings(64, 64, load=20.0, busy=20.0, quota=2.0), 2),  # a busy host with 44 idle cores: still 2
    (CpuReadings(4, 4, load=3.0, busy=3.0, quota=2.0), 1),  # 1 free core under a quota of 2: 1
    (CpuReadings(2, 2, quota=8.0), 2),  # a quota above the affinity: the affinity
    (CpuReadings(8, 8, quota=1.5), 1),  # a fractional quota rounds down (quota_cores)
    (CpuReadings(8, 8, quota=0.5), 1),  # never fewer than one
    (CpuReadings(8, 8, quota=None), 8),  # no quota: the affinity alone
])
def test_a_cpu_quota_caps_the_threads(readings, expected):
    assert threads_for(readings) == expected


def test_quota_cores_are_whole_rounded_down_at_least_one():
    assert [quota_cores(q) for q in (None, 0.1, 1.0, 1.5, 1.99, 2.0, 2.5)] == [None, 1, 1, 1, 1, 2, 2]


def _cgroup(root, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(("files", "expected"), [
    ({"cpu.max": "200000 100000\n"}, 2.0),  # cgroup v2, docker --cpus 2
    ({"cpu.max": "150000 100000\n"}, 1.5),
    ({"cpu.max": "max 100000\n"}, None),  # v2 without a quota
    ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3.0),  # cgroup v1
    ({"cpu,cpuacct/cpu.cfs_quota_us": "50000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, 0.5),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),  # v1 without a quota
    ({"cpu/cpu.cfs_quota_us": "300000\n"}, None),  # a period missing: no guess
    ({"cpu.max": "200000 0\n"}, None),  # a zero period is not a quota
    ({"cpu.max": "garbage\n"}, None),
    ({}, None),  # no cgroup files at all (not Linux, no CPU controller)
])
def test_cpu_quota_reads_cgroup_v2_then_v1(tmp_path, files, expected):
    quota = cpu_quota(_cgroup(tmp_path, files), membership="")
    assert quota == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(("files", "membership", "expected"), [
    # a systemd service with CPUQuota=150% on a v2 host: the root has no cpu.max, the service's cgroup has
    ({"cgroup.controllers": "cpu\n", "system.slice/app.service/cpu.max": "150000 100000\n",
      "system.slice/cpu.max": "max 100000\n"}, "0::/system.slice/app.service\n", 1.5),
    # a nested cgroup without a quota of its own under a parent with one: the parent's holds
    ({"cgroup.controllers": "cpu\n", "outer/cpu.max": "200000 100000\n", "outer/inner/cpu.max": "max 100000\n"},
     "0::/outer/inner\n", 2.0),
    # the tightest of the cgroup and its ancestors
    ({"cgroup.controllers": "cpu\n", "outer/cpu.max": "100000 100000\n", "outer/inner/cpu.max": "400000 100000\n"},
     "0::/outer/inner\n", 1.0),
    # cgroup v1: the cpu hierarchy's path, not another controller's
    ({"cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "250000\n", "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"},
     "12:memory:/elsewhere\n4:cpu,cpuacct:/docker/abc\n0::/\n", 2.5),
    # cgroup v1 as most hosts mount it: `cpu` (a link to cpu,cpuacct) holds the tree, while the
    # membership line names the controllers joined; a systemd service's CPUQuota= sits below the root
    ({"cpu/system.slice/app.service/cpu.cfs_quota_us": "150000\n",
      "cpu/system.slice/app.service/cpu.cfs_period_us": "100000\n"},
     "4:cpu,cpuacct:/system.slice/app.service\n", 1.5),
    # the cgroup's folder is not visible (a container sees only its own root): the root's quota
    ({"cpu.max": "300000 100000\n"}, "0::/not/mounted/here\n", 3.0),
])
def test_cpu_quota_follows_the_process_cgroup_and_its_ancestors(tmp_path, files, membership, expected):
    assert cpu_quota(_cgroup(tmp_path, files), membership=membership) == pytest.approx(expected)


def test_the_machine_readings_carry_the_quota(monkeypatch, tmp_path):
    """`read_cpu` and `granted_cores` read the cgroup under `CGROUP_ROOT`: a v2 quota of 2 on a process
    allowed 8 cores grants 2, and the picker starts 2 threads on an idle machine."""
    monkeypatch.setattr(threads, "CGROUP_ROOT", _cgroup(tmp_path, {"cpu.max": "200000 100000\n"}))
    (tmp_path / "self-cgroup").write_text("0::/\n")
    monkeypatch.setattr(threads, "PROC_SELF_CGROUP", tmp_path / "self-cgroup")
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    monkeypatch.setattr(threads, "busy_cores", lambda cpus, window=threads.WINDOW_S: 0.0)
    monkeypatch.setattr(threads, "load_average", lambda: 0.0)
    readings = threads.read_cpu(window=0)
    assert (readings.cores, readings.quota) == (8, pytest.approx(2.0))
    assert threads.granted_cores() == 2
    assert threads.free_threads() == 2


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

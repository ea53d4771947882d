"""The kill driver the crash tests use: it signals the process named, when told, and never hangs."""

from __future__ import annotations

import pytest

from robusteval.testing.kill_at import kill_at


def test_the_descendant_named_is_killed_and_the_script_goes_on(tmp_path):
    flag = tmp_path / "started"
    killed = kill_at(["bash", "-c", f"touch {flag}; sleep 30 & wait $!; echo child ended $?"], file=flag,
                     victim="sleep", timeout=60)
    assert killed.fired and killed.returncode == 0 and "child ended 137" in killed.output


def test_a_command_past_its_time_is_killed_and_said_so(tmp_path):
    with pytest.raises(AssertionError, match="ran past"):
        kill_at(["sleep", "30"], file=tmp_path / "never", timeout=0.2)

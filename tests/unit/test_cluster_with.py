"""hack/cluster_with.py: when `hack/cluster.py with -- CMD` (make e2e, bench-admission) starts and
stops the local control plane around CMD, and which exit code it gives, with a fake status/up/
down/command (no processes)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import pytest

HACK_CLUSTER_WITH = Path(__file__).resolve().parents[2] / "hack" / "cluster_with.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hack_cluster_with", HACK_CLUSTER_WITH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_with_cluster: Callable[..., int] = _load().run_with_cluster
CMD = ["pytest", "-m", "e2e"]


class Fake:
    """Records the calls in order; each step answers as told."""

    def __init__(self, up: bool, up_rc: int = 0, cmd_rc: int = 0, down_rc: int = 0) -> None:
        self.running, self.up_rc, self.cmd_rc, self.down_rc = up, up_rc, cmd_rc, down_rc
        self.calls: list[str] = []

    def is_up(self) -> bool:
        self.calls.append("status")
        return self.running

    def up(self) -> int:
        self.calls.append("up")
        return self.up_rc

    def down(self) -> int:
        self.calls.append("down")
        return self.down_rc

    def run(self, command: Sequence[str]) -> int:
        assert list(command) == CMD
        self.calls.append("cmd")
        return self.cmd_rc

    def __call__(self) -> int:
        return run_with_cluster(
            CMD, is_up=self.is_up, up=self.up, down=self.down, run=self.run, log=lambda _: None
        )


@pytest.mark.parametrize("cmd_rc", [0, 1, 5])
def test_a_running_cluster_is_used_and_left_running(cmd_rc: int) -> None:
    fake = Fake(up=True, cmd_rc=cmd_rc)
    assert fake() == cmd_rc
    assert fake.calls == ["status", "cmd"]


@pytest.mark.parametrize("cmd_rc", [0, 1, 5])
def test_a_cluster_it_started_is_stopped_after(cmd_rc: int) -> None:
    fake = Fake(up=False, cmd_rc=cmd_rc)
    assert fake() == cmd_rc
    assert fake.calls == ["status", "up", "cmd", "down"]


def test_a_failed_up_runs_nothing_and_gives_its_code() -> None:
    fake = Fake(up=False, up_rc=3)
    assert fake() == 3
    assert fake.calls == ["status", "up"]


@pytest.mark.parametrize("cmd_rc", [0, 2])
def test_a_failed_down_gives_1(cmd_rc: int) -> None:
    fake = Fake(up=False, cmd_rc=cmd_rc, down_rc=4)
    assert fake() == 1
    assert fake.calls == ["status", "up", "cmd", "down"]


def test_down_follows_a_command_that_raised() -> None:
    fake = Fake(up=False)

    def interrupted(command: Sequence[str]) -> int:
        fake.calls.append("cmd")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_with_cluster(
            CMD, is_up=fake.is_up, up=fake.up, down=fake.down, run=interrupted, log=lambda _: None
        )
    assert fake.calls == ["status", "up", "cmd", "down"]


def test_an_empty_command_is_refused_before_anything_runs() -> None:
    fake = Fake(up=False)
    with pytest.raises(ValueError):
        run_with_cluster(
            [], is_up=fake.is_up, up=fake.up, down=fake.down, run=fake.run, log=lambda _: None
        )
    assert fake.calls == []

"""The restart budget of `loregate up`: backoff doubles, a window caps the restarts, old ones age out."""

from __future__ import annotations

from api.cli.restarts import RestartBudget, RestartPolicy


def test_restart_budget_backs_off_exponentially_up_to_the_cap() -> None:
    budget = RestartBudget(RestartPolicy(max_restarts=10, initial_backoff_seconds=1, max_backoff_seconds=8))
    delays = []
    for t in range(6):
        delay = budget.next_delay(float(t))
        assert delay is not None
        delays.append(delay)
        budget.record(float(t))
    assert delays == [1, 2, 4, 8, 8, 8]


def test_restart_budget_refuses_past_max_restarts_within_the_window() -> None:
    budget = RestartBudget(RestartPolicy(max_restarts=2, window_seconds=60))
    budget.record(0.0)
    budget.record(1.0)
    assert budget.next_delay(2.0) is None


def test_restart_budget_forgets_restarts_older_than_the_window() -> None:
    budget = RestartBudget(RestartPolicy(max_restarts=2, window_seconds=60))
    budget.record(0.0)
    budget.record(1.0)
    assert budget.next_delay(62.0) == 1.0


def test_restart_budget_of_zero_never_restarts() -> None:
    assert RestartBudget(RestartPolicy(max_restarts=0)).next_delay(0.0) is None

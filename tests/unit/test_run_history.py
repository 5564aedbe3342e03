"""The statistics records a run holds: bounded however long the run (issue 45 item 11)."""

import itertools

import pytest

from tachyflow.simulation import RunHistory


def test_a_long_run_holds_its_recent_records_and_an_even_spread_for_plots():
    history = RunHistory(recent=5, kept=8)
    for step in range(1000):
        history.append({"step": step})
    assert len(history) == 1000
    assert history[-1] == {"step": 999}
    assert [row["step"] for row in history[-3:]] == [997, 998, 999]
    plotted = [row["step"] for row in history]
    assert len(plotted) <= 9 and plotted[0] == 0 and plotted[-1] == 999
    strides = {b - a for a, b in itertools.pairwise(plotted[:-1])}
    assert len(strides) == 1  # evenly spread (the latest record last)
    with pytest.raises(IndexError, match="only the last 5 records"):
        history[0]
    with pytest.raises(IndexError, match="only the last 5 records"):
        history[-10:]


def test_a_short_run_is_a_plain_list_of_its_records():
    history = RunHistory(recent=50, kept=40)
    for step in range(30):
        history.append({"step": step})
    assert history[0] == {"step": 0} and history[-30:] == list(history)
    assert not RunHistory() and len(RunHistory()) == 0
    with pytest.raises(ValueError, match="recent must be >= 1"):
        RunHistory(recent=0)

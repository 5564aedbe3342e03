"""The progress bar of runs and benchmarks."""

from rich.progress import Progress

from tachyflow import runtime


def test_the_progress_bar_redraws_at_most_twice_a_second(monkeypatch):
    # Each redraw is Python work on rank 0's core that the other ranks wait for.
    made = []

    class Recording(Progress):
        def __init__(self, *columns, **options):
            made.append(options)
            super().__init__(*columns, **options)

    monkeypatch.setattr(runtime, "Progress", Recording)
    monkeypatch.setenv(runtime.TERMINAL_VARIABLE, "100")  # a live bar, as in a terminal
    with runtime.progress_bar("steps", 3) as advance:
        advance(3)
    assert len(made) == 1 and made[0]["refresh_per_second"] <= 2

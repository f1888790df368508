"""cuzk.util.progress: a Progress prints only when enabled; StageTimer keeps timings and a timeline."""
import io
import logging
import time

from cuzk.util.progress import Progress, Stage, StageTimer


def test_a_disabled_progress_prints_nothing():
    stream = io.StringIO()
    with Progress("bar", total=5, enabled=False, stream=stream) as bar:
        bar.update(5)
    with Progress("ticker", enabled=False, stream=stream, every=0.01):
        time.sleep(0.05)
    assert stream.getvalue() == ""


def test_an_enabled_bar_counts_to_its_total():
    stream = io.StringIO()
    with Progress("seal: labels", total=11, unit="layer", stream=stream) as bar:
        for _ in range(11):
            bar.update()
    text = stream.getvalue()
    assert "seal: labels" in text and "11/11" in text and "layer" in text and text.endswith("\n")


def test_a_delayed_bar_stays_silent_for_short_work():
    stream = io.StringIO()
    with Progress("parents cache", total=3, delay=60.0, stream=stream) as bar:
        bar.update(3)
    assert stream.getvalue() == ""


def test_a_ticker_prints_elapsed_time_until_closed():
    stream = io.StringIO()
    with Progress("cuzk: Groth16 setup", stream=stream, every=0.02):
        time.sleep(0.15)
    lines = stream.getvalue().splitlines()
    assert lines and all(line == "cuzk: Groth16 setup: 0m00s elapsed" for line in lines)
    time.sleep(0.05)
    assert stream.getvalue().splitlines() == lines  # the thread stopped with the block


def test_stage_timer_records_stages_and_events_in_order(caplog):
    timer = StageTimer("prove")
    with caplog.at_level(logging.DEBUG, logger="cuzk.timing"):
        with timer("ntt"):
            time.sleep(0.01)
        with timer("msm"):
            pass
        timer.mark("assemble")
    assert list(timer.timings) == ["ntt", "msm", "assemble"]
    assert timer.timings["ntt"] >= 0.01
    assert [e.stage for e in timer.events] == ["ntt", "msm", "assemble"]
    assert all(isinstance(e, Stage) and e.start <= e.end for e in timer.events)
    assert timer.start <= timer.events[0].start
    assert all(a.end <= b.start for a, b in zip(timer.events, timer.events[1:]))
    assert timer.events[2].start == timer.events[1].end  # a mark begins where the last stage ended
    assert [r.getMessage().split()[:2] for r in caplog.records] == [["prove:", s] for s in timer.timings]


def test_stage_timer_echo():
    stream = io.StringIO()
    timer = StageTimer("seal 2KiB", echo=True, stream=stream)
    timer.mark("tree_d")
    with timer("labels"):
        pass
    lines = stream.getvalue().splitlines()
    assert [line.rsplit(",", 1)[0] for line in lines] == ["seal 2KiB: tree_d done", "seal 2KiB: labels done"]
    quiet = io.StringIO()
    StageTimer("x", stream=quiet).mark("a")
    assert quiet.getvalue() == ""

"""cuzk.engine.timeline: reading (a TimelineError naming the file and line), the summary's numbers on a
hand-written timeline, and the plot (a PNG, written atomically; a typed error without matplotlib)."""
import json
import sys

import pytest

from cuzk.engine.timeline import PlotUnavailableError, TimelineError, _depth, plot, read_timeline, summary
from cuzk.errors import InputError

GIB = 1 << 30
T0 = 1000.0
# (job, partition, event, seconds after T0, host_reserved GiB). Job A: 2 partitions; B: 1, on a second
# GPU worker from 106.5 (GPU busy 104..110: 6 s of the 10 s span); C fails in synthesis (its last event
# opens no interval: never counted as waiting for a GPU). Waiting for a GPU: A0 103-104, A1 104-106,
# B0 106-106.5: one at a time (an interval that ends when another starts does not overlap it).
ROWS = [
    ("A", 0, "queued", 0, 0), ("A", 1, "queued", 0, 0), ("A", 0, "admitted", 0, 1),
    ("A", 0, "synthesis_end", 3, 1), ("A", 0, "synthesis_start", 1, 1),  # as the engine writes them
    ("A", 1, "admitted", 1, 2), ("A", 1, "synthesis_start", 2, 2), ("B", 0, "queued", 2, 2),
    ("B", 0, "admitted", 3, 3), ("B", 0, "synthesis_start", 3, 3), ("A", 0, "gpu_start", 4, 3),
    ("A", 1, "synthesis_end", 4, 3), ("C", 0, "queued", 4, 3), ("C", 0, "admitted", 5, 3.5),
    ("C", 0, "synthesis_end", 5.5, 3.5), ("A", 0, "gpu_end", 6, 2.5), ("A", 1, "gpu_start", 6, 2.5),
    ("B", 0, "synthesis_end", 6, 2.5), ("B", 0, "gpu_start", 6.5, 2.5), ("A", 1, "gpu_end", 7, 1.5),
    ("B", 0, "gpu_end", 10, 0.5),
]


def _events(rows=ROWS):
    return [{"t": T0 + t, "job": job, "partition": k, "event": event, "host_reserved": int(gib * GIB)}
            for job, k, event, t, gib in rows]


def _write(path, events):
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_read_returns_the_events_in_file_order(tmp_path):
    path = _write(tmp_path / "t.jsonl", _events())
    path.write_text(path.read_text() + "\n  \n")  # blank lines are skipped
    assert read_timeline(path) == _events()


def test_summary_on_a_known_timeline():
    assert summary(_events()) == {
        "start": T0, "span_s": 10.0, "events": 21,
        "jobs": {"A": {"partitions": 2, "proved": 2, "queued_s": 0.0, "done_s": 7.0, "seconds": 7.0},
                 "B": {"partitions": 1, "proved": 1, "queued_s": 2.0, "done_s": 10.0, "seconds": 8.0},
                 "C": {"partitions": 1, "proved": 0, "queued_s": 4.0, "done_s": None, "seconds": None}},
        "gpu_busy_s": 6.0, "gpu_busy_fraction": 0.6, "max_gpu_queue": 1, "peak_host_reserved": int(3.5 * GIB),
    }


def test_max_gpu_queue_counts_overlapping_waits():
    rows = [r if r[:3] != ("B", 0, "synthesis_end") else ("B", 0, "synthesis_end", 5, 2.5) for r in ROWS]
    assert summary(_events(rows))["max_gpu_queue"] == 2  # A1 104-106 and B0 105-106.5


def test_a_job_still_proving_has_no_seconds():
    rows = [r for r in ROWS if r[:3] != ("A", 1, "gpu_end")]
    assert summary(_events(rows))["jobs"]["A"] == {"partitions": 2, "proved": 1, "queued_s": 0.0, "done_s": 6.0,
                                                   "seconds": None}


def test_queue_depth_steps():
    spans = [(1.0, 3.0, "a"), (2.0, 2.0, "b"), (3.0, 4.0, "c"), (2.5, 5.0, "d")]  # b is empty: never counted
    assert _depth(sorted(spans)) == [(1.0, 1), (2.5, 2), (3.0, 1), (3.0, 2), (4.0, 1), (5.0, 0)]


GOOD = '{"t": 1, "job": "j", "partition": 0, "event": "queued", "host_reserved": 0}'


@pytest.mark.parametrize("line, reason", [
    (b"not json", "is not JSON (Expecting value: line 1 column 1 (char 0))"),
    (b'{"t": 1, "job": "j", "partition": 0, "event": "queued", "host_reserved": 0', "is not JSON ("),
    (b"\xff\xfe", "is not JSON ("),
    (b"[1]", "must be a JSON object, got an array of 1"),
    (b'{"job": "j", "partition": 0, "event": "queued", "host_reserved": 0}', 'has no "t"'),
    (GOOD.replace('"t": 1', '"t": NaN').encode(), '"t" must be a finite number (unix seconds), got the number nan'),
    (GOOD.replace('"t": 1', '"t": "1"').encode(), "\"t\" must be a finite number (unix seconds), got the string '1'"),
    (GOOD.replace('"j"', "7").encode(), '"job" must be a string, got the integer 7'),
    (GOOD.replace('"partition": 0', '"partition": -1').encode(),
     '"partition" must be an integer >= 0, got the integer -1'),
    (GOOD.replace('"partition": 0', '"partition": true').encode(),
     '"partition" must be an integer >= 0, got the boolean true'),
    (GOOD.replace("queued", "done").encode(), '"event" must be one of queued, admitted, synthesis_start, '
                                              "synthesis_end, gpu_start, gpu_end, finished, got the string 'done'"),
    (GOOD.replace('"host_reserved": 0', '"host_reserved": 1.5').encode(),
     '"host_reserved" must be an integer >= 0 (bytes), got the number 1.5'),
])
def test_a_bad_line_is_named(tmp_path, line, reason):
    path = tmp_path / "t.jsonl"
    path.write_bytes(GOOD.encode() + b"\n\n" + line + b"\n" + GOOD.encode() + b"\n")
    with pytest.raises(TimelineError) as info:
        read_timeline(path)
    assert str(info.value).startswith(f"{path}: line 3: {reason}")
    assert (info.value.source, info.value.line) == (str(path), 3) and isinstance(info.value, InputError)


def test_files_that_cannot_be_read(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n")
    for name, reason in (("empty.jsonl", "holds no events"), (".", "cannot be read (Is a directory)"),
                         ("missing.jsonl", "cannot be read (No such file or directory)")):
        with pytest.raises(TimelineError) as info:
            read_timeline(tmp_path / name)
        assert str(info.value) == f"{tmp_path / name}: {reason}" and info.value.line is None
    with pytest.raises(InputError, match="no events"):
        summary([])


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "t.png"
    plot(_events(), out)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and 10_000 < len(data) < 2_000_000
    assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (1200, 900)
    assert [p.name for p in tmp_path.iterdir()] == ["t.png"]  # no temporary left behind


def test_plot_without_matplotlib_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(PlotUnavailableError, match=r"pip install 'cuzk\[plot\]'"):
        plot(_events(), tmp_path / "t.png")
    assert not list(tmp_path.iterdir())

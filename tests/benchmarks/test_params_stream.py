"""bench.params_stream without a GPU: the generated file is a valid .params file in the 32GiB partition's
proportions, made of the repeated random points; the disk-read baseline reads it; the file system
is named."""
from __future__ import annotations

import numpy as np

from bench import params_stream as S
from cuzk.groth16 import read_params


def test_the_generated_file_reads_back(tmp_path, monkeypatch, rng):
    monkeypatch.setattr(S, "BLOCK", 64)
    pts = S.blocks(rng)
    path = tmp_path / "g.params"
    counts = S.generate(path, 4 << 20, pts, rng)
    assert abs(path.stat().st_size - (4 << 20)) < 4096
    assert counts["h"] > counts["l"] > counts["a"] > counts["b_g1"] == counts["b_g2"] > 0
    params = read_params(path, checked=False)
    assert params.lengths() == counts
    for name, group in (("h", "g1"), ("b_g2", "g2")):
        vector = params.vector(name)
        reps = -(-len(vector) // 64)
        assert np.array_equal(vector, np.concatenate([pts[group]] * reps)[:len(vector)])
    S.drop_cache(path)
    assert S.disk_read(path, 1 << 20, 3) > 0 and S.fs_type(path) != ""

"""PoSt vanilla proofs of an 8MiB sector sealed by cuzk (6 oct levels): WindowPoSt V1 and V1_2 and
WinningPoSt, generated -> bincode (§A6 sizes) -> read -> verified; a flipped sibling refused. Slow: the
seal takes minutes on two cores."""
import dataclasses

import numpy as np
import pytest

from cuzk.porep.seal import seal
from cuzk.post.bincode import read_sector_proof, write_sector_proof
from cuzk.post.checks import verify_window_partition, verify_winning
from cuzk.post.errors import PoStVanillaProofError
from cuzk.post.prove_vanilla import vanilla_proofs

pytestmark = pytest.mark.slow


def test_8mib_roundtrip(tmp_path):
    rng = np.random.default_rng(8)
    sector = seal("StackedDrg8MiBV1_1", tmp_path / "s", prover_id=bytes(32), sector_id=9, ticket=bytes(32),
                  progress=False)
    rand = bytes(rng.integers(0, 256, 31, dtype=np.uint8)) + b"\x01"
    for pid, size in ((6, 10 * 1516), (11, 10 * 1516), (1, 66 * 1516)):
        (vp,) = vanilla_proofs(pid, rand, [sector])
        raw = write_sector_proof(vp)
        assert len(raw) == 56 + size + 64
        back = read_sector_proof(raw, pid, 0)
        assert back == vp
        check = verify_winning if pid == 1 else verify_window_partition
        check(pid, rand, [back])
    m = vp.sector_proof.inclusion_proofs[5]
    e = m.base[4]
    bad = dataclasses.replace(m, base=m.base[:4] + (dataclasses.replace(e, hashes=(e.hashes[1], e.hashes[0]) + e.hashes[2:]),)
                              + m.base[5:])
    proofs = list(vp.sector_proof.inclusion_proofs)
    proofs[5] = bad
    tampered = dataclasses.replace(vp, sectors=(dataclasses.replace(vp.sector_proof, inclusion_proofs=tuple(proofs)),))
    with pytest.raises(PoStVanillaProofError, match="sector 0 challenge 5 inclusion path"):
        verify_winning(1, rand, [read_sector_proof(write_sector_proof(tampered), 1, 0)])

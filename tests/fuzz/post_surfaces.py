"""The PoSt vanilla-proof surface: cuzk.post.bincode.read_sector_proof of curio's bincode
FallbackPoStSectorProof (one element of SubmitProofRequest.vanilla_proofs), mutated. Registered in
surfaces.SURFACES; its seeds (a WindowPoSt V1_2 and a WinningPoSt proof) are made in each worker from
the sealed 2KiB seed sector.

Oracle: a result must re-encode to the exact input bytes (the format has one encoding), and a changed
input that still decodes must fail the vanilla checks (cuzk.post.checks) with a CuzkError.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .mutators import mutate_bytes, pick, short, weighted
from .surfaces import PY_WEIRD, Case, Problem, Surface, checked_call

WINDOW, WINNING = 10, 0  # StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1


class PostVanilla(Surface):
    name, count, timeout = "post_vanilla", 150, 10.0

    def randomness(self) -> bytes:
        r = bytearray(self.seeds.seed32)
        r[31] &= 0x3F  # curio's mask
        return bytes(r)

    def proof_bytes(self, pid: int) -> bytes:
        def make() -> bytes:
            from cuzk.porep.seal import Sector
            from cuzk.post.bincode import write_sector_proof
            from cuzk.post.prove_vanilla import vanilla_proofs
            sector = Sector.open(self.seeds.root / "sector")
            return write_sector_proof(vanilla_proofs(pid, self.randomness(), [sector])[0])
        return self.seeds.get(f"post:{pid}", make)

    def warm(self) -> None:
        from cuzk.post.bincode import read_sector_proof
        from cuzk.post.checks import verify_sector
        for pid in (WINDOW, WINNING):
            verify_sector(pid, self.randomness(), read_sector_proof(self.proof_bytes(pid), pid), 0)

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.post.bincode import read_sector_proof, write_sector_proof
        from cuzk.post.checks import verify_sector
        pid = pick(rng, [WINDOW, WINDOW, WINNING])
        orig = self.proof_bytes(pid)
        op = weighted(rng, {"bytes": 8, "u64": 3, "type": 1})
        if op == "type":
            value, desc = pick(rng, PY_WEIRD + [(bytearray(orig), "a bytearray"), (orig.hex(), "the hex str")])
            data = bytes(value) if isinstance(value, bytearray) else None
        elif op == "u64":  # a length, index or sector id set to an edge value
            off = int(rng.integers(0, len(orig) - 8))
            v = pick(rng, [0, 1, 7, 8, 9, 11, 65, 67, 2 ** 32, 2 ** 63, 2 ** 64 - 1])
            data = orig[:off] + v.to_bytes(8, "little") + orig[off + 8:]
            value, desc = data, f"u64 at {off} set to {v}"
        else:
            m = mutate_bytes(rng, orig)
            value, data, desc = m.value, m.value, m.desc
        randomness = self.randomness()

        def accept(result: Any) -> list[Problem]:
            if data is None:
                return [("accepted", f"{desc} accepted: {short(result, 60)}")]
            again, problems = checked_call(lambda: write_sector_proof(result), "write_sector_proof")
            if problems:
                return problems
            if again != data:
                return [("accepted", f"{desc}: decodes to something that re-encodes differently")]
            if data == orig:
                return []
            ok, problems = checked_call(lambda: verify_sector(pid, randomness, result, 0) or True, "verify_sector")
            return problems or ([("accepted", f"{desc}: a changed vanilla proof verifies")] if ok else [])
        return Case(f"proof {pid}: {desc}", lambda: read_sector_proof(value, pid, 0), accept)


POST_SURFACES: list[type[Surface]] = [PostVanilla]

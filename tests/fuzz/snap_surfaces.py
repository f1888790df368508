"""The SnapDeals vanilla-proof surface: cuzk.snap.bincode.read_vproof_json of curio's snap-vproof.json
(a JSON array of base64 bincode PartitionProofs) and read_partition_proof of one partition's bytes,
mutated. Registered in surfaces.SURFACES; its seed (random data encoded into the sealed 2KiB seed
sector, and the one partition's proof) is made in each worker.

Oracle: a decoded bincode proof must re-encode to the exact input bytes (the format has one encoding),
and a changed proof that still decodes must fail the vanilla checks (cuzk.snap.vanilla) with a CuzkError.
"""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import numpy as np

from .mutators import mutate_bytes, pick, short, weighted
from .surfaces import PY_WEIRD, Case, Problem, Surface, checked_call

PROOF = 0  # StackedDrg2KiBV1


class SnapVanilla(Surface):
    name, count, timeout = "snap_vanilla", 120, 10.0

    def seed(self) -> tuple[Any, bytes]:
        def make() -> tuple[Any, bytes]:
            from cuzk.porep.seal import Sector
            from cuzk.snap.bincode import write_partition_proof
            from cuzk.snap.encode import encode
            from cuzk.snap.vanilla import prove_partition, public_inputs
            rng = np.random.default_rng(int.from_bytes(self.seeds.seed32[:8], "little"))
            data = rng.integers(0, 256, (64, 32), dtype=np.uint8)
            data[:, 31] &= 0x3F
            update = encode(Sector.open(self.seeds.root / "sector"), data.tobytes())
            return public_inputs(update)[0], write_partition_proof(prove_partition(update, 0), PROOF)
        return self.seeds.get("snap:2KiB", make)

    def warm(self) -> None:
        from cuzk.snap.bincode import read_partition_proof
        from cuzk.snap.vanilla import verify_partition
        public, raw = self.seed()
        verify_partition(PROOF, public, read_partition_proof(raw, PROOF))

    def generate(self, rng: np.random.Generator, scratch: Path) -> Case:
        from cuzk.snap.bincode import read_partition_proof, read_vproof_json, write_partition_proof
        from cuzk.snap.vanilla import verify_partition
        public, orig = self.seed()
        op = weighted(rng, {"bytes": 6, "u64": 2, "json": 3, "type": 1})
        as_json = op == "json"
        if op == "type":
            value, desc = pick(rng, PY_WEIRD + [(bytearray(orig), "a bytearray"), (orig.hex(), "the hex str")])
            data = bytes(value) if isinstance(value, bytearray) else None
        elif op == "u64":  # a length or index set to an edge value
            off = int(rng.integers(0, len(orig) - 8))
            v = pick(rng, [0, 1, 2, 7, 8, 9, 10, 11, 2 ** 32, 2 ** 63, 2 ** 64 - 1])
            data = orig[:off] + v.to_bytes(8, "little") + orig[off + 8:]
            value, desc = data, f"u64 at {off} set to {v}"
        elif as_json:
            text = b'["' + base64.b64encode(orig) + b'"]'
            m = mutate_bytes(rng, text)
            value, data, desc = m.value, None, f"snap-vproof.json: {m.desc}"
        else:
            m = mutate_bytes(rng, orig)
            value, data, desc = m.value, m.value, m.desc

        def accept(result: Any) -> list[Problem]:
            if data is None and not as_json:
                return [("accepted", f"{desc} accepted: {short(result, 60)}")]
            proof = result[0] if as_json else result
            raw, problems = checked_call(lambda: write_partition_proof(proof, PROOF), "write_partition_proof")
            if not problems and not as_json and raw != data:
                return [("accepted", f"{desc}: decodes to something that re-encodes differently")]
            if problems or raw == orig:  # unchanged (or whitespace-only changed JSON): nothing to verify
                return problems
            ok, problems = checked_call(lambda: verify_partition(PROOF, public, proof) or True, "verify_partition")
            return problems or ([("accepted", f"{desc}: a changed vanilla proof verifies")] if ok else [])
        call = (lambda: read_vproof_json(value, PROOF)) if as_json else (lambda: read_partition_proof(value, PROOF, 0))
        return Case(f"snap {desc}", call, accept)


SNAP_SURFACES: list[type[Surface]] = [SnapVanilla]

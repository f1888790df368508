"""Shared helpers for rust-fil-proofs' seal regression records (v16): reading them, and each record's
config, replica_id and per-partition public inputs."""
from __future__ import annotations

import json
from pathlib import Path

from cuzk.porep.challenges import PoRepConfig
from cuzk.porep.labels import replica_id
from cuzk.porep.graph import SdrGraph
from cuzk.porep.public_inputs import partition_public_inputs

RECORDS = Path(__file__).parent.parent / "data" / "seal_regression_records-v16.json"


def load_records() -> list[dict]:
    return [json.loads(line) for line in RECORDS.read_text().splitlines() if line.strip()]


def record_config(r: dict) -> PoRepConfig:
    return PoRepConfig.from_json(r["porep_config"])


def record_replica_id(r: dict) -> bytes:
    cfg = record_config(r)
    return replica_id(bytes(r["prover_id"]), r["sector_id"], bytes(r["ticket"]), bytes(r["comm_d"]), cfg.porep_id)


def record_public_inputs(r: dict) -> list[list[int]]:
    """The public inputs (without ONE) of every partition of record `r`."""
    cfg = record_config(r)
    rid, graph = record_replica_id(r), SdrGraph.for_config(cfg)
    return [partition_public_inputs(cfg, rid, bytes(r["comm_d"]), bytes(r["comm_r"]), bytes(r["seed"]), k, graph)
            for k in range(cfg.partitions)]

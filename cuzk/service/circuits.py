"""The circuit ids the daemon accepts (PreloadSRS, EvictSRS, GetStatus's loaded_srs, the status page's
`circuits`, the start-up log lines and `cuzk daemon --preload`), and the names of GetStatus's queues.

An id is `<kind>-<size>`, size one of 2k, 8m, 512m, 32g, 64g; curio sends porep-32g, porep-64g,
wpost-32g, winning-32g, snap-32g and snap-64g, the small sizes serve tests and private networks:

    porep-S    StackedDrg<S>V1_1        the seal proof (all PoRep API versions share one circuit)
    wpost-S    StackedDrgWindow<S>V1_2  WindowPoSt (curio's Go "V1_1"; V1 shares its parameters)
    winning-S  StackedDrgWinning<S>V1   WinningPoSt
    snap-S     StackedDrg<S>V1          the SnapDeals (empty sector update) proof

Each Circuit gives its engine CircuitSpec (porep_spec_of / post_spec_of / snap_spec_of), the key it
is resident under, and its parameter file stem and official files.
"""
from __future__ import annotations

from dataclasses import dataclass

from cuzk.engine.jobs import CircuitSpec
from cuzk.engine.porep import porep_spec_of
from cuzk.engine.post import post_spec_of
from cuzk.engine.snap import snap_spec_of
from cuzk.porep.params_cache import ParamsFiles, official_files, porep_stem
from cuzk.porep.registry import get_proof
from cuzk.post.registry import get_post_proof
from cuzk.snap.registry import get_update_proof

SIZES = {"2k": "2KiB", "8m": "8MiB", "512m": "512MiB", "32g": "32GiB", "64g": "64GiB"}
# id prefix -> (the journal's kind of the jobs proved with it, the registered proof's name with {} the size)
FAMILIES = {"porep": ("porep", "StackedDrg{}V1_1"), "wpost": ("window_post", "StackedDrgWindow{}V1_2"),
            "winning": ("winning_post", "StackedDrgWinning{}V1"), "snap": ("snap", "StackedDrg{}V1")}
# the journal's kinds as GetStatus's queues name them (curio's proof_kind strings), in curio's order
QUEUE_NAMES = {"porep": "porep-c2", "snap": "snap-update", "window_post": "window-post",
               "winning_post": "winning-post"}


@dataclass(frozen=True)
class Circuit:
    """One circuit id: the kind of job that proves with it and its registered proof's (Rust API) name."""

    circuit_id: str
    kind: str
    proof: str

    def spec(self, allow_setup: bool = False) -> CircuitSpec:
        """Its engine spec: the official parameters, or with `allow_setup` cuzk's own (generated when missing)."""
        if self.kind == "porep":
            return porep_spec_of(get_proof(self.proof), allow_setup=allow_setup)
        if self.kind == "snap":
            return snap_spec_of(self.proof, allow_setup=allow_setup)
        return post_spec_of(self.proof, allow_setup=allow_setup)

    @property
    def key(self) -> str:
        """The key the engine holds it under while it is resident."""
        return self.spec().key

    @property
    def stem(self) -> str:
        """Its parameter files' name without .params / .vk."""
        if self.kind == "porep":
            return porep_stem(get_proof(self.proof).sector_size)
        if self.kind == "snap":
            return get_update_proof(self.proof).params_stem
        return get_post_proof(self.proof).params_stem

    @property
    def official(self) -> ParamsFiles:
        """Its official parameter files (FIL_PROOFS_PARAMETER_CACHE)."""
        return official_files(self.stem)


CIRCUITS: dict[str, Circuit] = {
    f"{prefix}-{size}": Circuit(f"{prefix}-{size}", kind, name.format(label))
    for prefix, (kind, name) in FAMILIES.items() for size, label in SIZES.items()}


def unknown(circuit_id: str) -> str | None:
    """None for a known circuit id, else the message that refuses it, naming the valid ones."""
    if circuit_id in CIRCUITS:
        return None
    return f"unknown circuit id {circuit_id!r}: one of {', '.join(CIRCUITS)}"


def circuit_table(engine) -> list[dict]:
    """Each circuit id (the status page's `circuits`): its kind and registered proof, its official
    parameter file and whether it is there, whether it is resident on `engine`, and whether cuzk's
    own parameters may stand in (srs.allow_setup)."""
    resident = set(engine.resident)
    allow = engine.config.srs.allow_setup
    out = []
    for c in CIRCUITS.values():
        files = c.official
        out.append({"circuit_id": c.circuit_id, "kind": c.kind, "proof": c.proof,
                    "official": files.params.is_file() and files.vk.is_file(), "params": str(files.params),
                    "resident": c.key in resident, "allow_setup": allow})
    return out


def circuit_lines(circuits: list[dict]) -> list[str]:
    """One log line per circuit: resident or not, and its official parameter file or what is missing."""
    lines = []
    for c in circuits:
        where = f"official parameters {c['params']}" if c["official"] else (
            f"no official parameters ({c['params']} missing): " + (
                "cuzk's own stand in (srs.allow_setup)" if c["allow_setup"]
                else "its jobs fail unless srs.allow_setup"))
        lines.append(f"circuit {c['circuit_id']}: {'resident, ' if c['resident'] else ''}{where}")
    return lines

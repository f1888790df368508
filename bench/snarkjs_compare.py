"""Groth16 prove of one synthetic 2^k circuit by snarkjs (CLI and in-process node) and by cuzk's CPU
backend, timed back to back; prints both medians and their ratio (snarkjs / cuzk: > 1 means cuzk
is faster) and records a `prove` line (cuzk's median, snarkjs as the peer: in-process when its
package directory is known, else the CLI) in bench/results/prove_cpu.jsonl.

snarkjs gets the circuit through cuzk.interop.snarkjs (.r1cs, .wtns and a .zkey from cuzk's own setup,
so no powers-of-tau ceremony is needed). It is found in --snarkjs-dir (a directory where
`npm install snarkjs@0.7.6` ran; default $SNARKJS_DIR), else as `npx --no-install snarkjs`.

    python -m bench.snarkjs_compare --log-n 16 --repeat 5 --snarkjs-dir /tmp/snarkjs
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from bench.common import device_name, print_table, record
from cuzk.ff import limbs
from cuzk.backend import get_backend
from cuzk.ff.fields import Fr
from cuzk.groth16 import as_circuit, prove, setup, verify
from cuzk.groth16.synthetic import synthetic_circuit
from cuzk.interop import snarkjs as sj
from cuzk.r1cs import ConstraintSystem

R = limbs.FR_MODULUS

NUM_INPUTS = 2  # public inputs besides ONE in the synthetic circuit, as bench/prove.py

_NODE_LOOP = """
const snarkjs = require(process.argv[1]);
(async () => {
  const times = [];
  for (let i = 0; i < Number(process.argv[4]) + 1; i++) {
    const t = performance.now();
    await snarkjs.groth16.prove(process.argv[2], process.argv[3]);
    times.push(performance.now() - t);
  }
  console.log(JSON.stringify(times.slice(1)));
  process.exit(0);
})();
"""


def add_parser(sub) -> None:
    p = sub.add_parser("snarkjs", help="Groth16 prove: snarkjs vs cuzk's CPU backend on one circuit")
    _arguments(p)
    p.set_defaults(run=run)


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-n", type=int, default=16, help="log2 of the domain (constraints + inputs)")
    p.add_argument("--repeat", type=int, default=3, help="timed proofs per prover (after a warm-up)")
    p.add_argument("--circuit", default="synthetic", choices=["synthetic", "chain"],
                   help="synthetic: bench/prove.py's PoRep-like circuit; chain: x_{i+1} = x_i^2 (one "
                        "random wire per constraint, the shape of ANCHORS.md's snarkjs figure)")
    p.add_argument("--snarkjs-dir", default=os.environ.get("SNARKJS_DIR"),
                   help="directory holding node_modules/snarkjs (default $SNARKJS_DIR)")
    p.add_argument("--workdir", default=None, help="where the .r1cs/.wtns/.zkey go (default a temp dir)")


class Snarkjs:
    """snarkjs as a CLI command, plus its package directory for in-process timing when known."""

    def __init__(self, directory: str | None) -> None:
        self.package = None
        if directory:
            self.package = Path(directory).resolve() / "node_modules" / "snarkjs"
            self.cli = ["node", str(self.package / "build" / "cli.cjs")]
        elif shutil.which("snarkjs"):
            self.cli = ["snarkjs"]
        else:
            self.cli = ["npx", "--no-install", "snarkjs"]

    def version(self) -> str:
        if self.package is None:
            return "unknown"
        return json.loads((self.package / "package.json").read_text())["version"]

    def prove_cli(self, zkey: Path, wtns: Path, proof: Path, public: Path) -> float:
        start = time.perf_counter()
        subprocess.run([*self.cli, "groth16", "prove", str(zkey), str(wtns), str(proof), str(public)],
                       check=True, capture_output=True)
        return time.perf_counter() - start

    def prove_in_process(self, zkey: Path, wtns: Path, repeat: int) -> list[float] | None:
        """Seconds per proof inside one warm node process (after one warm-up proof)."""
        if self.package is None:
            return None
        out = subprocess.run(["node", "-e", _NODE_LOOP, str(self.package), str(zkey), str(wtns), str(repeat)],
                             check=True, capture_output=True, text=True).stdout
        return [t / 1e3 for t in json.loads(out.strip().splitlines()[-1])]


def run(args) -> None:
    if args.workdir:
        work = Path(args.workdir)
        work.mkdir(parents=True, exist_ok=True)
        _run(args, work)
    else:
        with tempfile.TemporaryDirectory(prefix="cuzk-snarkjs-") as tmp:
            _run(args, Path(tmp))


def _run(args, work: Path) -> None:
    log_n, backend, snarkjs = args.log_n, get_backend("cpu"), Snarkjs(args.snarkjs_dir)
    rng = np.random.default_rng(log_n)
    if args.circuit == "chain":
        cs = chain_circuit((1 << log_n) - 2, rng)
    else:
        cs = synthetic_circuit((1 << log_n) - NUM_INPUTS - 1, NUM_INPUTS, rng)
    circuit, witness = as_circuit(cs), cs.witness()
    public = witness[1:cs.num_inputs]
    r1cs, wtns, zkey = work / "circuit.r1cs", work / "circuit.wtns", work / "circuit.zkey"
    proof_json, public_json = work / "proof.json", work / "public.json"

    start = time.perf_counter()
    sj.write_r1cs(r1cs, circuit)
    sj.write_wtns(wtns, witness)
    zkey_vk = sj.setup_zkey(circuit, zkey, rng)
    zkey_s = time.perf_counter() - start
    start = time.perf_counter()
    params = setup(circuit, rng)
    setup_s = time.perf_counter() - start
    print(f"2^{log_n}: zkey written in {zkey_s:.1f} s, cuzk setup {setup_s:.1f} s; warming up both provers")

    load_start = os.getloadavg()[0]
    snarkjs.prove_cli(zkey, wtns, proof_json, public_json)  # warm-up: file cache, node's compile cache
    ours_proof = prove(params, circuit, witness, backend=backend)  # warm-up: numba compilation
    cli, ours = [], []
    for i in range(args.repeat):  # alternate who goes first so load drifts hit both alike
        order = [0, 1] if i % 2 == 0 else [1, 0]
        for who in order:
            if who == 0:
                cli.append(snarkjs.prove_cli(zkey, wtns, proof_json, public_json))
            else:
                ours_proof = prove(params, circuit, witness, backend=backend)
                ours.append(ours_proof.timings["total"])
    in_process = snarkjs.prove_in_process(zkey, wtns, args.repeat)
    load_end = os.getloadavg()[0]

    theirs = sj.read_proof_json(proof_json)
    if sj.read_public_json(public_json) != Fr.to_ints(public):
        raise SystemExit("snarkjs's public signals differ from the circuit's inputs")
    if not verify(zkey_vk, public, theirs):
        raise SystemExit("cuzk's verifier rejects snarkjs's proof")
    if not verify(params.vk, public, ours_proof):
        raise SystemExit("cuzk's proof does not verify")

    ours_s, cli_s = statistics.median(ours), statistics.median(cli)
    inp_s = statistics.median(in_process) if in_process else None
    version = snarkjs.version()

    def runs(times: list[float]) -> str:
        return ", ".join(f"{t * 1e3:.1f}" for t in times)

    if inp_s is not None:
        peer, peer_s = f"snarkjs {version} (in-process, warm node)", inp_s
        other = f"snarkjs CLI (a new node process per proof) median {cli_s * 1e3:.1f} ms (runs {runs(cli)})"
    else:
        peer, peer_s, other = f"snarkjs {version} (CLI)", cli_s, None
    row = {"bench": "prove", "backend": "cpu", "device": device_name("cpu"), "n": 1 << log_n,
           "ms": round(ours_s * 1e3, 1), "stat": "median", "peer": peer, "peer_ms": round(peer_s * 1e3, 1),
           "threads": numba.get_num_threads(), "circuit": args.circuit, "constraints": cs.num_constraints,
           "aux": cs.num_aux, "load_avg_start": round(load_start, 1), "load_avg_end": round(load_end, 1),
           "note": "; ".join(filter(None, [
               f"same circuit and key for both (cuzk's .zkey); median of {args.repeat}, alternating order",
               f"cuzk runs {runs(ours)}", f"peer runs {runs(in_process or cli)}", other]))}
    print(f"Groth16 prove, 2^{log_n} {args.circuit} circuit, {row['device']}, median of {args.repeat} "
          f"(load average {load_start:.1f} -> {load_end:.1f}; a shared machine: noisy)")
    print_table([{"cuzk_ms": ours_s * 1e3, "cli_ms": cli_s * 1e3, "inproc_ms": inp_s and inp_s * 1e3,
                  "ratio_cli": cli_s / ours_s, "ratio_inproc": inp_s and inp_s / ours_s}],
                [("cuzk_ms", "cuzk ms", ".0f"), ("cli_ms", "snarkjs CLI ms", ".0f"),
                 ("inproc_ms", "snarkjs in-process ms", ".0f"), ("ratio_cli", "snarkjs/cuzk (CLI)", ".2f"),
                 ("ratio_inproc", "snarkjs/cuzk (in-process)", ".2f")])
    print("both proofs verified by cuzk's verifier; recorded in", *record([row], "prove"))


def chain_circuit(num_constraints: int, rng: np.random.Generator) -> ConstraintSystem:
    """x_0 public and random, x_{i+1} = x_i^2 for i < num_constraints (one aux wire per constraint)."""
    xs = [int(Fr.to_ints(Fr.random(1, rng))[0])]
    for _ in range(num_constraints):
        xs.append(xs[-1] * xs[-1] % R)
    cs = ConstraintSystem()
    codes = np.concatenate([cs.alloc_input_many(Fr.from_ints(xs[:1])), cs.alloc_many(Fr.from_ints(xs[1:]))])
    prev, nxt = codes[:-1, None], codes[1:, None]
    cs.enforce_many((prev, [1]), (prev, [1]), (nxt, [1]), num_constraints)
    return cs


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.snarkjs_compare", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _arguments(parser)
    run(parser.parse_args())


if __name__ == "__main__":
    main()

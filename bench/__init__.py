"""cuzk's benchmark harness. Every result is one JSON line in bench/results/<family>_<backend>.jsonl
with the fields bench.common names (bench, backend, device, n, ms, date, command; peers and stage
times optional), which bench.common.record checks before writing it. Peer numbers (sppark) live in
bench/peers.py.

`python -m bench SUBCOMMAND --help` for the options of each:
    msm      MSM in G1 and G2 per size; py-arkworks side by side on the CPU   -> msm_<backend>.jsonl
    ntt      forward / inverse / coset NTT over Fr per size                   -> ntt_<backend>.jsonl
    prove    Groth16 prove of a synthetic 2^k circuit, per stage, and its setup
             -> prove_<backend>.jsonl, setup_cpu.jsonl
    snarkjs  Groth16 prove of one circuit by cuzk's CPU backend and snarkjs      -> prove_cpu.jsonl
    porep    seal + prove a 2KiB sector (porep_prove), or one 32GiB partition's synthesis (witness)
    synth    gadget synthesis rates (SHA256, Poseidon, a 2KiB-sized witness)  -> witness_cpu.jsonl
    r1cs     R1CS recording rates and the flat-CSR SpMV (pce_build, pce_eval)  -> pce_cpu.jsonl

On a GPU host (each writes to $OUT, else bench/results):
    python -m bench.device_msm      MSM correctness at the bench sizes, timings, --vram-budget GIB
    python -m bench.device_ntt      NTT against a CPU reference, round trips, timings
    python -m bench.device_compile  first-use compile time of each CUDA module, from empty caches
    python -m bench.post            a full synthetic WindowPoSt partition, WinningPoSt warm and beside
                                    PoRep, on an engine (also --backend cpu) -> post_<backend>.jsonl
    bash bench/device.sh NAME       one device call: check, porep, pce, witness, engine, daemon,
                                    porep32g, ... (`bash bench/device.sh help` lists them)
bench/RESULTS.md gives the current figure of each bench with its machine, date and command.
"""

"""Exchange with other Groth16 tool chains: circom / snarkjs files (cuzk.interop.snarkjs)."""

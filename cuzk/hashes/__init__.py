"""Native (non-circuit) hashes used by sealing, trees and the SDR graph.

- sha256: FIPS 180-4 constants, the numba compression (labelling) and a batch hash (tree_d nodes)
- poseidon, poseidon_constants: neptune's Poseidon over BLS12-381 Fr (tree_c, tree_r_last, columns)
- chacha: the ChaCha block (synthetic challenges, the DRG's ChaCha8Rng)
"""

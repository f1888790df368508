"""Circuit gadgets in bulk, at Filecoin's exact constraint counts (bellperson / neptune / rust-fil-proofs).

Every gadget takes a scope (a cuzk.r1cs ConstraintSystem, or a Batch block whose handles stand for K
instances) and works the same in constraint, witness and both modes:
- scope: bulk allocation and lazily built rows (what every gadget uses)
- boolean: `Bits` (n Booleans x K instances), alloc, xor, and_, sha256_ch, sha256_maj, bit orders
- uint32: 32-bit words, rotr / shr, `MultiEq`, addmany
- num: `Num` (AllocatedNum), to_bits_le, pack_bits, pack_into_inputs, pick, conditionally_reverse
- sha256: compression, sha256 (bellperson's gadget), replayed in scopes with `replay` set
- replay: record a gadget call once per signature, stamp its rows (constraint mode)
- poseidon: poseidon_hash (neptune's legacy circuit; the native hash is cuzk.hashes.poseidon)
- merkle: insert, por / root_from_path over Poseidon or SHA256 trees, hash_leaf_bits
"""

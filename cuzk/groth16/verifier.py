"""Groth16 verification, one proof or a batch, with bellperson's equation:

    e(A, B) = e(alpha, beta) e(IC, gamma) e(C, delta),   IC = ic_0 + sum_j x_j ic_{j+1}

checked as one product of pairings equal to 1 (negated alpha, gamma, delta precomputed).

Pairings come from py-arkworks-bls12381 rather than pyblst: both install from wheels here and cost
about the same per check (~1.4 ms vs ~1.2 ms for two pairs), but arkworks is already the project's
cross-check library, has `GT.pairing_check` over any number of pairs (what batch verification needs)
and multi-scalar multiplication, and imports affine points from coordinates without decompression
(`from_xy_bytes_unchecked_be`, on-curve check only) so that subgroup membership is checked once, by
cuzk's own vectorised test.
"""
from __future__ import annotations

import secrets
from collections.abc import Sequence

import numpy as np
import py_arkworks_bls12381 as ark

from cuzk.ff import limbs
from cuzk.ec.curves import G1, G2
from cuzk.errors import InputError
from cuzk.ff.fields import Fq, Fr
from cuzk.groth16.keys import VerifyingKey
from cuzk.groth16.proof import Proof
from cuzk.r1cs import fr_array

R = limbs.FR_MODULUS


def to_ark_g1(points: np.ndarray) -> list:
    """arkworks G1 points of an (n, 2, 6) affine array (x || y big-endian)."""
    raw = Fq.to_canonical_limbs(points.reshape(-1, 2, 6))[:, :, ::-1].astype(">u8").tobytes()
    return [ark.G1Point.from_xy_bytes_unchecked_be(raw[i:i + 96]) for i in range(0, len(raw), 96)]


def to_ark_g2(points: np.ndarray) -> list:
    """arkworks G2 points of an (n, 2, 2, 6) affine array (x.c0 || x.c1 || y.c0 || y.c1 big-endian)."""
    raw = Fq.to_canonical_limbs(points.reshape(-1, 2, 2, 6))[..., ::-1].astype(">u8").tobytes()
    return [ark.G2Point.from_xy_bytes_unchecked_be(raw[i:i + 192]) for i in range(0, len(raw), 192)]


class PreparedVerifyingKey:
    """A verifying key converted once for repeated verification."""

    def __init__(self, vk: VerifyingKey) -> None:
        self.vk = vk
        self.neg_alpha_g1 = to_ark_g1(G1.neg(vk.alpha_g1))[0]
        self.beta_g2, self.neg_gamma_g2, self.neg_delta_g2 = to_ark_g2(
            np.stack([vk.beta_g2, G2.neg(vk.gamma_g2), G2.neg(vk.delta_g2)]))
        self.ic = to_ark_g1(vk.ic)

    def input_sum(self, scalars: list[int], one: int = 1) -> object:
        """one * ic_0 + sum_j scalars[j] ic_{j+1} (arkworks G1)."""
        return ark.G1Point.multiexp_unchecked(self.ic, [ark.Scalar(v) for v in [one, *scalars]])


def prepare_verifying_key(vk: VerifyingKey) -> PreparedVerifyingKey:
    return PreparedVerifyingKey(vk)


def verify(vk: VerifyingKey | PreparedVerifyingKey, public_inputs, proof: Proof) -> bool:
    """Whether `proof` is valid for `public_inputs` (without ONE: ints in [0, r) or an (k, 4) Fr
    array). A proof whose points are off their prime-order subgroups is invalid. Arguments of the
    wrong type raise InputError."""
    return _check(_prepared(vk), [public_inputs], _proofs([proof]), [1])


def verify_batch(vk: VerifyingKey | PreparedVerifyingKey, public_inputs: Sequence, proofs: Sequence[Proof],
                 rng: np.random.Generator | None = None) -> bool:
    """Whether every proof is valid (public_inputs[i] belongs to proofs[i]), in one pairing check:
    with random 128-bit z_i, prod e(z_i A_i, B_i) = e((sum z_i) alpha, beta) e(sum z_i IC_i, gamma)
    e(sum z_i C_i, delta). A batch with an invalid proof passes with probability ~2^-128.
    `rng` fixes the z_i (tests only; by default they come from `secrets`)."""
    pvk = _prepared(vk)
    if not (_is_sequence(public_inputs) and _is_sequence(proofs)):
        raise InputError(f"public_inputs and proofs must be sequences, got {type(public_inputs).__name__} "
                         f"and {type(proofs).__name__}")
    if len(public_inputs) != len(proofs):
        raise InputError(f"{len(public_inputs)} public input lists for {len(proofs)} proofs")
    z = [int.from_bytes(rng.bytes(16) if rng else secrets.token_bytes(16), "little") | 1 for _ in proofs]
    return _check(pvk, public_inputs, _proofs(proofs), z)


def _prepared(vk: VerifyingKey | PreparedVerifyingKey) -> PreparedVerifyingKey:
    if isinstance(vk, PreparedVerifyingKey):
        return vk
    if not isinstance(vk, VerifyingKey):
        raise InputError(f"expected a VerifyingKey, got {type(vk).__name__}")
    return PreparedVerifyingKey(vk)


def _is_sequence(values) -> bool:
    return isinstance(values, (Sequence, np.ndarray)) and not isinstance(values, (str, bytes, bytearray))


def _proofs(proofs: Sequence) -> Sequence[Proof]:
    for i, p in enumerate(proofs):
        if not isinstance(p, Proof):
            raise InputError(f"proof {i} is a {type(p).__name__}, not a Proof (see Proof.from_bytes)")
    return proofs


def _check(pvk: PreparedVerifyingKey, public_inputs: Sequence, proofs: Sequence[Proof], z: list[int]) -> bool:
    if not proofs:
        return True
    inputs = [_public_ints(x, len(pvk.ic)) for x in public_inputs]
    a, b, c = (np.stack([getattr(p, f) for p in proofs]) for f in ("a", "b", "c"))
    if not (G1.in_subgroup(np.concatenate([a, c])).all() and G2.in_subgroup(b).all()):
        return False
    zs = [ark.Scalar(v) for v in z]
    g1s = [p * zi for p, zi in zip(to_ark_g1(a), zs)]
    g2s = to_ark_g2(b)
    z_sum = sum(z) % R
    combined = [sum(zi * x[j] for zi, x in zip(z, inputs)) % R for j in range(len(pvk.ic) - 1)]
    g1s += [pvk.neg_alpha_g1 * ark.Scalar(z_sum), pvk.input_sum(combined, z_sum),
            ark.G1Point.multiexp_unchecked(to_ark_g1(c), zs)]
    g2s += [pvk.beta_g2, pvk.neg_gamma_g2, pvk.neg_delta_g2]
    return bool(ark.GT.pairing_check(g1s, g2s))


def _public_ints(values, num_ic: int) -> list[int]:
    if not _is_sequence(values):
        raise InputError(f"public inputs must be a sequence of Fr values, got {type(values).__name__}")
    ints = Fr.to_ints(fr_array(values)) if len(values) else []
    if len(ints) + 1 != num_ic:
        raise InputError(f"the verifying key takes {num_ic - 1} public inputs, got {len(ints)}")
    return ints

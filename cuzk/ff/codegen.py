"""Generates cuzk/ff/limbs.py: straight-line Montgomery arithmetic for Fr and Fq as numba functions.

The element functions take and return tuples of uint64 limbs (little-endian, Montgomery form), so
numba keeps them in registers and other jitted code (curves, MSM, NTT) composes them freely. The
code is generated (unrolled loops, constants inlined) and committed so numba can cache it on disk.
Run `python -m cuzk.ff.codegen` after changing this file; a test checks the output is current.
"""
from __future__ import annotations

from pathlib import Path

# The moduli's one source: limbs.py's FR_MODULUS / FQ_MODULUS are generated from these.
R_MODULUS = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
Q_MODULUS = int(
    "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f624"
    "1eabfffeb153ffffb9feffffffffaaab",
    16,
)
FIELDS = {"fr": (R_MODULUS, 4), "fq": (Q_MODULUS, 6)}
TARGET = Path(__file__).with_name("limbs.py")


def limbs(x: int, n: int) -> list[int]:
    """The n little-endian 64-bit limbs of x, as generator-time Python ints. The run-time helpers
    (cuzk.ff.fields.int_limbs, PrimeField.const) live in fields, which imports the generated module;
    the generator imports nothing from cuzk.ff so that it runs when limbs.py is stale or missing."""
    return [(x >> (64 * i)) & (2**64 - 1) for i in range(n)]


def _tuple(names: list[str]) -> str:
    return "(" + ", ".join(names) + ",)"


def _field_source(f: str, p: int, n: int) -> str:
    F = f.upper()
    r = 1 << (64 * n)
    pinv = (-pow(p, -1, 2**64)) % 2**64
    a = [f"a{i}" for i in range(n)]
    b = [f"b{i}" for i in range(n)]
    t = [f"t{i}" for i in range(n)]
    P = [f"{F}_P{i}" for i in range(n)]
    out: list[str] = [f"# ---- {f}: {p.bit_length()}-bit prime, {n} limbs ----"]
    for i, v in enumerate(limbs(p, n)):
        out.append(f"{F}_P{i} = np.uint64({v:#x})")
    out.append(f"{F}_PINV = np.uint64({pinv:#x})")
    out.append(f"{F}_NLIMBS = {n}")
    out.append(f"{F}_MODULUS = {p:#x}")
    for name, val in (("ZERO", 0), ("ONE", r % p), ("R2", r * r % p), ("RAW_ONE", 1)):
        out.append(f"{F}_{name} = " + _tuple([f"np.uint64({v:#x})" for v in limbs(val, n)]))
    out.append(f"{F}_P = " + _tuple(P))
    out.append(f"{F}_P_MINUS_2 = " + _tuple([f"np.uint64({v:#x})" for v in limbs(p - 2, n)]))
    out.append("")

    def fn(sig: str, body: list[str]) -> None:
        out.append("@njit(cache=True)")
        out.append(f"def {f}_{sig}:")
        out.extend("    " + line for line in body)
        out.append("")

    unpack = [f"{', '.join(a)}, = a", f"{', '.join(b)}, = b"]
    fn("load(v)", ["return " + _tuple([f"v[{i}]" for i in range(n)])])
    fn("store(v, x)", [f"v[{i}] = x[{i}]" for i in range(n)])
    fn("is_zero(a)", ["return " + " and ".join(f"a[{i}] == 0" for i in range(n))])
    fn("eq(a, b)", ["return " + " and ".join(f"a[{i}] == b[{i}]" for i in range(n))])

    # a + b, then subtract p if the sum is >= p (2p < 2^(64n), so no carry leaves the top limb).
    body = unpack + ["c = Z"]
    body += [f"s{i}, c = adc(a{i}, b{i}, c)" for i in range(n)]
    body += ["br = Z"] + [f"d{i}, br = sbb(s{i}, {P[i]}, br)" for i in range(n)]
    # Branch-free select (random data mispredicts a branch): keep s when subtracting p borrowed.
    body += ["keep = Z - br"]
    body += ["return " + _tuple([f"d{i} ^ ((d{i} ^ s{i}) & keep)" for i in range(n)])]
    fn("add(a, b)", body)

    body = unpack + ["br = Z"] + [f"d{i}, br = sbb(a{i}, b{i}, br)" for i in range(n)]
    body += ["mask = Z - br", "c = Z"]  # add p back, branch-free, when the subtraction borrowed
    body += [f"d{i}, c = adc(d{i}, {P[i]} & mask, c)" for i in range(n)]
    body += ["return " + _tuple([f"d{i}" for i in range(n)])]
    fn("sub(a, b)", body)

    body = [f"{', '.join(a)}, = a", f"if {f}_is_zero(a):", "    return a", "br = Z"]
    body += [f"d{i}, br = sbb({P[i]}, a{i}, br)" for i in range(n)]
    body += ["return " + _tuple([f"d{i}" for i in range(n)])]
    fn("neg(a)", body)

    # Montgomery product, CIOS without the extra top word (p's top limb leaves a spare bit).
    body = list(unpack) + [f"{x} = Z" for x in t]
    for i in range(n):
        body.append(f"t0, A = mac(a0, b{i}, t0, Z)")
        body.append(f"m = t0 * {F}_PINV")
        body.append(f"_, C = mac(m, {P[0]}, t0, Z)")
        for j in range(1, n):
            body.append(f"t{j}, A = mac(a{j}, b{i}, t{j}, A)")
            body.append(f"t{j - 1}, C = mac(m, {P[j]}, t{j}, C)")
        body.append(f"t{n - 1} = C + A")
    body += ["br = Z"] + [f"d{i}, br = sbb(t{i}, {P[i]}, br)" for i in range(n)]
    body += ["if br:", "    return " + _tuple(t)]
    body += ["return " + _tuple([f"d{i}" for i in range(n)])]
    fn("mul(a, b)", body)

    fn("sqr(a)", [f"return {f}_mul(a, a)"])
    fn("dbl(a)", [f"return {f}_add(a, a)"])
    fn("to_mont(a)", [f"return {f}_mul(a, {F}_R2)"])
    fn("from_mont(a)", [f"return {f}_mul(a, {F}_RAW_ONE)"])
    # Square-and-multiply over a little-endian limb tuple exponent (plain integer, not Montgomery).
    fn("pow(a, e)", [
        f"acc = {F}_ONE",
        f"for i in range({n} - 1, -1, -1):",
        "    w = e[i]",
        "    for k in range(63, -1, -1):",
        f"        acc = {f}_sqr(acc)",
        "        if (w >> np.uint64(k)) & np.uint64(1):",
        f"            acc = {f}_mul(acc, a)",
        "return acc",
    ])
    fn("inv(a)", [f"return {f}_pow(a, {F}_P_MINUS_2)"])

    # Array kernels over (n, limbs) arrays, parallel over rows.
    def arr(name: str, args: str, expr: str) -> None:
        out.append("@njit(parallel=True, cache=True)")
        out.append(f"def {f}_{name}_arr({args}, out):")
        out.append("    for i in prange(out.shape[0]):")
        out.append(f"        {f}_store(out[i], {expr})")
        out.append("")

    for op in ("add", "sub", "mul"):
        arr(op, "a, b", f"{f}_{op}({f}_load(a[i]), {f}_load(b[i]))")
    for op in ("neg", "sqr", "inv", "to_mont", "from_mont"):
        arr(op, "a", f"{f}_{op}({f}_load(a[i]))")
    arr("pow", "a, e", f"{f}_pow({f}_load(a[i]), {f}_load(e))")
    # Montgomery's trick: one inversion for the whole array; zeros map to zero.
    out.extend([
        "@njit(cache=True)",
        f"def {f}_batch_inv_arr(a, out):",
        f"    acc = {F}_ONE",
        "    for i in range(a.shape[0]):",
        f"        x = {f}_load(a[i])",
        f"        {f}_store(out[i], acc)",
        f"        if not {f}_is_zero(x):",
        f"            acc = {f}_mul(acc, x)",
        f"    acc = {f}_inv(acc)",
        "    for i in range(a.shape[0] - 1, -1, -1):",
        f"        x = {f}_load(a[i])",
        f"        if {f}_is_zero(x):",
        f"            {f}_store(out[i], x)",
        "        else:",
        f"            {f}_store(out[i], {f}_mul(acc, {f}_load(out[i])))",
        f"            acc = {f}_mul(acc, x)",
        "",
    ])
    return "\n".join(out)


HEADER = '''"""GENERATED by cuzk/ff/codegen.py; do not edit. Montgomery arithmetic on uint64 limb tuples."""
# ruff: noqa
import numpy as np
from numba import njit, prange

from cuzk.ff.wide import adc, mac, sbb

Z = np.uint64(0)

'''


def generate() -> str:
    return HEADER + "\n".join(_field_source(f, p, n) for f, (p, n) in FIELDS.items())


if __name__ == "__main__":
    TARGET.write_text(generate())
    print(f"wrote {TARGET}")

"""Wide-integer primitives for numba: 64x64->128 multiply-accumulate and carry/borrow chains.

numba has no uint128, so these are LLVM intrinsics that widen to i128; LLVM lowers them to single
MUL/ADC/SBB instructions on x86-64.
"""
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_U64 = types.uint64
_PAIR = types.UniTuple(_U64, 2)
_I64 = ir.IntType(64)
_I128 = ir.IntType(128)


def _split(context, builder, sig, wide):
    lo = builder.trunc(wide, _I64)
    hi = builder.trunc(builder.lshr(wide, ir.Constant(_I128, 64)), _I64)
    return context.make_tuple(builder, sig.return_type, [lo, hi])


@intrinsic
def mac(typingctx, a, b, c, d):
    """(lo, hi) of a*b + c + d, all uint64 (never overflows 128 bits)."""
    sig = _PAIR(_U64, _U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        a, b, c, d = (builder.zext(x, _I128) for x in args)
        return _split(context, builder, sig, builder.add(builder.add(builder.mul(a, b), c), d))

    return sig, codegen


@intrinsic
def adc(typingctx, a, b, carry):
    """(sum, carry_out) of a + b + carry."""
    sig = _PAIR(_U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        a, b, c = (builder.zext(x, _I128) for x in args)
        return _split(context, builder, sig, builder.add(builder.add(a, b), c))

    return sig, codegen


@intrinsic
def sbb(typingctx, a, b, borrow):
    """(difference, borrow_out) of a - b - borrow; borrow_out is 0 or 1."""
    sig = _PAIR(_U64, _U64, _U64)

    def codegen(context, builder, signature, args):
        a, b, c = (builder.zext(x, _I128) for x in args)
        wide = builder.sub(builder.sub(a, b), c)
        lo = builder.trunc(wide, _I64)
        out = builder.trunc(builder.lshr(wide, ir.Constant(_I128, 127)), _I64)
        return context.make_tuple(builder, sig.return_type, [lo, out])

    return sig, codegen

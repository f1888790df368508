"""Typed errors raised by cuzk. Every error is a CuzkError; input errors are also ValueErrors."""


class CuzkError(Exception):
    """Base class of every error cuzk raises on purpose."""


class InputError(CuzkError, ValueError):
    """Input with the wrong shape, dtype, length or range."""


class NonCanonicalError(InputError):
    """A field element encoding that is not reduced modulo the field's prime."""


class BackendUnavailableError(CuzkError, RuntimeError):
    """The requested compute backend (e.g. CUDA) cannot run on this machine."""


def format_size(nbytes: int) -> str:
    """Bytes in GiB (two decimals), or in MiB below 0.1 GiB: the form sizes take in cuzk's messages."""
    return f"{nbytes / (1 << 30):.2f} GiB" if nbytes >= 0.1 * (1 << 30) else f"{nbytes / (1 << 20):.1f} MiB"


class DeviceError(CuzkError, RuntimeError):
    """A compute device failed (a CUDA error, its memory exhausted outside any budget): the device's
    fault, not the work's."""


class BudgetError(CuzkError, MemoryError):
    """Memory that a memory budget (host RAM, or VRAM of one GPU) cannot give, or a budget that cannot
    be set up (no host memory limit found, nothing left after the margin)."""


class BudgetExceededError(BudgetError):
    """A request larger than its whole budget, refused at once (it could never be admitted): says what
    it needs, what the budget is and where the budget came from."""

    def __init__(self, budget: str, what: str, needed: int, total: int, source: str) -> None:
        self.budget, self.what, self.needed, self.total, self.source = budget, what, needed, total, source
        super().__init__(f"{what} needs {format_size(needed)} of {budget}, more than the whole budget of "
                         f"{format_size(total)} (budget from {source}); it can never be admitted")


class BudgetTimeoutError(BudgetError, TimeoutError):
    """A request that waited its whole timeout for room in a budget: says what waited, for how long,
    what it needs, what was free of the total and how many earlier requests still waited before it."""

    def __init__(self, budget: str, what: str, needed: int, free: int, total: int, waited_s: float,
                 ahead: int = 0) -> None:
        self.budget, self.what, self.needed, self.free, self.total = budget, what, needed, free, total
        self.waited_s, self.ahead = waited_s, ahead
        queue = f", behind {ahead} earlier request(s) still waiting" if ahead else ""
        super().__init__(f"{what} waited {waited_s:.1f} s for {format_size(needed)} of {budget}: "
                         f"{format_size(free)} of {format_size(total)} free{queue}")


class VramBudgetError(BudgetError):
    """A GPU job whose estimated device memory does not fit the VRAM budget: says what the job needs,
    what the budget allows (and how much of it prepared bases already hold) and where it came from."""

    def __init__(self, what: str, needed: int, allowed: int, source: str, held: int = 0) -> None:
        self.what, self.needed, self.allowed, self.source, self.held = what, needed, allowed, source, held
        of_which = f", of which prepared bases hold {format_size(held)}" if held else ""
        super().__init__(f"{what} needs {format_size(needed)} of GPU memory, but the VRAM budget is "
                         f"{format_size(allowed)}{of_which} (budget from {source}); raise the cap "
                         "(memory.vram_budget or CUZK_VRAM_BUDGET) or use a GPU with more memory")


class ConfigError(CuzkError, ValueError):
    """A configuration file that cannot be read, is not TOML, or has an unknown key or a bad value;
    names the file and the dotted key (None when no one key is at fault)."""

    def __init__(self, source: str, key: str | None, reason: str) -> None:
        self.source, self.key, self.reason = source, key, reason
        super().__init__(f"{source}: " + (f"{key} {reason}" if key else reason))


class UnsatisfiedConstraintError(CuzkError):
    """A witness does not satisfy a constraint system; `index` is the first failing constraint."""

    def __init__(self, index: int, name: str | None = None) -> None:
        self.index, self.name = index, name
        super().__init__(f"constraint {index}" + (f" ({name})" if name else "") + " is not satisfied")


class UnallocatedVariableError(InputError):
    """A constraint names a variable that was never allocated (or belongs to a closed batch block)."""


class SynthesisError(CuzkError, RuntimeError):
    """A constraint system used out of order: a missing assignment, a block left open, the wrong mode."""


class InvalidPointError(InputError):
    """An encoded curve point that is not a valid group element; `index` is the offending point."""

    def __init__(self, index: int, reason: str) -> None:
        self.index, self.reason = index, reason
        super().__init__(f"point {index}: {reason}")


class NotOnCurveError(InvalidPointError):
    """Coordinates that do not satisfy the curve equation (or an x with no y on the curve)."""


class NotInSubgroupError(InvalidPointError):
    """A curve point outside the prime-order subgroup."""


class BadFlagsError(InvalidPointError):
    """zcash flag bits that are inconsistent with the encoding or with each other."""


class PointLengthError(InputError):
    """Encoded points whose total length is not a multiple of the point size."""


class BytesTypeError(InputError):
    """Something other than bytes, bytearray or memoryview (None, str, a list, an int...) where encoded
    bytes are expected."""


class ParamsFormatError(InputError):
    """A Groth16 parameter / verifying-key file (or buffer) that is truncated or corrupt at `offset`."""

    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path, self.offset, self.reason = path, offset, reason
        super().__init__(f"{path}: {reason} at byte offset {offset}")


class ParamsReadError(CuzkError, OSError):
    """A Groth16 parameter / verifying-key file that cannot be opened or read (missing, a directory,
    not a regular file, no permission, closed)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{path}: {reason}")


class ParameterMismatchError(InputError):
    """Groth16 parameters that do not belong to the circuit (or witness) they are used with."""


class ProofFormatError(InputError):
    """A serialized Groth16 proof that is not 192 bytes of three valid compressed points."""


class SetupError(CuzkError):
    """Groth16 setup cannot produce parameters for this circuit (e.g. an unconstrained variable)."""


class VanillaProofError(CuzkError, ValueError):
    """A PoRep vanilla proof that does not verify; names the partition, the challenge (its position in
    the partition) and the field that is wrong."""

    def __init__(self, partition: int | None, challenge: int | None, field: str, reason: str) -> None:
        self.partition, self.challenge, self.field, self.reason = partition, challenge, field, reason
        where = "".join([f"partition {partition} " if partition is not None else "",
                         f"challenge {challenge} " if challenge is not None else ""])
        super().__init__(f"{where}{field}: {reason}")


class C1FormatError(InputError):
    """A C1 output (SealCommitPhase1Output JSON) with a missing, malformed or inconsistent field;
    `field` is its path, e.g. vanilla_proofs.StackedDrg2KiBV1[0][1].comm_d_proofs.data.Single.root."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"C1 field {field}: {reason}")


class C1ReadError(CuzkError, OSError):
    """A C1 output file that cannot be opened or read (missing, a directory, not a regular file, a
    symlink loop, no permission, shorter than when opened); names the path. `errno` is the failure's
    where there is one, so callers catching OSError still see it."""

    def __init__(self, path: str, reason: str, errno: int | None = None) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"C1 output {path}: {reason}")
        self.errno, self.filename = errno, path

    def __str__(self) -> str:  # OSError's would be "[Errno n] ...", as errno is set
        return f"C1 output {self.path}: {self.reason}"


class SectorError(CuzkError):
    """A sector directory that is missing, incomplete or inconsistent with its metadata."""


class SectorFileError(SectorError):
    """A file of a sector directory that is missing, of the wrong size, dtype or shape, damaged (a .npy
    header, meta.json), changed while being read, or whose content disagrees with the rest of the
    sector; `path` names the file and `field` the meta.json field (None when no one field is at fault)."""

    def __init__(self, path: str, reason: str, field: str | None = None) -> None:
        self.path, self.reason, self.field = path, reason, field
        super().__init__(f"{path}: " + (f"{field}: " if field else "") + reason)


class ParentsCacheError(CuzkError):
    """A parents cache file that cannot be trusted or used: not a regular file, the wrong size, content
    that differs from its official or recorded SHA256 digest, a damaged digest record, a file that
    changed while being read, or one that cannot be written; names the path. Nothing is generated over
    an existing file (delete it to have it regenerated)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"parents cache {path}: {reason}")


class ParamsNotFoundError(CuzkError, FileNotFoundError):
    """No Groth16 parameters / verifying key (official or cuzk-generated) for a circuit; names where
    cuzk looked."""


class ProofVerificationError(CuzkError):
    """A freshly made proof that does not verify (cuzk never returns one); `partition` names it."""

    def __init__(self, partition: int, reason: str = "the proof does not verify") -> None:
        self.partition = partition
        super().__init__(f"partition {partition}: {reason}")


class InputTooLargeError(InputError):
    """A file (or buffer) larger than the limit for what it holds, refused before it is read whole."""

    def __init__(self, source: str, size: int | None, limit: int) -> None:
        self.source, self.size, self.limit = source, size, limit
        got = f"{size:,} bytes" if size is not None else "more bytes"
        super().__init__(f"{source}: {got}, more than the {limit:,} allowed")


class JsonFormatError(InputError):
    """JSON that is nested too deeply, not UTF-8 or not (strict) JSON; `offset` is the byte offset of
    the fault where it is known."""

    def __init__(self, source: str, offset: int | None, reason: str) -> None:
        self.source, self.offset, self.reason = source, offset, reason
        super().__init__(f"{source}: {reason}" + (f" at byte offset {offset}" if offset is not None else ""))


class FieldError(InputError):
    """A field of structured input (JSON) that is missing or has the wrong type, range or encoding;
    `field` names it."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"{field}: {reason}")


class ParamsCacheError(CuzkError):
    """A broken parameter-cache entry (a directory where a file belongs, an unreadable file, a cache
    directory that cannot be made); names the path. Nothing is generated over it."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"parameter cache {path}: {reason}")


class PceFileError(CuzkError):
    """A file of a compiled circuit (PCE) that cannot be used; names the path and why."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"PCE file {path}: {reason}")


class PceFormatError(PceFileError):
    """A PCE file that is corrupt or truncated (or changed while being read); `section` names the
    section at fault (None for the header and the layout) and `offset` the byte offset where known."""

    def __init__(self, path: str, reason: str, *, section: str | None = None, offset: int | None = None) -> None:
        self.section, self.offset = section, offset
        where = (f"section {section!r}" if section is not None else "") + (
            f" at byte offset {offset}" if offset is not None else "")
        super().__init__(path, f"{where.strip()}: {reason}" if where else reason)


class PceMismatchError(PceFileError):
    """A well-formed PCE file made for another circuit identity (shape, cuzk version, circuit digest)
    or in another format version; `differences` maps each differing field to (in the file, expected)."""

    def __init__(self, path: str, differences: dict[str, tuple[object, object]]) -> None:
        self.differences = differences
        super().__init__(path, "made for another circuit or format: " + "; ".join(
            f"{str(field)[:80]}: the file has {_cut(found)}, expected {_cut(want)}"
            for field, (found, want) in differences.items()))


def _cut(value: object, limit: int = 80) -> str:
    """repr(value), at most about `limit` characters (a message never grows with its input)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class PceReadError(PceFileError, OSError):
    """A PCE file that cannot be opened or read (a directory, not a regular file, no permission, an
    I/O error): reported, never moved aside or rebuilt over."""


class PceNotFoundError(PceReadError, FileNotFoundError):
    """No PCE file at the path."""

"""The SDR stacked graph: DRG bucket-sampling base parents, Feistel expansion parents, parents cache.

Follows rust-fil-proofs `storage-proofs-core/src/drgraph.rs`, `crypto/feistel.rs` and
`storage-proofs-porep/src/stacked/vanilla/{graph,cache}.rs`:
- base parents of node v >= 2 come from ChaCha8Rng (rand_chacha 0.3) seeded with
  SHA256("Filecoin_DRSample" || porep_id)[:28] || u32 LE(v); each of the 5 sampled parents draws two
  u64 (`next_u64` = two consecutive u32 output words, low word first). The predecessor v - 1 sits at
  index 5 (API 1.0) or 0 (API 1.1+). Nodes 0 and 1 have all-zero base parents.
- expansion parent i of v is permute(8v + i) / 8, a 3-round Feistel network over 2 * half_bits bits
  with round function Blake2b-512(u64 BE(right) || u64 BE(key))[:8] (BE) & right_mask, cycle-walking
  until below 8 * nodes; API 1.0 truncates the permuted index to u32 before dividing.
The round function only ever sees `right < 2**half_bits` (at most 2**17 values), so it is tabulated
once per round with hashlib and the permutation itself runs in numba. `SdrGraph.parents_of` derives
one node's parents in Python instead (vanilla proofs, public inputs: a few nodes, no tables).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numba import njit, prange

from cuzk.errors import InputError, ParentsCacheError
from cuzk.hashes import chacha
from cuzk.hashes.chacha import SIGMA, block_words
from cuzk.porep.registry import BASE_DEGREE, DEGREE, EXP_DEGREE, ApiVersion, RegisteredProof, get_proof
from cuzk.util.atomic import atomic_write
from cuzk.util.fileio import is_regular, open_regular, pread_into
from cuzk.util.progress import Progress

if TYPE_CHECKING:
    from cuzk.porep.challenges import PoRepConfig

DRSAMPLE_DST = b"Filecoin_DRSample"
FEISTEL_DST = b"Filecoin_Feistel"
FEISTEL_ROUNDS = 3
DRG_ROUNDS = 8  # ChaCha8Rng
PARENT_CACHE_VERSION = 28  # storage-proofs-core parameter_cache::VERSION
_TREE_HASHER = "poseidon_hasher"  # H::name() of the stacked graph's hasher in every registered proof

_M32 = np.uint64(0xFFFFFFFF)
_CHUNK = 4096  # nodes per parallel work item


def porep_domain_seed(dst: bytes, porep_id: bytes) -> bytes:
    """SHA256(domain separation tag || porep_id)."""
    return hashlib.sha256(dst + porep_id).digest()


# ---------------------------------------------------------------- DRG bucket sampling


@njit(cache=True, parallel=True)
def _base_parents_kernel(seed_words, start, stop, pred_first, out):
    """Base parents of nodes start..stop into out (stop - start, 6) uint32."""
    n = stop - start
    five = np.uint64(BASE_DEGREE - 1)
    one, two = np.uint64(1), np.uint64(2)
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        state = np.zeros(16, np.uint64)
        for i in range(4):
            state[i] = np.uint64(SIGMA[i])
        for i in range(7):
            state[4 + i] = seed_words[i]
        words = np.empty(32, np.uint64)
        for j in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            v = np.uint64(start + j)
            if v < two:
                for i in range(BASE_DEGREE):
                    out[j, i] = 0
                continue
            state[11] = v  # key word 7 = u32 LE(node)
            state[12] = np.uint64(0)  # block counter
            block_words(state, words, 0, DRG_ROUNDS)
            state[12] = one
            block_words(state, words, 16, DRG_ROUNDS)
            meta = v * five
            n_buckets = np.uint64(0)  # ceil(log2(meta)); meta = 5v is never a power of two
            t = meta
            while t:
                t >>= one
                n_buckets += one
            base = 1 if pred_first else 0
            for i in range(BASE_DEGREE - 1):
                r1 = words[4 * i] | (words[4 * i + 1] << np.uint64(32))
                r2 = words[4 * i + 2] | (words[4 * i + 3] << np.uint64(32))
                bucket = r1 % n_buckets + one
                largest = min(meta, one << bucket)
                smallest = max(two, largest >> one)
                distance = smallest + r2 % (largest - smallest + one)
                parent = (meta - distance) // five
                if parent == v:
                    parent = v - one
                out[j, base + i] = parent
            out[j, 0 if pred_first else BASE_DEGREE - 1] = v - one


# ---------------------------------------------------------------- Feistel expansion


def feistel_precompute(num_elements: int) -> tuple[int, int, int]:
    """(left_mask, right_mask, half_bits) for the smallest power of 4 >= num_elements (feistel.rs)."""
    next_pow4, log4 = 4, 1
    while next_pow4 < num_elements:
        next_pow4 *= 4
        log4 += 1
    return ((1 << log4) - 1) << log4, (1 << log4) - 1, log4


def feistel_round_table(key: int, half_bits: int) -> np.ndarray:
    """F(r, key) for every r < 2**half_bits: Blake2b-512(u64 BE r || u64 BE key)[:8] as BE u64, masked."""
    mask = (1 << half_bits) - 1
    key_be = key.to_bytes(8, "big")
    blake = hashlib.blake2b
    table = np.empty(1 << half_bits, np.uint64)
    for r in range(1 << half_bits):
        table[r] = int.from_bytes(blake(r.to_bytes(8, "big") + key_be).digest()[:8], "big") & mask
    return table


@njit(cache=True)
def _feistel_encode(index, tables, half_bits, left_mask, right_mask):
    left = (index & left_mask) >> half_bits
    right = index & right_mask
    for k in range(FEISTEL_ROUNDS):
        left, right = right, left ^ tables[k, right]
    return (left << half_bits) | right


@njit(cache=True, parallel=True)
def _exp_parents_kernel(tables, half_bits, num_elements, start, stop, truncate_u32, out):
    """Expansion parents of nodes start..stop into out (stop - start, 8) uint32."""
    n = stop - start
    hb = np.uint64(half_bits)
    right_mask = (np.uint64(1) << hb) - np.uint64(1)
    left_mask = right_mask << hb
    ne = np.uint64(num_elements)
    deg = np.uint64(EXP_DEGREE)
    for c in prange((n + _CHUNK - 1) // _CHUNK):
        for j in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            a0 = np.uint64(start + j) * deg
            for i in range(EXP_DEGREE):
                u = _feistel_encode(a0 + np.uint64(i), tables, hb, left_mask, right_mask)
                while u >= ne:
                    u = _feistel_encode(u, tables, hb, left_mask, right_mask)
                if truncate_u32:
                    u &= _M32
                out[j, i] = u // deg


# ---------------------------------------------------------------- the graph


@dataclass(frozen=True)
class SdrGraph:
    """The stacked DRG of one sector shape: `nodes` 32-byte nodes, porep_id, API version."""

    nodes: int
    porep_id: bytes
    api_version: ApiVersion

    def __post_init__(self) -> None:
        if not 1 <= self.nodes < 1 << 32:
            raise InputError(f"nodes must be in [1, 2**32), got {self.nodes}")
        if not isinstance(self.porep_id, bytes) or len(self.porep_id) != 32:
            raise InputError("porep_id must be 32 bytes")
        if not isinstance(self.api_version, ApiVersion):
            raise InputError(f"api_version must be an ApiVersion, got {self.api_version!r}")

    @classmethod
    def for_proof(cls, proof: RegisteredProof | int | str) -> SdrGraph:
        p = get_proof(proof)
        return cls(p.nodes, p.porep_id, p.api_version)

    @classmethod
    def for_config(cls, config: PoRepConfig) -> SdrGraph:
        """The graph of a PoRepConfig (cuzk.porep.challenges), which may name no registered proof."""
        return cls(config.nodes, config.porep_id, config.api_version)

    @property
    def drg_seed(self) -> bytes:
        return porep_domain_seed(DRSAMPLE_DST, self.porep_id)[:28]

    @property
    def feistel_keys(self) -> tuple[int, int, int, int]:
        raw = porep_domain_seed(FEISTEL_DST, self.porep_id)
        return tuple(int.from_bytes(raw[8 * i: 8 * i + 8], "little") for i in range(4))

    @cached_property
    def _feistel(self) -> tuple[np.ndarray, int]:
        half_bits = feistel_precompute(EXP_DEGREE * self.nodes)[2]
        tables = np.stack([feistel_round_table(k, half_bits) for k in self.feistel_keys[:FEISTEL_ROUNDS]])
        return tables, half_bits

    def _range(self, start: int, stop: int | None) -> tuple[int, int]:
        stop = self.nodes if stop is None else stop
        if not 0 <= start <= stop <= self.nodes:
            raise InputError(f"node range [{start}, {stop}) outside [0, {self.nodes})")
        return start, stop

    def base_parents(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """(stop - start, 6) uint32 DRG parents of nodes start..stop."""
        start, stop = self._range(start, stop)
        seed_words = np.frombuffer(self.drg_seed, "<u4").astype(np.uint64)
        out = np.empty((stop - start, BASE_DEGREE), np.uint32)
        _base_parents_kernel(seed_words, start, stop, self.api_version is not ApiVersion.V1_0_0, out)
        return out

    def expansion_parents(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """(stop - start, 8) uint32 expansion parents (in the previous layer) of nodes start..stop."""
        start, stop = self._range(start, stop)
        tables, half_bits = self._feistel
        out = np.empty((stop - start, EXP_DEGREE), np.uint32)
        _exp_parents_kernel(tables, half_bits, EXP_DEGREE * self.nodes, start, stop,
                            self.api_version is ApiVersion.V1_0_0, out)
        return out

    def parents(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """(stop - start, 14) uint32: 6 base parents then 8 expansion parents, as in the parents cache."""
        start, stop = self._range(start, stop)
        out = np.empty((stop - start, DEGREE), np.uint32)
        out[:, :BASE_DEGREE] = self.base_parents(start, stop)
        out[:, BASE_DEGREE:] = self.expansion_parents(start, stop)
        return out

    def parents_of(self, node: int) -> list[int]:
        """The 14 parents of one node (6 DRG, 8 expansion), as `parents` gives them, computed in
        Python without building the Feistel tables or launching the kernels (cheap for a few nodes)."""
        if not 0 <= node < self.nodes:
            raise InputError(f"node {node} outside [0, {self.nodes})")
        return self._base_parents_of(node) + [self._expansion_parent_of(node, i) for i in range(EXP_DEGREE)]

    def _base_parents_of(self, node: int) -> list[int]:
        """_base_parents_kernel for one node: ChaCha8 keyed by drg_seed || u32 LE(node), two blocks."""
        pred_first = self.api_version is not ApiVersion.V1_0_0
        base = [0] * BASE_DEGREE
        if node < 2:
            return base
        key = self.drg_seed + node.to_bytes(4, "little")
        stream = chacha.block(key, bytes(12), 0, DRG_ROUNDS) + chacha.block(key, bytes(12), 1, DRG_ROUNDS)
        words = np.frombuffer(stream, "<u4").tolist()
        meta = node * (BASE_DEGREE - 1)
        n_buckets = meta.bit_length()  # ceil(log2(meta)): 5v is never a power of two
        for i in range(BASE_DEGREE - 1):
            r1 = words[4 * i] | words[4 * i + 1] << 32
            r2 = words[4 * i + 2] | words[4 * i + 3] << 32
            largest = min(meta, 1 << (r1 % n_buckets + 1))
            smallest = max(2, largest >> 1)
            parent = (meta - smallest - r2 % (largest - smallest + 1)) // (BASE_DEGREE - 1)
            base[i + pred_first] = node - 1 if parent == node else parent
        base[0 if pred_first else BASE_DEGREE - 1] = node - 1
        return base

    @cached_property
    def _feistel_keys_be(self) -> tuple[bytes, ...]:
        return tuple(k.to_bytes(8, "big") for k in self.feistel_keys[:FEISTEL_ROUNDS])

    def _feistel_permute(self, x: int) -> int:
        """_feistel_encode with the round function evaluated by hashlib."""
        left_mask, right_mask, half = feistel_precompute(EXP_DEGREE * self.nodes)
        left, right = (x & left_mask) >> half, x & right_mask
        for key in self._feistel_keys_be:
            f = int.from_bytes(hashlib.blake2b(right.to_bytes(8, "big") + key).digest()[:8], "big")
            left, right = right, left ^ (f & right_mask)
        return left << half | right

    def _expansion_parent_of(self, node: int, i: int) -> int:
        """_exp_parents_kernel for one edge: permute(8 node + i), cycle-walked below 8 * nodes."""
        u = self._feistel_permute(EXP_DEGREE * node + i)
        while u >= EXP_DEGREE * self.nodes:
            u = self._feistel_permute(u)
        if self.api_version is ApiVersion.V1_0_0:  # API 1.0 truncates to u32
            u &= 0xFFFFFFFF
        return u // EXP_DEGREE

    @property
    def identifier(self) -> str:
        """ParameterSetMetadata::identifier() of rust's StackedBucketGraph<PoseidonHasher>."""
        base = (f"drgraph::BucketGraph{{size: {self.nodes}; degree: {BASE_DEGREE}; "
                f"hasher: {_TREE_HASHER}}}")
        return f"stacked_graph::StackedGraph{{expansion_degree: {EXP_DEGREE} base_graph: {base} }}"

    @property
    def cache_file_name(self) -> str:
        """Official cache file name (cache.rs `cache_path`): v28-sdr-parent-<hex SHA256 of the hasher
        name, the identifier, the 4 Feistel keys as u64 LE and u32 LE(nodes)>.cache."""
        h = hashlib.sha256(_TREE_HASHER.encode() + self.identifier.encode())
        for key in self.feistel_keys:
            h.update(key.to_bytes(8, "little"))
        h.update(self.nodes.to_bytes(4, "little"))
        return f"v{PARENT_CACHE_VERSION}-sdr-parent-{h.hexdigest()}.cache"


# ---------------------------------------------------------------- parents cache

ProofLike = SdrGraph | RegisteredProof | int | str

# SHA256 of each official cache file, by file stem (rust-fil-proofs' parent_cache.json manifest; the
# same table is tests/data/parent_cache.json)
OFFICIAL_DIGESTS = {
    "v28-sdr-parent-21981246c370f9d76c7a77ab273d94bde0ceb4e938292334960bce05585dc117":
        "93deeac5e3052b6927467d4b2641bb782f05491de18d510147c93eeedd8672da",
    "v28-sdr-parent-2aa9c77c3e58259481351cc4be2079cc71e1c9af39700866545c043bfa30fb42":
        "3adcc092423aa76d6a7184016893406da44dd974b219a89cd3ece25e4e3018f5",
    "v28-sdr-parent-3f0eef38bb48af1f48ad65e14eb85b4ebfc167cec18cd81764f6d998836c9899":
        "3da49221e2ed55371b86d0bf3d6526fcf128af61bed904f966428db1b531750d",
    "v28-sdr-parent-4905486b7af19558ac3649bc6261411858b6add534438878c4ee3b29d8b9de0b":
        "2698b74eb2606b55b98d8b095e18b6320b47f46e00075956d48640ccd1641b03",
    "v28-sdr-parent-494d91dc80f2df5272c4b9e129bc7ade9405225993af9fe34e6542a39a47554b":
        "840057702eea7652cf97e04306c30fe57174714d90de156a25eddd6075c25b97",
    "v28-sdr-parent-5eed212119fd91aa6220a27f31a8966444a9381842bceb3a1ea61525bd47a5b5":
        "03cd13565ded97c240a5f52e54295ad127bd0461b57904cb3a4d79b097bbecab",
    "v28-sdr-parent-7ba215a1d2345774ab90b8cb1158d296e409d6068819d7b8c7baf0b25d63dc34":
        "b5877d1963793efebc261fd8fde4dd6bc59e6b5c7abf52617a4ee023b8dc173a",
    "v28-sdr-parent-8a99e8d6b6be7ab87a56b632e6739ff201c23ea14e99737c74690f0e265574d6":
        "2778a732ad46a7dc18e0564dfdf59fd321dcde74ab476fd6d3c4e6735d7cd89c",
    "v28-sdr-parent-dcdabb0fbe4364bf0ac28b6a18c66de246409fa1a9020a00f33fb3e3053da6dc":
        "a76604f2f59f2744c7151653bbb1d8596b6b57d295e6fa6c1f0c41d725b502ce",
    "v28-sdr-parent-e1fa5d5b811ddbd118be3412c4a8c329156b8b8acc72632bca459455b5a05a13":
        "3c4f9841fcc75aed8c695800e58d08480629f25af3a2aefd81904181d75cc0b6",
}
DIGEST_SUFFIX = ".sha256"  # the digest record beside a cache cuzk built, in sha256sum's format
_RECORD_MAX = 4096
_READ_STEP = 1 << 26  # bytes per read (and hash update) of an existing cache


def _fill(graph: SdrGraph, out: np.ndarray, label: str) -> None:
    """Fill `out` with the graph's parents in steps of 2**20 nodes (smaller steps pay a large
    parallel-launch overhead); a progress bar goes to stderr once the fill has taken 2 s."""
    step = 1 << 20
    with Progress(f"parents cache {label}", total=graph.nodes, unit="node", unit_scale=True, delay=2.0) as bar:
        for lo in range(0, graph.nodes, step):
            hi = min(graph.nodes, lo + step)
            out[lo:hi] = graph.parents(lo, hi)
            bar.update(hi - lo)


def parents_cache(proof: ProofLike, path: str | os.PathLike | None = None) -> np.ndarray:
    """Parents cache of a registered proof (or any SdrGraph): (nodes, 14) uint32, base parents first,
    in memory the process owns (never a mapping: a file changed later cannot touch it).

    The file format is the official one: 14 u32 LE per node, nothing else. With `path` None the
    cache is built in memory. With `path` an existing directory the file is
    `path / graph.cache_file_name`; any other `path` names the file. An existing file is read whole
    and its SHA256 checked before it is returned: against the official digest for the graphs
    rust-fil-proofs lists (OFFICIAL_DIGESTS), else against the record `<file>.sha256` that cuzk
    wrote when it built the file, else (a file from elsewhere) against a fresh build, whose digest is
    then recorded. A wrong size or digest, a damaged record or a path that is not a regular file is a
    ParentsCacheError and nothing is built over it. A missing file is built, written atomically, and
    (for a graph without an official digest) its digest recorded beside it.
    """
    if isinstance(proof, SdrGraph):
        graph, label = proof, f"{proof.nodes} nodes"
    else:
        graph, label = SdrGraph.for_proof(proof), get_proof(proof).name
    if path is None:
        return _build(graph, label)
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"a parents cache path must be str or os.PathLike, got {type(path).__name__}")
    target = Path(path)
    if target.is_dir():
        target = target / graph.cache_file_name
    official = OFFICIAL_DIGESTS.get(graph.cache_file_name.removesuffix(".cache"))
    if os.path.lexists(target):
        return _load(graph, target, official, label)
    cache = _build(graph, label)
    try:
        atomic_write(target, memoryview(cache).cast("B"))
        if official is None:
            _write_record(target, _sha256(cache))
    except OSError as e:
        raise ParentsCacheError(str(target), f"cannot be written: {e.strerror or e}") from e
    return cache


def _build(graph: SdrGraph, label: str) -> np.ndarray:
    out = np.empty((graph.nodes, DEGREE), "<u4")
    _fill(graph, out, label)
    return out


def _sha256(cache: np.ndarray) -> str:
    return hashlib.sha256(memoryview(cache).cast("B")).hexdigest()


def _record_path(target: Path) -> Path:
    return target.with_name(target.name + DIGEST_SUFFIX)


def _write_record(target: Path, digest: str) -> None:
    atomic_write(_record_path(target), f"{digest}  {target.name}\n".encode())


def _read_record(target: Path) -> str | None:
    """The digest recorded beside `target`, None if there is no record (ParentsCacheError if damaged)."""
    record = _record_path(target)
    if not os.path.lexists(record):
        return None
    try:
        with open_regular(record) as (fd, st):
            if not is_regular(st):
                raise ParentsCacheError(str(record), "the digest record is not a regular file")
            raw = os.pread(fd, _RECORD_MAX, 0)
    except OSError as e:
        raise ParentsCacheError(str(record), f"the digest record cannot be read: {e.strerror}") from e
    digest = raw.split(maxsplit=1)[0] if raw.strip() else b""
    if len(digest) != 64 or digest.strip(b"0123456789abcdef"):
        raise ParentsCacheError(str(record), "the digest record is damaged (expected 64 lowercase hex digits)")
    return digest.decode()


def _load(graph: SdrGraph, target: Path, official: str | None, label: str) -> np.ndarray:
    """The existing cache file `target`, read into memory and checked (see parents_cache)."""
    name = str(target)
    out = np.empty((graph.nodes, DEGREE), "<u4")
    buf = memoryview(out).cast("B")
    h = hashlib.sha256()
    try:
        with open_regular(target) as (fd, st):
            if not is_regular(st):
                raise ParentsCacheError(name, "not a regular file")
            if st.st_size != len(buf):
                raise ParentsCacheError(name, f"{st.st_size:,} bytes, expected {len(buf):,} for {label} "
                                              "(14 u32 per node); delete it to have it rebuilt")
            for off in range(0, len(buf), _READ_STEP):
                part = buf[off:off + _READ_STEP]
                n = pread_into(fd, part, off)
                if n != len(part):
                    raise ParentsCacheError(name, f"truncated while being read: it ends at byte {off + n:,} "
                                                  f"of {len(buf):,}")
                h.update(part)
    except OSError as e:
        raise ParentsCacheError(name, f"cannot be read: {e.strerror}") from e
    got = h.hexdigest()
    want, source = (official, "official") if official is not None else (_read_record(target), "recorded")
    if want is None:
        want, source = _sha256(_build(graph, label)), "freshly built"
        if got == want:
            try:
                _write_record(target, got)
            except OSError as e:
                raise ParentsCacheError(name, f"the digest record cannot be written: {e.strerror}") from e
    if got != want:
        raise ParentsCacheError(name, f"wrong content: SHA256 {got[:16]}..., the {source} digest is "
                                      f"{want[:16]}...; delete it to have it rebuilt")
    return out

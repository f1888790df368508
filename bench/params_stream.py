"""A .params file streamed from disk to the GPU (cuzk.groth16.params_device.upload_params): GB/s of the
upload against the disk's own sequential read speed, cold (the file's pages dropped from the page
cache first) and, with --warm, from the page cache; --export also times writing the uploaded
vectors back out (export_params: encoded on the GPU, streamed in chunks).

    python -m bench.params_stream [--gib 16] [--dir /var/tmp] [--file PATH] [--chunk-mib 128]
                                  [--readers 4] [--warm] [--export] [--keep] [--out FILE]

Without --file a file of --gib GiB is generated in --dir: the vk of a small circuit's setup and the
five query vectors in the 32GiB partition's proportions (h 2^27 - 1, l, a, b_g1, b_g2 as
bench.setup_gpu's SIZES32), filled by repeating 4096 random valid G1 / G2 points (the upload checks
each point's encoding and curve equation, not what the key proves); it is removed afterwards unless
--keep. With --file (e.g. the official 32GiB file) that file is timed as it is. Every uploaded
vector's first and last 4096 points are compared with the host decoder's. The page cache is
dropped with POSIX_FADV_DONTNEED, which a tmpfs ignores (the file system type is printed). JSON
lines (bench "params_load", n = file bytes) go to stdout and, with --out, to that file; they are not
in ../shared/BENCH.md's table, so not written to bench/results.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import struct
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bench.common import command_line, device_name, gib
from bench.setup_gpu import A32, AUX32, B32

BLOCK = 4096  # distinct points per group in a generated file
SHAPE32 = {"h": (1 << 27) - 1, "l": AUX32, "a": A32, "b_g1": B32, "b_g2": B32}
PIECE = 64 << 20  # bytes per write of a generated file


def blocks(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """BLOCK random affine points per group (host layout)."""
    from cuzk.ec.curves import G1, G2
    from cuzk.ff.fields import Fr

    return {g: c.to_affine(c.scalar_mul(c.generator(), Fr.to_ints(Fr.random(BLOCK, rng))))
            for g, c in (("g1", G1), ("g2", G2))}


def generate(path: Path, total: int, pts: dict[str, np.ndarray], rng: np.random.Generator) -> dict[str, int]:
    """Write a .params file of about `total` bytes (see the module doc); its vector lengths."""
    from cuzk.ec.curves import G1, G2
    from cuzk.groth16 import setup, vk_to_bytes
    from cuzk.groth16.params import encode_points
    from cuzk.groth16.synthetic import synthetic_circuit
    from cuzk.util.atomic import atomic_write

    scale = total / sum(n * (192 if v == "b_g2" else 96) for v, n in SHAPE32.items())
    counts = {v: max(1, int(n * scale)) for v, n in SHAPE32.items()}
    vk = setup(synthetic_circuit(40, 2, rng), rng).vk
    encoded = {"g1": encode_points(G1, pts["g1"]), "g2": encode_points(G2, pts["g2"])}

    def pieces() -> Iterator[bytes]:
        yield vk_to_bytes(vk)
        for name, count in counts.items():
            block = encoded["g2" if name == "b_g2" else "g1"]
            yield struct.pack(">I", count)
            tile = block * max(1, PIECE // len(block))
            left = count * (len(block) // BLOCK)
            while left:
                yield tile[:min(left, len(tile))]
                left -= min(left, len(tile))

    atomic_write(path, pieces())
    return counts


def drop_cache(path: Path) -> None:
    """Ask the kernel to drop the file's pages from the page cache (clean pages go; dirty ones are
    written first by the fsync)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def fs_type(path: Path) -> str:
    """The file system type of the mount holding `path` (from /proc/mounts)."""
    best, kind = "", "unknown"
    target = str(path.resolve())
    with open("/proc/mounts") as f:
        for entry in f:
            _dev, mount, fstype, *_ = entry.split()
            if (target == mount or target.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best):
                best, kind = mount, fstype
    return kind


def disk_read(path: Path, chunk: int, readers: int) -> float:
    """Seconds to read the whole file sequentially in chunks, each split over `readers` threads (the
    upload's read pattern, with no device copy)."""
    from cuzk.util.fileio import pread_into

    size = path.stat().st_size
    bufs = [bytearray(chunk) for _ in range(readers)]
    part = -(-chunk // readers)
    fd = os.open(path, os.O_RDONLY)
    try:
        t = time.perf_counter()
        with ThreadPoolExecutor(readers) as pool:
            for off in range(0, size, chunk):
                n = min(chunk, size - off)
                jobs = [pool.submit(pread_into, fd, memoryview(bufs[j])[:min(part, n - s)], off + s)
                        for j, s in enumerate(range(0, n, part))]
                for job in jobs:
                    job.result()
        return time.perf_counter() - t
    finally:
        os.close(fd)


def check(params, path: Path) -> bool:
    """The first and last BLOCK points of every uploaded vector equal the host decoder's."""
    import cupy as cp

    from cuzk.ec import encoding
    from cuzk.ec.curves import G1, G2
    from cuzk.groth16 import read_params
    from cuzk.groth16.keys import PARAMS_VECTORS

    mapped = read_params(path, checked=False)
    try:
        for name in PARAMS_VECTORS:
            offset, count = mapped.section(name)
            curve, size = (G2, 192) if name == "b_g2" else (G1, 96)
            for lo in sorted({0, max(0, count - BLOCK)}):
                hi = min(count, lo + BLOCK)
                raw = bytearray((hi - lo) * size)
                mapped.read_raw(offset + lo * size, memoryview(raw))
                host = encoding.decode(curve, raw, compressed=False, check_subgroup=False)
                if not np.array_equal(cp.asnumpy(getattr(params, name)[lo:hi]), host):
                    return False
        return True
    finally:
        mapped.close()


def warm_up() -> None:
    """The decoder compiled (its module alone) and CuPy's own kernels loaded, before any timing."""
    from cuzk.backend import get_backend
    from cuzk.backend.cuda import loader

    loader.build(["params_points"], loader.arch())

    def zeros(pos: int, view: memoryview) -> None:
        view[:] = bytes(len(view))

    for group in ("g1", "g2"):  # one all-zero point: refused, which is all a warm-up needs
        get_backend("cuda").upload_points(zeros, 0, 1, group)


def upload(path: Path, chunk: int, readers: int, drop: bool):
    """(seconds, Parameters) of one upload_params, the device synchronized."""
    import cupy as cp

    from cuzk.groth16.params_device import upload_params

    t = time.perf_counter()
    params = upload_params(path, chunk_bytes=chunk, readers=readers, drop_cache=drop)
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t, params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=16.0, help="size of the generated file (GiB)")
    ap.add_argument("--dir", default="/var/tmp", help="where the generated (and the exported) file is written")
    ap.add_argument("--file", default=None, help="time this .params file instead of generating one")
    ap.add_argument("--chunk-mib", type=int, default=128)
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--warm", action="store_true", help="also time an upload from the page cache")
    ap.add_argument("--export", action="store_true", help="also time export_params of the uploaded vectors")
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="append the JSON lines to this file")
    args = ap.parse_args()
    import cupy as cp

    from cuzk.porep.params_cache import export_params

    rng = np.random.default_rng(args.seed)
    chunk = args.chunk_mib << 20
    generated = args.file is None
    path = Path(args.file) if args.file else Path(args.dir) / "cuzk-bench-stream.params"
    rows, note = [], ""
    try:
        if generated:
            t = time.perf_counter()
            counts = generate(path, int(args.gib * 2**30), blocks(rng), rng)
            wrote = time.perf_counter() - t
            rate = path.stat().st_size / wrote / 1e9
            note = f"generated file, vectors {counts}; written at {rate:.2f} GB/s (fsynced)"
            print(f"generated {path} ({gib(path.stat().st_size)} GiB) in {wrote:.1f} s", flush=True)
        size = path.stat().st_size
        print(f"{path}: {gib(size)} GiB on {fs_type(path)}; device {device_name('cuda')}", flush=True)
        warm_up()
        drop_cache(path)
        disk = disk_read(path, chunk, args.readers)
        print(f"disk read (cold, {args.readers} readers, {args.chunk_mib} MiB chunks): {disk:.2f} s, "
              f"{size / disk / 1e9:.2f} GB/s", flush=True)
        runs = [("cold", True)] + ([("warm", False)] if args.warm else [])
        for label, drop in runs:
            if drop:
                drop_cache(path)
                peer = disk
            else:
                disk_read(path, chunk, args.readers)  # into the page cache
                peer = disk_read(path, chunk, args.readers)
                print(f"read from the page cache: {size / peer / 1e9:.2f} GB/s", flush=True)
            seconds, params = upload(path, chunk, args.readers, drop)
            ok = check(params, path)
            print(f"upload ({label}): {seconds:.2f} s, {size / seconds / 1e9:.2f} GB/s, points equal to the host "
                  f"decoder's: {ok}", flush=True)
            rows.append({"bench": "params_load", "backend": "cuda", "device": device_name("cuda"), "n": size,
                         "ms": round(seconds * 1e3, 1), "gb_s": round(size / seconds / 1e9, 2), "cache": label,
                         "peer": f"sequential read of the file ({'cold' if drop else 'page cache'})",
                         "peer_ms": round(peer * 1e3, 1), "readers": args.readers,
                         "chunk_mib": args.chunk_mib, "equal_host": ok, "fs": fs_type(path),
                         "note": note or f"file {path}"})
            if args.export and label == "cold":
                t = time.perf_counter()
                files = export_params(params, args.dir, "bench-export")
                seconds = time.perf_counter() - t
                same = files.params.read_bytes() == path.read_bytes() if size < (1 << 30) else None
                print(f"export: {seconds:.2f} s, {size / seconds / 1e9:.2f} GB/s (fsynced)"
                      + (f", same bytes: {same}" if same is not None else ""), flush=True)
                rows[-1]["export_ms"] = round(seconds * 1e3, 1)
                files.params.unlink()
                files.vk.unlink()
            del params
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        if generated and not args.keep:
            path.unlink(missing_ok=True)
    today, command = dt.date.today().isoformat(), command_line()
    lines = [json.dumps({**{k: v for k, v in r.items() if v is not None}, "date": today, "command": command})
             for r in rows]
    print("\n".join(lines))
    if args.out:
        with open(args.out, "a") as f:
            f.write("".join(x + "\n" for x in lines))


if __name__ == "__main__":
    main()

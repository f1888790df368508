"""A bellperson .params file streamed straight to the GPU: the official 32GiB file (47 GB)
loads at about the disk's speed and never sits whole in host memory.

The verifying key and the section table are read and checked on the host, as read_params does. Each
query vector h, l, a, b_g1, b_g2 then goes from the file to the device in chunks through pinned
buffers and is decoded there (CudaBackend.upload_points, kernels/params/points.cu: big-endian affine
coordinates to Montgomery limbs), into cupy arrays in the layout the CUDA prover takes its bases in.
Points are checked as read_params(checked=False) checks them, the way cuzk.porep.params_cache reads
official files: no flag bits, coordinates below p, on the curve, not the identity; the subgroup is
not checked. The first bad point of a vector raises the ParamsFormatError the host reader raises for
it (the file, `vector[index]`, its byte offset and the reason, found by decoding that one point on
the host).
"""
from __future__ import annotations

import os
from functools import partial

from cuzk.backend import Backend, get_backend
from cuzk.errors import InputError
from cuzk.groth16.keys import PARAMS_VECTORS, Parameters
from cuzk.groth16.params import read_params


def upload_params(path: str | os.PathLike, backend: Backend | str = "cuda", *, drop_cache: bool = True,
                  **stream: int) -> Parameters:
    """The parameters of the .params file `path` with their query vectors on the device of `backend`
    (cupy arrays; the vk on the host). drop_cache: each part read is dropped from the page cache
    behind the reads, so streaming the file does not evict the host's other cached files (a
    sector's parents cache). `stream`: chunk_bytes / readers of CudaBackend.upload_points.
    ParamsReadError / ParamsFormatError as read_params; InputError for a backend other than cuda."""
    backend = get_backend(backend) if isinstance(backend, str) else backend
    if not hasattr(backend, "upload_points"):
        raise InputError(f"upload_params needs a backend that decodes points on its device (cuda), not {backend.name}")
    mapped = read_params(path, checked=False, keep=False)
    try:
        read = partial(mapped.read_raw, drop_cache=drop_cache)
        vectors = []
        for name in PARAMS_VECTORS:
            offset, count = mapped.section(name)
            points, bad = backend.upload_points(read, offset, count, "g2" if name == "b_g2" else "g1", **stream)
            if bad is not None:
                raise mapped.point_error(name, bad, "refused by the GPU decoder (the host decoder accepts it)")
            vectors.append(points)
        return Parameters(mapped.vk, *vectors)
    finally:
        mapped.close()

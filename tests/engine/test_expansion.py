"""A GPU worker's witness expansion (cuzk.engine.expansion): a device whose VRAM plan keeps witnesses
in host memory (VramPlan.witness_on_host, a tight cap) gets them there, equal to the device's."""
import numpy as np
import pytest

from backend.test_vram_plan import SHAPE  # tests/ is on the path
from cuzk.backend import get_backend
from cuzk.backend.cuda.vram_plan import plan_prover
from cuzk.engine.expansion import expanded, witness_on_host
from cuzk.engine.placement import Device
from cuzk.post import proving
from cuzk.post.registry import get_post_proof
from cuzk.post.synthetic import synthetic_post
from cuzk.util.arrays import to_host


def test_witness_on_host_follows_the_devices_plan():
    dev = Device("cuda:0", get_backend("cpu"), 1)
    assert not witness_on_host(dev, "c")  # no plan yet
    dev.plans["c"] = None  # no cap
    assert not witness_on_host(dev, "c")
    dev.plans["c"] = plan_prover(SHAPE, "12GiB")
    assert witness_on_host(dev, "c") and not witness_on_host(dev, "another circuit")
    dev.plans["c"] = plan_prover(SHAPE, "16GiB")
    assert not witness_on_host(dev, "c")


@pytest.mark.gpu
def test_a_witness_expanded_into_host_memory_equals_the_devices(rng):
    from cuzk.backend.cuda import cuda_available
    if not cuda_available():
        pytest.skip("no CUDA device")
    p = get_post_proof("StackedDrgWindow2KiBV1_2")
    s = synthetic_post(p, rng=rng, progress=False)
    packed = proving.post_witness(p, s.randomness, s.vanilla)()
    circuit, cuda = proving.post_circuit(p.circuit_shape), get_backend("cuda")
    on_device = expanded(circuit, [packed], cuda)
    on_host = expanded(circuit, [packed], cuda, to_host=True)
    assert not isinstance(on_device, np.ndarray) and isinstance(on_host, np.ndarray)
    assert np.array_equal(on_host, to_host(on_device))
    from_cpu = expanded(circuit, [packed], cuda, get_backend("cpu"), to_host=True)  # pipeline.gpu_witness off
    assert isinstance(from_cpu, np.ndarray) and np.array_equal(from_cpu, on_host)

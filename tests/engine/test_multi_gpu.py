"""One engine over several devices (cuzk.engine.engine: placement and failover), with distinct CPU
backends standing in for GPUs: the proofs equal those of one device (the blinding fixed by the witness,
as in test_batch); a circuit's items go to the device that holds it, two circuits to two devices, an
item whose holder is busy to an idle device; a device that faults is marked bad and its items fail over
(the fault in the log and the timeline), and with no healthy device left the job fails with
DeviceFaultError naming each device's fault. A gpu test builds a backend per visible CUDA device
(CUDA_VISIBLE_DEVICES) and proves the same small circuits on each, with the same result."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
import hashlib
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import numpy as np
import pytest

from cuzk import groth16
from cuzk.groth16 import partition
from cuzk.backend import device_backends, get_backend
from cuzk.backend.cpu import CpuBackend
from cuzk.engine import EngineConfig, MemoryBudget
from cuzk.engine.config import GpuConfig, MemoryConfig, PipelineConfig
from cuzk.engine.engine import DeviceFaultError, Engine, Job, Priority
from cuzk.engine.placement import Device, Item, place, share
from cuzk.engine.timeline import read_timeline, summary
from cuzk.errors import DeviceError, InputError
from cuzk.ff.fields import Fr
from cuzk.porep import program_witness
from cuzk.util.arrays import to_host
from engine import circuits
from engine.test_batch import PROVE, Gate, packed_tasks, program_spec, wait_released
from engine.test_engine import spec as inputs_spec
from engine.test_engine import tasks as inputs_tasks

FAULT = "injected GPU fault"


def fixed_rng(w) -> np.random.Generator:
    """Blinding fixed by the witness (host or device), so that a proof depends on its partition alone."""
    return np.random.default_rng(int.from_bytes(hashlib.sha256(to_host(w).tobytes()).digest()[:8]))


@pytest.fixture
def fixed(monkeypatch):
    """The engine's proofs with fixed blinding."""
    monkeypatch.setattr(partition, "prove", lambda params, circuit, w, backend, **kw:
                        PROVE(params, circuit, w, backend, rng=fixed_rng(w), **kw))


@pytest.fixture
def gate(monkeypatch):
    gate = Gate(PROVE)
    monkeypatch.setattr(partition, "prove", gate)
    return gate


@contextlib.contextmanager
def opened_at_exit(gate: Gate) -> Iterator[None]:
    """Let every call through the gate on leaving (before the engine's close, which waits for its
    workers), also when the test fails."""
    try:
        yield
    finally:
        gate.let(None)


class Faulty(CpuBackend):
    """A CPU backend that raises a DeviceError (as a failing GPU would) in its MSMs ("prove") or its
    witness program ("expand")."""

    def __init__(self, stage: str = "prove") -> None:
        self.stage = stage

    def msm_g1(self, bases, scalars):
        if self.stage == "prove":
            raise DeviceError(FAULT)
        return super().msm_g1(bases, scalars)

    def run_witness_program(self, pce, program, w) -> None:
        if self.stage == "expand":
            raise DeviceError(FAULT)
        super().run_witness_program(pce, program, w)


def make_engine(backends, timeline=None) -> Engine:
    cfg = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=1),
                       pipeline=PipelineConfig(max_parallel_synthesis=1, gpu_queue_depth=8, witness_batch=4),
                       memory=MemoryConfig(admission_timeout_s=30))
    return Engine(cfg, backend=backends, timeline=timeline, budget=MemoryBudget(1 << 34, "test RAM"))


def reference(engine: Engine, job: Job) -> bytes:
    """job's proof made one partition at a time on a CPU backend, with the same fixed blinding."""
    res, cpu = engine.preload(job.spec), get_backend("cpu")
    out = []
    for task in job.tasks:
        w = program_witness.expand(res.circuit, [task.synthesize()], cpu)[0]
        out.append(PROVE(res.params.params, res.circuit, w, cpu, rng=fixed_rng(w)).to_bytes())
    return b"".join(out)


def wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def proved_on(engine: Engine, job: Job) -> list[str]:
    """The device that proved each partition of `job` (its gpu_end event)."""
    where = {e["partition"]: e["device"] for e in engine.timeline if e["job"] == job.id and e["event"] == "gpu_end"}
    return [where[k] for k in range(len(job.tasks))]


def test_two_devices_prove_what_one_does_and_a_busy_holder_passes_work_on(gate):
    """cpu:0 holds the circuit but is held in a proof: the next job's items go to cpu:1 (idle, room)
    as well; every proof equals the one-partition-at-a-time reference."""
    with make_engine([CpuBackend(), CpuBackend()]) as e, opened_at_exit(gate):
        e.submit(program_spec(), packed_tasks(0, 1)).result(timeout=60)  # resident, calibrated, on cpu:0
        wait_for(lambda: all(d["busy"] == 0 for d in e.devices))
        gate.let(0)
        held = e.submit(program_spec(), packed_tasks(1, 1))
        gate.wait_blocked(2)
        job = e.submit(program_spec(), packed_tasks(2, 6))
        gate.wait_blocked(3)  # cpu:1 took one of its items (maybe with batchmates)
        wait_for(lambda: set(job.partition_state) == {"gpu_queue", "proving"})
        gate.let(None)
        proof = job.result(timeout=60)
        held.result(timeout=60)
        assert proof == reference(e, job)
        assert set(proved_on(e, job)) == {"cpu:0", "cpu:1"}
        assert [d["circuits"] for d in e.devices] == [["program"], ["program"]]
        wait_released(e)


def test_a_circuit_stays_on_its_device_and_two_circuits_spread(fixed):
    """One partition at a time (both devices idle at each): circuit a on cpu:0, b on cpu:1 (fewer
    circuits held), and each later item on the device that holds its circuit."""
    with make_engine([CpuBackend(), CpuBackend()]) as e:
        seen = []
        for key in ("a", "b", "a", "b", "b", "a"):
            job = e.submit(program_spec(key), packed_tasks(len(seen), 1))
            assert job.result(timeout=60) == reference(e, job)
            seen += [(key, *proved_on(e, job))]
            wait_for(lambda: all(d["busy"] == 0 for d in e.devices))
        assert seen == [(k, "cpu:0" if k == "a" else "cpu:1") for k in ("a", "b", "a", "b", "b", "a")]
        assert [d["circuits"] for d in e.devices] == [["a"], ["b"]]
        e.evict("a")
        assert [d["circuits"] for d in e.devices] == [[], ["b"]]


@pytest.mark.parametrize("stage", ["prove", "expand"])
def test_a_faulty_device_is_marked_bad_and_its_items_fail_over(fixed, stage, tmp_path, caplog):
    timeline = tmp_path / "timeline.jsonl"
    with caplog.at_level(logging.ERROR, "cuzk.engine"), make_engine([Faulty(stage), CpuBackend()], timeline) as e:
        jobs = [e.submit(program_spec(), packed_tasks(10 * j, 3)) for j in range(2)]
        for job in jobs:
            assert job.result(timeout=60) == reference(e, job)
            assert set(proved_on(e, job)) == {"cpu:1"}
        bad, good = e.devices
        assert bad["fault"] == f"DeviceError: {FAULT}" and good["fault"] is None
        faults = [ev for ev in e.timeline if "fault" in ev]
        assert faults and all(ev["device"] == "cpu:0" and ev["event"] == "synthesis_end" for ev in faults)
        assert any("device cpu:0 is bad" in r.getMessage() for r in caplog.records)
        wait_released(e)
    events = read_timeline(timeline)  # the extra keys keep the file readable
    assert all(job["proved"] == job["partitions"] for job in summary(events)["jobs"].values())


def test_with_every_device_bad_the_job_fails_naming_the_faults(fixed):
    with make_engine([Faulty(), Faulty("expand")]) as e:
        job = e.submit(program_spec(), packed_tasks(0, 2))
        with pytest.raises(DeviceFaultError, match=rf"{job.id} partition 0: no healthy device") as err:
            job.result(timeout=60)
        assert err.value.faults == {"cpu:0": f"DeviceError: {FAULT}", "cpu:1": f"DeviceError: {FAULT}"}
        with pytest.raises(DeviceFaultError, match="cpu:0: DeviceError"):
            e.submit(program_spec(), packed_tasks(0, 1))
        wait_released(e)


def test_mark_bad_moves_the_work_and_fails_what_no_device_can_take(gate):
    with make_engine([CpuBackend(), CpuBackend()]) as e, opened_at_exit(gate):
        with pytest.raises(InputError, match="cpu:0, cpu:1"):
            e.mark_bad("cuda:0")
        e.mark_bad("cpu:0")
        job = e.submit(inputs_spec(), inputs_tasks(1, 2))
        job.result(timeout=60)
        assert set(proved_on(e, job)) == {"cpu:1"}
        gate.let(0)
        job = e.submit(inputs_spec(), inputs_tasks(2, 2))
        gate.wait_blocked(3)  # partition 0 on cpu:1, partition 1 waits
        wait_for(lambda: job.partition_state[1] == "gpu_queue")
        e.mark_bad("cpu:1", "pulled for maintenance")
        with pytest.raises(DeviceFaultError, match="partition 1: no healthy device can take it: "
                                                   "cpu:0: marked bad by an operator; cpu:1: pulled for maintenance"):
            job.result(timeout=60)
        gate.let(None)
        wait_released(e)


def test_each_device_needs_a_backend_of_its_own():
    be = CpuBackend()
    with pytest.raises(InputError, match="one backend of its own per device"):
        make_engine([be, be])


# ---- the placement policy on stand-in devices (no engine) -----------------------------------------
@dataclass
class StandInGpu:
    """What placement reads of a GPU backend: its ordinal and whether its VRAM budget has room."""

    device: int
    held: int
    budget: int
    name: str = "cuda"

    def has_room(self, nbytes: int) -> bool:
        return self.held + nbytes <= self.budget


def cuda_device(ordinal: int, held: int = 0, budget: int = 100, busy: int = 0, circuits=(), fault=None) -> Device:
    return Device(f"cuda:{ordinal}", StandInGpu(ordinal, held, budget), 2, busy, set(circuits), fault)


def circuit(key: str = "a", gpu_bytes: int = 40, device: int | None = None) -> SimpleNamespace:
    return SimpleNamespace(key=key, gpu_bytes=gpu_bytes, device=device)


def test_placement_prefers_an_idle_holder_then_room_then_the_least_loaded():
    d0, d1, d2 = cuda_device(0, circuits={"a"}, busy=1), cuda_device(1), cuda_device(2, held=80)
    assert place([d0, d1, d2], circuit()) is d0  # an idle holder, though busier
    d0.busy = 2
    assert place([d0, d1, d2], circuit()) is d1  # the holder is busy: an idle device with room (not d2)
    d1.backend.held = 90
    assert place([d0, d1, d2], circuit()) is None  # no idle device has room: wait for the holder
    assert place([d1, d2], circuit()) is d1  # nobody holds it: the least loaded (fewer circuits) evicts
    d1.circuits.add("b")
    assert place([d1, d2], circuit()) is d2
    d2.fault = "RuntimeError: lost"
    assert place([d2], circuit()) is None
    assert place([d0, d1, cuda_device(3)], circuit(device=3)).name == "cuda:3"  # parameters on cuda:3
    assert place([d0, d1], circuit(device=3)) is None
    cpu = Device("cpu:0", CpuBackend(), 1)
    assert place([cpu], circuit(gpu_bytes=1 << 60)) is cpu  # a host backend has no VRAM limit


def test_a_batch_takes_its_share_of_the_waiting_items():
    d0, d1, d2 = cuda_device(0, busy=1, circuits={"a"}), cuda_device(1), cuda_device(2, held=90)
    res = circuit()
    job = Job("job-1", program_spec("a"), [], Priority.POREP)
    packed = program_witness.PackedWitness(*(np.zeros((1, 4), np.uint64),) * 3)
    head, *queue = [Item(2, i, job, i, witness=packed, res=res) for i in range(7)]
    assert share([d0, d1, d2], d0, head, queue) == 4  # 7 between d0 and d1 (d2 has no room)
    d1.fault = "RuntimeError: lost"
    assert share([d0, d1, d2], d0, head, queue) == 7


# ---- real GPUs --------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_every_visible_gpu_proves_the_same(fixed):
    """device_backends builds one backend per visible device, each bound to its ordinal; the same jobs
    (a packed witness expanded on the device, and a host witness) give the same proofs on each device
    alone and on all of them in one engine; CUDA_VISIBLE_DEVICES=<last> leaves that device alone, as
    ordinal 0."""
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    backends = device_backends("cuda")
    assert [be.device for be in backends] == list(range(count))
    results = []
    for devices in [[be] for be in backends] + [backends]:
        with make_engine(devices) as e:
            jobs = [e.submit(program_spec(), packed_tasks(3, 4)), e.submit(inputs_spec(), inputs_tasks(5, 2))]
            results.append([job.result(timeout=600) for job in jobs])
            assert results[-1][0] == reference(e, jobs[0])
    assert all(r == results[0] for r in results)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    last = visible.split(",")[-1] if visible else str(count - 1)
    probe = ("import cupy; from cuzk.backend import device_backends; "
             "print(*[be.device for be in device_backends('cuda')], cupy.cuda.Device(0).pci_bus_id)")
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "CUDA_VISIBLE_DEVICES": last},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", cupy.cuda.Device(count - 1).pci_bus_id]


@pytest.mark.gpu
def test_a_warm_engine_builds_nothing_at_its_first_proof(fixed, caplog):
    """Engine.warm makes a circuit's MSM tables and witness program on its GPU: the first proof then
    makes no table and uploads no program (each is logged by cuzk.cuda when made), and is the proof
    the CPU makes."""
    backend = device_backends("cuda")[0]

    def made() -> list[str]:
        return [r.getMessage() for r in caplog.records if "made in" in r.getMessage() or "uploaded" in r.getMessage()]

    with make_engine([backend]) as e, caplog.at_level(logging.INFO, logger="cuzk.cuda"):
        params = e.warm(program_spec("warm")).params.params
        vectors = [v for v in (params.h, params.l, params.a, params.b_g1, params.b_g2) if len(v)]
        assert sorted(made(), key=lambda m: "uploaded" in m)[-1].startswith("cuda: witness program")
        assert sum("table" in m for m in made()) == len(vectors)
        caplog.clear()
        job = e.submit(program_spec("warm"), packed_tasks(3, 2))
        assert job.result(timeout=600) == reference(e, job)
        assert made() == []


def test_the_blank_pack_fits_its_circuit():
    """program_witness.blank: ONE and zeros, which the program circuit expands to ONE and zeros."""
    circuit = circuits.program_compiled()
    w = program_witness.expand(circuit, [program_witness.blank(circuit)], get_backend("cpu"))[0]
    assert w.shape == (circuit.num_columns, 4)
    assert np.array_equal(w[0], Fr.ones(1)[0]) and not w[1:].any()


def test_a_rehearsal_leaves_no_trace_in_jobs(fixed, caplog):
    """Engine.warm(rehearse=True) proves once from the blank witness (logged), with no timeline event,
    and the jobs after it get the proofs the CPU makes."""
    with make_engine([CpuBackend()]) as e, caplog.at_level(logging.INFO, logger="cuzk.engine"):
        e.warm(program_spec("rehearse"), rehearse=True)
        assert [r.getMessage() for r in caplog.records if "rehearsed a proof of rehearse on" in r.getMessage()]
        assert e.timeline == []
        job = e.submit(program_spec("rehearse"), packed_tasks(3, 2))
        assert job.result(timeout=600) == reference(e, job)


def test_a_circuit_without_a_witness_program_rehearses_from_one_alone(caplog):
    """A circuit with no witness program (here a Circuit of a ConstraintSystem) is rehearsed from ONE and
    zeros; its jobs are proven as before."""
    with make_engine([CpuBackend()]) as e, caplog.at_level(logging.INFO, logger="cuzk.engine"):
        e.warm(inputs_spec("rehearse-plain"), rehearse=True)
        assert [r for r in caplog.records if "rehearsed a proof of rehearse-plain on" in r.getMessage()]
        job = e.submit(inputs_spec("rehearse-plain"), inputs_tasks(3, 2))
        assert len(job.result(timeout=600)) == 2 * groth16.PROOF_BYTES


def test_warm_on_a_host_engine_only_loads(caplog):
    with make_engine([CpuBackend()]) as e, caplog.at_level(logging.INFO, logger="cuzk.engine"):
        res = e.warm(program_spec("warm-host"))
        assert e.preload(program_spec("warm-host")) is res
        assert not [r for r in caplog.records if "rehearsed" in r.getMessage()]


@pytest.mark.gpu
def test_host_expanded_witnesses_are_proven_from_the_gpu(fixed):
    """With pipeline.gpu_witness off the packed witnesses are expanded on the host's cores and copied to
    the GPU once (the prover's vectors then stay there): the proofs are the CPU's."""
    cfg = EngineConfig(gpus=GpuConfig(gpu_workers_per_device=1),
                       pipeline=PipelineConfig(max_parallel_synthesis=1, gpu_queue_depth=8, witness_batch=4,
                                               gpu_witness=False),
                       memory=MemoryConfig(admission_timeout_s=30))
    with Engine(cfg, backend=device_backends("cuda")[:1], budget=MemoryBudget(1 << 34, "test RAM")) as e:
        job = e.submit(program_spec("host-expanded"), packed_tasks(7, 3))
        assert job.result(timeout=600) == reference(e, job)

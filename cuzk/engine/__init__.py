"""The engine: Engine (synthesis processes feeding GPU workers, cuzk.engine.engine), its configuration
(TOML) and the memory budgets every work item reserves from before it starts (host RAM: the smallest
of the configured cap, the cgroup limit and MemTotal, minus a margin)."""
from cuzk.engine.budget import HostLimit, LimitSource, MemoryBudget, Reservation, host_limit
from cuzk.engine.engine import CircuitSpec, Engine, Job, JobCancelledError, Priority, Task
from cuzk.engine.config import (EngineConfig, GpuConfig, MemoryConfig, PipelineConfig, SrsConfig,
                                load_config)

__all__ = ["CircuitSpec", "Engine", "Job", "JobCancelledError", "Priority", "Task", "EngineConfig", "GpuConfig", "HostLimit", "LimitSource", "MemoryBudget", "MemoryConfig",
           "PipelineConfig", "Reservation", "SrsConfig", "host_limit", "load_config"]

"""curio's keys onto cuzk's fields (cuzk.engine.config): the values read from a file and the
environment settled into the fields' values, each curio key that sets one of cuzk's keys applied as
curio means it, and one warning for each key cuzk checks and ignores. Setting one of curio's keys and
the key of cuzk's it sets is a ConfigError naming both."""
from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from cuzk.engine.config_values import Values
from cuzk.errors import ConfigError

if TYPE_CHECKING:
    from cuzk.engine.config import EngineConfig

CURIO_SAFETY_MARGIN = 5 << 30  # curio's memory.safety_margin when its total_budget is "auto": 5GiB
log = logging.getLogger("cuzk.engine.config")  # the configuration's warnings, under one logger


class Fields:
    """The fields' values being settled from the values read, and where each came from."""

    def __init__(self, values: Values, curio: Collection[str], defaults: EngineConfig) -> None:
        self.read = values
        self.defaults = defaults
        self.values = {d: v for d, (v, _) in values.items() if d not in curio}
        self.sources = {d: o.shown() for d, (_, o) in values.items() if d not in curio}

    def value(self, dotted: str) -> Any:
        """A field's value: as set, else its default."""
        table, key = dotted.split(".")
        return self.values.get(dotted, getattr(getattr(self.defaults, table), key))

    def exclusive(self, curio: str, cuzk: str) -> None:
        """ConfigError naming both when curio's key and cuzk's are both set."""
        if curio in self.read and cuzk in self.read:
            mine, theirs = self.read[curio][1], self.read[cuzk][1]
            where = "" if theirs.source == mine.source else f" ({theirs.shown()})"
            raise ConfigError(mine.source, mine.name, f"and {theirs.name}{where} are both set (curio's key and "
                                                      "cuzk's for one setting): keep one")

    def put(self, dotted: str, value: Any, curio: str) -> None:
        """Set a field from curio's key `curio` (ConfigError when the field is set too)."""
        self.exclusive(curio, dotted)
        origin = self.read[curio][1]
        self.values[dotted] = value
        self.sources[dotted] = origin.shown() if origin.source == "environment" else f"{origin.source} ({curio})"


def _settle_memory(fields: Fields) -> None:
    """memory.total_budget, safety_margin and eviction_min_idle, as curio means them, onto cuzk's keys."""
    read = fields.read
    fields.exclusive("memory.total_budget", "memory.host_cap")
    budget = read.get("memory.total_budget", (None, None))[0]
    if budget is not None:  # a size: no margin below it, as in curio
        fields.put("memory.host_cap", budget, "memory.total_budget")
        fields.put("memory.host_margin", 0, "memory.total_budget")
        if "memory.safety_margin" in read:
            origin = read["memory.safety_margin"][1]
            log.warning('%s: %s has no effect with memory.total_budget a size (curio subtracts it only from '
                        '"auto")', origin.source, origin.name)
    elif "memory.safety_margin" in read:
        fields.put("memory.host_margin", read["memory.safety_margin"][0], "memory.safety_margin")
    elif "memory.total_budget" in read and "memory.host_margin" not in read:
        fields.put("memory.host_margin", CURIO_SAFETY_MARGIN, "memory.total_budget")
    if "memory.eviction_min_idle" in read:
        fields.put("memory.eviction_min_idle_s", read["memory.eviction_min_idle"][0], "memory.eviction_min_idle")


def _settle_pipeline(fields: Fields) -> None:
    """synthesis.threads and pipeline.max_gpu_queue_depth, as curio means them, onto cuzk's keys."""
    read = fields.read
    fields.exclusive("synthesis.threads", "pipeline.synthesis_threads")
    threads = read.get("synthesis.threads", (0, None))[0]
    if threads:
        per_process = max(1, threads // fields.value("pipeline.max_parallel_synthesis"))
        fields.put("pipeline.synthesis_threads", per_process, "synthesis.threads")
    depth = read.get("pipeline.max_gpu_queue_depth", (0, None))[0]
    if depth and fields.values.get("pipeline.gpu_queue_depth") != depth:  # set and equal: nothing to do
        fields.put("pipeline.gpu_queue_depth", depth, "pipeline.max_gpu_queue_depth")


def settle(values: Values, curio: Mapping[str, str], ignored: Collection[str], defaults: EngineConfig) -> Fields:
    """The fields `values` set, curio's keys mapped onto cuzk's; one warning per ignored key.
    curio: curio's keys that are no fields of cuzk's -> what each does in cuzk (CURIO_KEYS); ignored:
    those of them that are checked, then ignored; defaults: the configuration at its defaults."""
    for dotted, (_, origin) in values.items():
        if dotted in ignored:
            log.warning("%s: %s %s", origin.source, origin.name, curio[dotted])
    fields = Fields(values, curio, defaults)
    _settle_memory(fields)
    _settle_pipeline(fields)
    return fields

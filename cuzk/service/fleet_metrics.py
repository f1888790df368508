"""The fleet's Prometheus metrics under `cuzk daemon --cluster` (from the "fleet" of ClusterEngine.stats,
cuzk.cluster.fleet.Fleet.status): members per state, and per member its liveness, heartbeat age,
partitions on it, proofs, failures and restarts, labelled by member (node id/GPU) and host."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

PER_MEMBER = {"in_flight": (GaugeMetricFamily, "cuzk_fleet_member_partitions", "Partitions the front has on the member"),
              "proofs": (CounterMetricFamily, "cuzk_fleet_member_proofs", "Partitions the member proved"),
              "failures": (CounterMetricFamily, "cuzk_fleet_member_failures",
                           "Partitions the member lost or failed (its node or process died, its device failed)"),
              "restarts": (CounterMetricFamily, "cuzk_fleet_member_restarts", "Times Ray restarted the member's process")}


def fleet_metrics(fleet: dict[str, Any]) -> Iterator[Metric]:
    """The metric families of a Fleet.status document."""
    states = GaugeMetricFamily("cuzk_fleet_members", "Fleet members (one prover per GPU) per state", labels=["state"])
    for state, n in fleet["counts"].items():
        states.add_metric([state], n)
    yield states
    labels = ["member", "host"]
    up = GaugeMetricFamily("cuzk_fleet_member_up", "1 while the member is ready for work", labels=labels)
    beat = GaugeMetricFamily("cuzk_fleet_member_heartbeat_age_seconds", "Seconds since the member's last heartbeat",
                             labels=labels)
    families = {key: kind(name, text, labels=labels) for key, (kind, name, text) in PER_MEMBER.items()}
    for row in fleet["members"]:
        ids = [row["member"], row["host"]]
        up.add_metric(ids, 1.0 if row["state"] == "ready" else 0.0)
        if row["last_heartbeat_s_ago"] is not None:
            beat.add_metric(ids, row["last_heartbeat_s_ago"])
        for key, family in families.items():
            family.add_metric(ids, row[key])
    yield from (up, beat, *families.values())

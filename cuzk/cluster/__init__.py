"""A fleet of GPU hosts as one prover, on Ray: cuzk.cluster.front.ClusterEngine (the daemon's engine
under `cuzk daemon --cluster ...`) places partitions on one prover actor per GPU of each Ray node
(cuzk.cluster.prover), re-places those of a lost node, and keeps the fleet's state (cuzk.cluster.fleet)
for /status, /metrics and `cuzk fleet status`. Ray is an optional extra: pip install "cuzk[cluster]"."""

"""cuzk: a Python-native GPU Groth16 proving engine for Filecoin Proof-of-Replication."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cuzk")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"

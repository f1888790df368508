# Generated-code package for the cuzk.v1 gRPC contract (curio's cuzk daemon, wire-compatible).
#
# Generated with: grpcio-tools 1.85.1 (bundled libprotoc 35.1, Python gencode "Protobuf Python
# Version: 7.35.1"), against the runtime grpcio 1.85.3 and protobuf 7.36.2, on CPython 3.11.7.
# Runtime needs: grpcio>=1.85.1 (proving_pb2_grpc.py refuses older: GRPC_GENERATED_VERSION) and
# protobuf>=7.35.1,<8 (proving_pb2.py calls ValidateProtobufRuntimeVersion(7, 35, 1); a runtime
# older than the gencode raises VersionError). grpcio-tools is needed only to regenerate.
#
# Layout: the source is cuzk/v1/proving.proto under this folder, so its descriptor-pool name is
# "cuzk/v1/proving.proto" (as upstream's, whose include root is proto/). Regenerate from the
# repository root with
#   python -m grpc_tools.protoc -I cuzk/service/proto --python_out=cuzk/service/proto \
#       --grpc_python_out=cuzk/service/proto cuzk/service/proto/cuzk/v1/proving.proto
# and then make proving_pb2_grpc.py import its message module relatively: replace
# `from cuzk.v1 import proving_pb2 as` by `from . import proving_pb2 as` (the generated absolute
# name would resolve to this project's top-level `cuzk` package). tests/service/test_proto.py
# regenerates into a temporary folder and fails if the checked-in modules differ.
"""The generated cuzk.v1 protobuf and gRPC modules: `proving_pb2` (messages, enums) and
`proving_pb2_grpc` (ProvingEngineStub, ProvingEngineServicer, add_ProvingEngineServicer_to_server)."""
from cuzk.service.proto.cuzk.v1 import proving_pb2, proving_pb2_grpc

__all__ = ["proving_pb2", "proving_pb2_grpc"]

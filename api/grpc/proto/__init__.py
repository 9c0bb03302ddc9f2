"""The gRPC contract `loregate.proto`, compiled when first imported: no generated code is kept or edited.

`grpc.protos_and_services` runs grpcio-tools' protoc in-process and imports the result. It resolves the
`.proto` through `sys.path`, so the directory holding the `api` package is put on it: site-packages for an
installed wheel (already there), the project directory for an editable install (whose import hook does not
expose plain files).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc

__all__ = ["PROTO_FILE", "pb2", "pb2_grpc"]

PROTO_FILE = "api/grpc/proto/loregate.proto"

_root = str(Path(__file__).resolve().parents[3])
if _root not in sys.path:
    sys.path.append(_root)

_protos, _services = grpc.protos_and_services(PROTO_FILE)
pb2: Any = _protos
pb2_grpc: Any = _services
assert isinstance(pb2, ModuleType) and isinstance(pb2_grpc, ModuleType)

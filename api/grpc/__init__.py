"""The gRPC gateway: `loregate.v1.Loregate` over the same use cases as HTTP."""

# The protobuf and gRPC modules of schema/zkfleet.proto and
# schema/grpc/zkfleet_v1.proto, committed as protoc writes them:
# clients/python/regenerate.py remakes them after a schema change
# (tests/python/test_generated_modules.py fails while they are stale).

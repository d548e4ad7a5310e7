# Generated protobuf modules (zkfleet_pb2.py from schema/zkfleet.proto), made by
# scripts/install-deps.sh and by the CMake build (target zkfleet_python);
# git-ignored, never edited or committed.

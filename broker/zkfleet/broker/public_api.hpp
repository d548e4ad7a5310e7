// Between zkfleet.v1 (schema/grpc/zkfleet_v1.proto: the public gRPC API,
// which owns its messages) and the internal schema (schema/zkfleet.proto):
// every field is copied by its name, nested messages and repeated fields
// alike, enum values by their names. So the internal schema may rename a
// number or add a field without a gRPC caller seeing it, and a field of the
// public API that loses its internal twin is found by a test
// (UnmappedFields, tests/unit/broker/public_api_test.cpp), not by a caller.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

namespace zkfleet::broker::public_api {

// Sets every field `to` declares from the field of the same name in `from`
// (clearing `to` first). A field `from` lacks, or has with another type,
// stays at its default; an enum value whose name `to`'s enum lacks becomes 0.
void CopyByName(const google::protobuf::Message& from, google::protobuf::Message* to);

// `from` as a message of type To, by CopyByName.
template <class To, class From>
To Convert(const From& from) {
  To to;
  CopyByName(from, &to);
  return to;
}

// The fields of `to` (dotted paths, nested messages included) with no field
// of the same name and kind in `from`, and the enum values of `to`'s enums
// with no value of the same name in `from`'s: what CopyByName would leave at
// its default. Empty when every field maps.
std::vector<std::string> UnmappedFields(const google::protobuf::Descriptor& to,
                                        const google::protobuf::Descriptor& from);

}  // namespace zkfleet::broker::public_api

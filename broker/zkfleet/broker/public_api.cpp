#include "zkfleet/broker/public_api.hpp"

#include <set>

namespace zkfleet::broker::public_api {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The same kind of value on both sides: the same C++ type, and for messages
// and enums a counterpart found by name inside.
bool SameKind(const FieldDescriptor& a, const FieldDescriptor& b) {
  return a.cpp_type() == b.cpp_type() && a.is_repeated() == b.is_repeated() && !a.is_map() && !b.is_map();
}

const EnumValueDescriptor* EnumValueFor(const EnumDescriptor& to, const EnumValueDescriptor& from) {
  const EnumValueDescriptor* value = to.FindValueByName(from.name());
  return value ? value : to.FindValueByNumber(0);
}

void CopyField(const Message& from, const FieldDescriptor& from_field, Message* to, const FieldDescriptor& to_field) {
  const Reflection& in = *from.GetReflection();
  const Reflection& out = *to->GetReflection();
  if (to_field.is_repeated()) {
    const int n = in.FieldSize(from, &from_field);
    for (int i = 0; i < n; ++i) {
      switch (to_field.cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT32: out.AddInt32(to, &to_field, in.GetRepeatedInt32(from, &from_field, i)); break;
        case FieldDescriptor::CPPTYPE_INT64: out.AddInt64(to, &to_field, in.GetRepeatedInt64(from, &from_field, i)); break;
        case FieldDescriptor::CPPTYPE_UINT32:
          out.AddUInt32(to, &to_field, in.GetRepeatedUInt32(from, &from_field, i));
          break;
        case FieldDescriptor::CPPTYPE_UINT64:
          out.AddUInt64(to, &to_field, in.GetRepeatedUInt64(from, &from_field, i));
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          out.AddDouble(to, &to_field, in.GetRepeatedDouble(from, &from_field, i));
          break;
        case FieldDescriptor::CPPTYPE_FLOAT: out.AddFloat(to, &to_field, in.GetRepeatedFloat(from, &from_field, i)); break;
        case FieldDescriptor::CPPTYPE_BOOL: out.AddBool(to, &to_field, in.GetRepeatedBool(from, &from_field, i)); break;
        case FieldDescriptor::CPPTYPE_STRING:
          out.AddString(to, &to_field, in.GetRepeatedString(from, &from_field, i));
          break;
        case FieldDescriptor::CPPTYPE_ENUM:
          out.AddEnum(to, &to_field, EnumValueFor(*to_field.enum_type(), *in.GetRepeatedEnum(from, &from_field, i)));
          break;
        case FieldDescriptor::CPPTYPE_MESSAGE:
          CopyByName(in.GetRepeatedMessage(from, &from_field, i), out.AddMessage(to, &to_field));
          break;
      }
    }
    return;
  }
  if (to_field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    if (in.HasField(from, &from_field)) CopyByName(in.GetMessage(from, &from_field), out.MutableMessage(to, &to_field));
    return;
  }
  // A field of a oneof is copied only when it is the one set.
  if (from_field.containing_oneof() && !in.HasField(from, &from_field)) return;
  switch (to_field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: out.SetInt32(to, &to_field, in.GetInt32(from, &from_field)); break;
    case FieldDescriptor::CPPTYPE_INT64: out.SetInt64(to, &to_field, in.GetInt64(from, &from_field)); break;
    case FieldDescriptor::CPPTYPE_UINT32: out.SetUInt32(to, &to_field, in.GetUInt32(from, &from_field)); break;
    case FieldDescriptor::CPPTYPE_UINT64: out.SetUInt64(to, &to_field, in.GetUInt64(from, &from_field)); break;
    case FieldDescriptor::CPPTYPE_DOUBLE: out.SetDouble(to, &to_field, in.GetDouble(from, &from_field)); break;
    case FieldDescriptor::CPPTYPE_FLOAT: out.SetFloat(to, &to_field, in.GetFloat(from, &from_field)); break;
    case FieldDescriptor::CPPTYPE_BOOL: out.SetBool(to, &to_field, in.GetBool(from, &from_field)); break;
    case FieldDescriptor::CPPTYPE_STRING: out.SetString(to, &to_field, in.GetString(from, &from_field)); break;
    case FieldDescriptor::CPPTYPE_ENUM:
      out.SetEnum(to, &to_field, EnumValueFor(*to_field.enum_type(), *in.GetEnum(from, &from_field)));
      break;
    case FieldDescriptor::CPPTYPE_MESSAGE: break;  // above
  }
}

void Unmapped(const Descriptor& to, const Descriptor& from, const std::string& prefix,
              std::set<std::pair<const Descriptor*, const Descriptor*>>& seen, std::vector<std::string>& out) {
  if (!seen.insert({&to, &from}).second) return;  // a message that contains itself
  for (int i = 0; i < to.field_count(); ++i) {
    const FieldDescriptor& field = *to.field(i);
    const std::string path = prefix + field.name();
    const FieldDescriptor* twin = from.FindFieldByName(field.name());
    if (!twin || !SameKind(field, *twin)) {
      out.push_back(path);
      continue;
    }
    if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      Unmapped(*field.message_type(), *twin->message_type(), path + ".", seen, out);
    } else if (field.cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
      for (int v = 0; v < field.enum_type()->value_count(); ++v) {
        const EnumValueDescriptor& value = *field.enum_type()->value(v);
        if (!twin->enum_type()->FindValueByName(value.name())) out.push_back(path + "=" + value.name());
      }
    }
  }
}

}  // namespace

void CopyByName(const Message& from, Message* to) {
  to->Clear();
  const Descriptor& to_type = *to->GetDescriptor();
  const Descriptor& from_type = *from.GetDescriptor();
  for (int i = 0; i < to_type.field_count(); ++i) {
    const FieldDescriptor& to_field = *to_type.field(i);
    const FieldDescriptor* from_field = from_type.FindFieldByName(to_field.name());
    if (!from_field || !SameKind(to_field, *from_field)) continue;
    CopyField(from, *from_field, to, to_field);
  }
}

std::vector<std::string> UnmappedFields(const Descriptor& to, const Descriptor& from) {
  std::set<std::pair<const Descriptor*, const Descriptor*>> seen;
  std::vector<std::string> out;
  Unmapped(to, from, "", seen, out);
  return out;
}

}  // namespace zkfleet::broker::public_api

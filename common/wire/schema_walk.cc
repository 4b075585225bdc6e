#include "common/wire/schema_walk.h"

#include <capnp/any.h>

namespace dice::wire {
namespace {

void walk_value(capnp::DynamicValue::Reader value, capnp::Type type);

void walk_list(capnp::DynamicList::Reader list) {
  const capnp::Type element = list.getSchema().getElementType();
  // Getting the list already checked its bounds and element size; primitive elements inside those
  // bounds cannot fail, so only pointer elements need a visit.
  switch (element.which()) {
    case capnp::schema::Type::TEXT:
    case capnp::schema::Type::DATA:
    case capnp::schema::Type::LIST:
    case capnp::schema::Type::STRUCT:
    case capnp::schema::Type::ANY_POINTER:
      for (auto item : list) walk_value(item, element);
      break;
    default:
      break;
  }
}

void walk_value(capnp::DynamicValue::Reader value, capnp::Type type) {
  switch (type.which()) {
    case capnp::schema::Type::TEXT:
      value.as<capnp::Text>();  // conversion is where the NUL terminator is checked
      break;
    case capnp::schema::Type::DATA:
      value.as<capnp::Data>();
      break;
    case capnp::schema::Type::LIST:
      walk_list(value.as<capnp::DynamicList>());
      break;
    case capnp::schema::Type::STRUCT:
      walk_validate(value.as<capnp::DynamicStruct>());
      break;
    case capnp::schema::Type::ANY_POINTER:
      // No schema to check against; at least bound-check everything it reaches.
      value.as<capnp::AnyPointer>().targetSize();
      break;
    default:  // numbers, bools, enums, void, interfaces (dice schemas have none)
      break;
  }
}

}  // namespace

void walk_validate(capnp::DynamicStruct::Reader value) {
  for (capnp::StructSchema::Field field : value.getSchema().getNonUnionFields()) {
    walk_value(value.get(field), field.getType());
  }
  KJ_IF_MAYBE (field, value.which()) {
    walk_value(value.get(*field), field->getType());
  }
}

}  // namespace dice::wire

#include "common/wire/schema_walk.h"

#include <capnp/dynamic.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace dice::wire {
namespace {

struct StructPlan;

// How to check the pointer in one slot.
enum class Check { kText, kData, kStruct, kStructList, kTextList, kDataList, kOtherList, kAny };

struct PointerCheck {
  std::uint32_t slot = 0;
  Check check = Check::kAny;
  const StructPlan* plan = nullptr;  // kStruct, kStructList: the element's plan
  capnp::ListSchema list;            // kStructList, kOtherList: the list's type
};

// The fields of a struct, or of one union arm: pointer slots, and groups (which share the
// struct's sections and have fields, maybe a union, of their own).
struct FieldSet {
  std::vector<PointerCheck> pointers;
  std::vector<const StructPlan*> groups;
};

struct StructPlan {
  FieldSet always;  // non-union fields
  bool has_union = false;
  std::uint32_t discriminant = 0;  // offset in 16-bit units into the data section
  std::vector<FieldSet> arms;      // by discriminant value
};

// Plans by schema node id, built once per process for each struct type met.
class PlanCache {
 public:
  const StructPlan* get(capnp::StructSchema schema) {
    std::lock_guard<std::mutex> lock(mutex_);
    return build(schema);
  }

 private:
  const StructPlan* build(capnp::StructSchema schema) {
    const std::uint64_t id = schema.getProto().getId();
    auto found = plans_.find(id);
    if (found != plans_.end()) return found->second.get();
    // Registered before its fields are planned, so a type that contains itself terminates.
    StructPlan* plan = plans_.emplace(id, std::make_unique<StructPlan>()).first->second.get();
    for (capnp::StructSchema::Field field : schema.getNonUnionFields()) add(field, &plan->always);
    auto union_fields = schema.getUnionFields();
    if (union_fields.size() > 0) {
      plan->has_union = true;
      plan->discriminant = schema.getProto().getStruct().getDiscriminantOffset();
      for (capnp::StructSchema::Field field : union_fields) {
        const std::uint16_t value = field.getProto().getDiscriminantValue();
        if (plan->arms.size() <= value) plan->arms.resize(value + 1u);
        add(field, &plan->arms[value]);
      }
    }
    return plan;
  }

  void add(capnp::StructSchema::Field field, FieldSet* set) {
    const auto proto = field.getProto();
    if (proto.isGroup()) {
      set->groups.push_back(build(field.getType().asStruct()));
      return;
    }
    PointerCheck check;
    check.slot = proto.getSlot().getOffset();
    const capnp::Type type = field.getType();
    switch (type.which()) {
      case capnp::schema::Type::TEXT:
        check.check = Check::kText;
        break;
      case capnp::schema::Type::DATA:
        check.check = Check::kData;
        break;
      case capnp::schema::Type::STRUCT:
        check.check = Check::kStruct;
        check.plan = build(type.asStruct());
        break;
      case capnp::schema::Type::LIST: {
        const capnp::Type element = type.asList().getElementType();
        if (element.isStruct()) {
          check.check = Check::kStructList;
          check.plan = build(element.asStruct());
          check.list = type.asList();
        } else if (element.isText()) {
          check.check = Check::kTextList;
        } else if (element.isData()) {
          check.check = Check::kDataList;
        } else {
          check.check = Check::kOtherList;
          check.list = type.asList();
        }
        break;
      }
      case capnp::schema::Type::ANY_POINTER:
        check.check = Check::kAny;
        break;
      default:  // numbers, bools, enums, void, interfaces (dice schemas have none)
        return;
    }
    set->pointers.push_back(check);
  }

  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::unique_ptr<StructPlan>> plans_;
};

PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache();  // never destroyed: decodes may run at exit
  return *cache;
}

void walk_plan(capnp::AnyStruct::Reader value, const StructPlan& plan);

// Lists the plan does not cover (primitives, lists of lists, enums...): the dynamic reader
// checks the element size; only pointer elements need a visit.
void walk_dynamic(capnp::DynamicValue::Reader value, capnp::Type type) {
  switch (type.which()) {
    case capnp::schema::Type::TEXT:
      value.as<capnp::Text>();  // conversion is where the NUL terminator is checked
      break;
    case capnp::schema::Type::DATA:
      value.as<capnp::Data>();
      break;
    case capnp::schema::Type::LIST: {
      auto list = value.as<capnp::DynamicList>();
      const capnp::Type element = list.getSchema().getElementType();
      if (element.isText() || element.isData() || element.isList() || element.isStruct() ||
          element.isAnyPointer()) {
        for (auto item : list) walk_dynamic(item, element);
      }
      break;
    }
    case capnp::schema::Type::STRUCT: {
      auto nested = value.as<capnp::DynamicStruct>();
      walk_validate(nested, nested.getSchema());
      break;
    }
    case capnp::schema::Type::ANY_POINTER:
      value.as<capnp::AnyPointer>().targetSize();
      break;
    default:
      break;
  }
}

void walk_pointer(capnp::AnyPointer::Reader pointer, const PointerCheck& check) {
  switch (check.check) {
    case Check::kText:
      pointer.getAs<capnp::Text>();  // kind, bounds and the NUL terminator
      break;
    case Check::kData:
      pointer.getAs<capnp::Data>();
      break;
    case Check::kStruct:
      walk_plan(pointer.getAs<capnp::AnyStruct>(), *check.plan);
      break;
    case Check::kStructList:
      for (auto item : pointer.getAs<capnp::DynamicList>(check.list)) {
        walk_plan(item.as<capnp::DynamicStruct>(), *check.plan);
      }
      break;
    case Check::kTextList:
      for (auto item : pointer.getAs<capnp::List<capnp::Text>>()) (void)item;
      break;
    case Check::kDataList:
      for (auto item : pointer.getAs<capnp::List<capnp::Data>>()) (void)item;
      break;
    case Check::kOtherList:
      walk_dynamic(pointer.getAs<capnp::DynamicList>(check.list), check.list);
      break;
    case Check::kAny:
      // No schema to check against; at least bound-check everything it reaches.
      pointer.targetSize();
      break;
  }
}

void walk_fields(capnp::AnyStruct::Reader value, const FieldSet& fields) {
  auto pointers = value.getPointerSection();
  for (const PointerCheck& check : fields.pointers) {
    // A slot past the end is an older, shorter struct: the field reads as its default.
    if (check.slot < pointers.size()) walk_pointer(pointers[check.slot], check);
  }
  for (const StructPlan* group : fields.groups) walk_plan(value, *group);
}

void walk_plan(capnp::AnyStruct::Reader value, const StructPlan& plan) {
  walk_fields(value, plan.always);
  if (!plan.has_union) return;
  const auto data = value.getDataSection();
  const std::size_t at = std::size_t{plan.discriminant} * 2;
  // Past the end of the data section the discriminant reads as 0, as Cap'n Proto reads it.
  const std::uint16_t which =
      at + 2 <= data.size() ? static_cast<std::uint16_t>(data[at] | (data[at + 1] << 8)) : 0;
  // An arm this build does not know (a newer schema) has nothing to check.
  if (which < plan.arms.size()) walk_fields(value, plan.arms[which]);
}

}  // namespace

void walk_validate(capnp::AnyStruct::Reader value, capnp::StructSchema schema) {
  walk_plan(value, *plan_cache().get(schema));
}

}  // namespace dice::wire

#include "net/wire/schema_walk.h"

#include <capnp/dynamic.h>
#include <kj/debug.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace dice::wire {

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
  // An AnyPointer field here, or a list whose elements the plan does not cover (lists of lists),
  // which the walk reads through the dynamic API. Set while building.
  bool any_here = false;
  // Whether any plan reachable from this one has any_here; -1 until asked (under the cache's lock).
  int reaches_any = -1;
};

namespace {

// Plans by schema node id, built once per process for each struct type met.
class PlanCache {
 public:
  const StructPlan* get(capnp::StructSchema schema) {
    std::lock_guard<std::mutex> lock(mutex_);
    StructPlan* plan = build(schema);
    if (plan->reaches_any < 0) plan->reaches_any = search_any(plan) ? 1 : 0;
    return plan;
  }

 private:
  StructPlan* build(capnp::StructSchema schema) {
    const std::uint64_t id = schema.getProto().getId();
    auto found = plans_.find(id);
    if (found != plans_.end()) return found->second.get();
    // Registered before its fields are planned, so a type that contains itself terminates.
    StructPlan* plan = plans_.emplace(id, std::make_unique<StructPlan>()).first->second.get();
    for (capnp::StructSchema::Field field : schema.getNonUnionFields()) {
      add(field, plan, &plan->always);
    }
    auto union_fields = schema.getUnionFields();
    if (union_fields.size() > 0) {
      plan->has_union = true;
      plan->discriminant = schema.getProto().getStruct().getDiscriminantOffset();
      for (capnp::StructSchema::Field field : union_fields) {
        const std::uint16_t value = field.getProto().getDiscriminantValue();
        if (plan->arms.size() <= value) plan->arms.resize(value + 1u);
        add(field, plan, &plan->arms[value]);
      }
    }
    return plan;
  }

  void add(capnp::StructSchema::Field field, StructPlan* owner, FieldSet* set) {
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
          if (element.isList() || element.isAnyPointer()) owner->any_here = true;
        }
        break;
      }
      case capnp::schema::Type::ANY_POINTER:
        check.check = Check::kAny;
        owner->any_here = true;
        break;
      default:  // numbers, bools, enums, void, interfaces (dice schemas have none)
        return;
    }
    set->pointers.push_back(check);
  }

  static void children(const FieldSet& set, std::vector<const StructPlan*>* out) {
    for (const PointerCheck& check : set.pointers) {
      if (check.plan != nullptr) out->push_back(check.plan);
    }
    out->insert(out->end(), set.groups.begin(), set.groups.end());
  }

  static bool search_any(const StructPlan* root) {
    std::vector<const StructPlan*> stack = {root};
    std::unordered_set<const StructPlan*> seen = {root};
    while (!stack.empty()) {
      const StructPlan* plan = stack.back();
      stack.pop_back();
      if (plan->any_here) return true;
      std::vector<const StructPlan*> next;
      children(plan->always, &next);
      for (const FieldSet& arm : plan->arms) children(arm, &next);
      for (const StructPlan* child : next) {
        if (seen.insert(child).second) stack.push_back(child);
      }
    }
    return false;
  }

  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::unique_ptr<StructPlan>> plans_;
};

PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache();  // never destroyed: decodes may run at exit
  return *cache;
}

// What the walk may still read, in words (see schema_walk.h).
class Budget {
 public:
  explicit Budget(std::uint64_t words) : left_(words) {}
  void spend(std::uint64_t words) {
    if (words > left_) {
      kj::throwFatalException(KJ_EXCEPTION(FAILED, "message exceeds the traversal limit"));
    }
    left_ -= words;
  }

 private:
  std::uint64_t left_;
};

std::uint64_t words_of_bytes(std::size_t bytes) {
  return (std::uint64_t{bytes} + sizeof(capnp::word) - 1) / sizeof(capnp::word);
}

void charge_struct(capnp::AnyStruct::Reader value, Budget& budget) {
  budget.spend(words_of_bytes(value.getDataSection().size()) + value.getPointerSection().size());
}

// A list the walk visits element by element costs its words, and at least one per element: a
// list of zero-sized structs claims any length without sending any bytes.
void charge_list(std::uint64_t elements, std::uint64_t words, Budget& budget) {
  budget.spend(std::max(elements, words));
}

// Bits per element of a list of `type` as the schema lays it out.
std::uint64_t element_bits(capnp::Type type) {
  switch (type.which()) {
    case capnp::schema::Type::VOID:
      return 0;
    case capnp::schema::Type::BOOL:
      return 1;
    case capnp::schema::Type::INT8:
    case capnp::schema::Type::UINT8:
      return 8;
    case capnp::schema::Type::INT16:
    case capnp::schema::Type::UINT16:
    case capnp::schema::Type::ENUM:
      return 16;
    case capnp::schema::Type::INT32:
    case capnp::schema::Type::UINT32:
    case capnp::schema::Type::FLOAT32:
      return 32;
    default:  // 64-bit numbers and pointers
      return 64;
  }
}

void walk_plan(capnp::AnyStruct::Reader value, const StructPlan& plan, Budget& budget);

// Lists the plan does not cover (primitives, lists of lists, enums...): the dynamic reader
// checks the element size; only pointer elements need a visit.
void walk_dynamic(capnp::DynamicValue::Reader value, capnp::Type type, Budget& budget) {
  switch (type.which()) {
    case capnp::schema::Type::TEXT:
      // Conversion is where the NUL terminator is checked; the NUL is one more byte.
      budget.spend(words_of_bytes(value.as<capnp::Text>().size() + 1));
      break;
    case capnp::schema::Type::DATA:
      budget.spend(words_of_bytes(value.as<capnp::Data>().size()));
      break;
    case capnp::schema::Type::LIST: {
      // The caller charged this list; a nested list is charged here, a word per element.
      auto list = value.as<capnp::DynamicList>();
      const capnp::Type element = list.getSchema().getElementType();
      if (element.isText() || element.isData() || element.isList() || element.isStruct() ||
          element.isAnyPointer()) {
        for (auto item : list) {
          if (element.isList()) {
            budget.spend(std::max<std::uint64_t>(item.as<capnp::DynamicList>().size(), 1));
          }
          walk_dynamic(item, element, budget);
        }
      }
      break;
    }
    case capnp::schema::Type::STRUCT: {
      // An element of a nested list: charged with that list.
      auto nested = value.as<capnp::DynamicStruct>();
      walk_plan(nested, *plan_for(nested.getSchema()), budget);
      break;
    }
    case capnp::schema::Type::ANY_POINTER:
      value.as<capnp::AnyPointer>().targetSize();  // bounded by the reader (reaches_any_pointer)
      break;
    default:
      break;
  }
}

void walk_pointer(capnp::AnyPointer::Reader pointer, const PointerCheck& check, Budget& budget) {
  if (pointer.isNull()) return;  // reads as the default: nothing to check or charge
  switch (check.check) {
    case Check::kText:
      // Kind, bounds and the NUL terminator; the NUL is one more byte.
      budget.spend(words_of_bytes(pointer.getAs<capnp::Text>().size() + 1));
      break;
    case Check::kData:
      budget.spend(words_of_bytes(pointer.getAs<capnp::Data>().size()));
      break;
    case Check::kStruct: {
      auto value = pointer.getAs<capnp::AnyStruct>();
      charge_struct(value, budget);
      walk_plan(value, *check.plan, budget);
      break;
    }
    case Check::kStructList: {
      auto list = pointer.getAs<capnp::DynamicList>(check.list);
      if (list.size() == 0) break;
      // Every element of a struct list has the first one's size.
      capnp::AnyStruct::Reader first = list[0].as<capnp::DynamicStruct>();
      const std::uint64_t element_words =
          words_of_bytes(first.getDataSection().size()) + first.getPointerSection().size();
      charge_list(list.size(), list.size() * element_words, budget);
      for (auto item : list) walk_plan(item.as<capnp::DynamicStruct>(), *check.plan, budget);
      break;
    }
    case Check::kTextList: {
      auto list = pointer.getAs<capnp::List<capnp::Text>>();
      charge_list(list.size(), list.size(), budget);
      for (auto item : list) budget.spend(words_of_bytes(item.size() + 1));
      break;
    }
    case Check::kDataList: {
      auto list = pointer.getAs<capnp::List<capnp::Data>>();
      charge_list(list.size(), list.size(), budget);
      for (auto item : list) budget.spend(words_of_bytes(item.size()));
      break;
    }
    case Check::kOtherList: {
      auto list = pointer.getAs<capnp::DynamicList>(check.list);
      const std::uint64_t bits = list.size() * element_bits(check.list.getElementType());
      // Primitives are not visited one by one: only a Void list is charged by its length.
      budget.spend(bits == 0 ? list.size() : (bits + 63) / 64);
      walk_dynamic(list, check.list, budget);
      break;
    }
    case Check::kAny:
      // No schema to check against; at least bound-check everything it reaches.
      pointer.targetSize();  // bounded by the reader (reaches_any_pointer)
      break;
  }
}

void walk_fields(capnp::AnyStruct::Reader value, const FieldSet& fields, Budget& budget) {
  auto pointers = value.getPointerSection();
  for (const PointerCheck& check : fields.pointers) {
    // A slot past the end is an older, shorter struct: the field reads as its default.
    if (check.slot < pointers.size()) walk_pointer(pointers[check.slot], check, budget);
  }
  for (const StructPlan* group : fields.groups) walk_plan(value, *group, budget);
}

void walk_plan(capnp::AnyStruct::Reader value, const StructPlan& plan, Budget& budget) {
  walk_fields(value, plan.always, budget);
  if (!plan.has_union) return;
  const auto data = value.getDataSection();
  const std::size_t at = std::size_t{plan.discriminant} * 2;
  // Past the end of the data section the discriminant reads as 0, as Cap'n Proto reads it.
  const std::uint16_t which =
      at + 2 <= data.size() ? static_cast<std::uint16_t>(data[at] | (data[at + 1] << 8)) : 0;
  // An arm this build does not know (a newer schema) has nothing to check.
  if (which < plan.arms.size()) walk_fields(value, plan.arms[which], budget);
}

}  // namespace

const StructPlan* plan_for(capnp::StructSchema schema) {
  // Decodes on one thread keep meeting the same type (Envelope): skip the lock and the map.
  thread_local capnp::StructSchema last_schema;
  thread_local const StructPlan* last_plan = nullptr;
  if (last_plan != nullptr && schema == last_schema) return last_plan;
  last_plan = plan_cache().get(schema);
  last_schema = schema;
  return last_plan;
}

bool reaches_any_pointer(const StructPlan* plan) {
  return plan->reaches_any != 0;
}

void walk_validate(capnp::AnyStruct::Reader value, const StructPlan* plan,
                   std::uint64_t budget_words) {
  Budget budget(budget_words);
  charge_struct(value, budget);
  walk_plan(value, *plan, budget);
}

}  // namespace dice::wire

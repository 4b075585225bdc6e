#include "rewardlog/record_codec.h"

#include <capnp/dynamic.h>
#include <capnp/message.h>
#include <capnp/schema.h>
#include <kj/exception.h>

#include <cstring>
#include <exception>

namespace dice::rewardlog {
namespace {

// Text fields as their full bytes: cStr() would stop at an embedded 0x00 and hide it.
std::string_view text(capnp::Text::Reader t) {
  return std::string_view(t.begin(), t.size());
}

// Key derivation, shared by encode (to store) and decode (to cross-check).
Result<std::string> key_of(schema::RunRecord::Reader r) {
  DICE_RETURN_IF_ERROR(check_key_text("runId", text(r.getRunId())));
  return run_key(text(r.getRunId()));
}

Result<std::string> key_of(schema::StepRecord::Reader r) {
  DICE_RETURN_IF_ERROR(check_key_text("runId", text(r.getRunId())));
  return step_key(text(r.getRunId()), r.getStep());
}

Result<std::string> key_of(schema::CandidateRecord::Reader r) {
  if (!r.hasVerdict()) return Status::invalid_argument("verdict is missing");
  const auto v = r.getVerdict();
  DICE_RETURN_IF_ERROR(check_key_text("verdict.runId", text(v.getRunId())));
  DICE_RETURN_IF_ERROR(check_key_text("verdict.taskId", text(v.getTaskId())));
  return candidate_key(text(v.getRunId()), v.getStep(), text(v.getTaskId()), v.getSampleIndex());
}

Result<std::string> key_of(schema::KernelRecord::Reader r) {
  DICE_RETURN_IF_ERROR(check_source_hash(text(r.getSourceHash())));
  return kernel_key(text(r.getSourceHash()));
}

Result<std::string> key_of(schema::MetricRecord::Reader r) {
  DICE_RETURN_IF_ERROR(check_key_text("runId", text(r.getRunId())));
  DICE_RETURN_IF_ERROR(check_key_text("name", text(r.getName())));
  return metric_key(text(r.getRunId()), text(r.getName()), r.getStep());
}

Result<std::string> key_of(schema::TaskRecord::Reader r) {
  DICE_RETURN_IF_ERROR(check_key_text("runId", text(r.getRunId())));
  DICE_RETURN_IF_ERROR(check_key_text("taskId", text(r.getTaskId())));
  return task_key(text(r.getRunId()), text(r.getTaskId()));
}

template <typename T>
const char* struct_name() {
  return capnp::Schema::from<T>().getShortDisplayName().cStr();
}

template <typename T>
Result<LogRecord> encode(typename T::Reader record) {
  LogRecord out;
  out.family = FamilyOf<T>::kFamily;
  try {
    Result<std::string> key = key_of(record);
    if (!key.ok()) {
      return key.status().with_context(std::string("cannot log ") + struct_name<T>());
    }
    out.key = std::move(key).value();
    capnp::MallocMessageBuilder message;
    message.setRoot(record);
    const kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
    const kj::ArrayPtr<const kj::byte> bytes = words.asBytes();
    out.value.assign(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
  } catch (const kj::Exception& e) {
    return Status::invalid_argument(std::string("cannot log ") + struct_name<T>() +
                                    ": the record does not encode: " + e.getDescription().cStr());
  }
  return out;
}

// Reads every reachable value so that damage anywhere in the message surfaces here, as a
// kj::Exception, rather than later in a caller that prints a field.
void touch_value(const capnp::DynamicValue::Reader& value);

void touch_struct(const capnp::DynamicStruct::Reader& s) {
  for (const capnp::StructSchema::Field field : s.getSchema().getFields()) {
    if (!s.has(field, capnp::HasMode::NON_NULL)) continue;  // unset pointers, other union arms
    touch_value(s.get(field));
  }
}

void touch_value(const capnp::DynamicValue::Reader& value) {
  switch (value.getType()) {
    case capnp::DynamicValue::TEXT:
      value.as<capnp::Text>();  // checks the NUL terminator
      break;
    case capnp::DynamicValue::DATA:
      value.as<capnp::Data>();
      break;
    case capnp::DynamicValue::LIST:
      for (const capnp::DynamicValue::Reader element : value.as<capnp::DynamicList>()) {
        touch_value(element);
      }
      break;
    case capnp::DynamicValue::STRUCT:
      touch_struct(value.as<capnp::DynamicStruct>());
      break;
    default:
      break;
  }
}

}  // namespace

Result<LogRecord> encode_record(schema::RunRecord::Reader record) {
  return encode<schema::RunRecord>(record);
}
Result<LogRecord> encode_record(schema::StepRecord::Reader record) {
  return encode<schema::StepRecord>(record);
}
Result<LogRecord> encode_record(schema::CandidateRecord::Reader record) {
  return encode<schema::CandidateRecord>(record);
}
Result<LogRecord> encode_record(schema::KernelRecord::Reader record) {
  return encode<schema::KernelRecord>(record);
}
Result<LogRecord> encode_record(schema::MetricRecord::Reader record) {
  return encode<schema::MetricRecord>(record);
}
Result<LogRecord> encode_record(schema::TaskRecord::Reader record) {
  return encode<schema::TaskRecord>(record);
}

template <typename T>
Result<OwnedRecord<T>> decode_record(std::string_view key, std::string_view value) {
  const Family family = FamilyOf<T>::kFamily;
  const std::string where = describe_key(family, key);
  auto corrupt = [&](const std::string& why) {
    return Status::corruption(where + ": value (" + std::to_string(value.size()) +
                              " bytes) is not a valid " + struct_name<T>() + ": " + why);
  };
  if (value.empty() || value.size() % sizeof(capnp::word) != 0) {
    return corrupt("length is not a positive multiple of 8");
  }
  OwnedRecord<T> record;
  record.key_ = std::string(key);
  // RocksDB hands out unaligned bytes; Cap'n Proto reads whole words.
  record.words_ = kj::heapArray<capnp::word>(value.size() / sizeof(capnp::word));
  std::memcpy(record.words_.begin(), value.data(), value.size());
  try {
    record.reader_ = std::make_unique<capnp::FlatArrayMessageReader>(record.words_.asPtr());
    if (record.reader_->getEnd() != record.words_.end()) {
      return corrupt("trailing bytes after the message");
    }
    record.root_ = record.reader_->template getRoot<T>();
    touch_struct(capnp::toDynamic(record.root_));
    Result<std::string> own_key = key_of(record.root_);
    if (!own_key.ok()) return corrupt(own_key.status().message());
    if (*own_key != key) {
      return corrupt("its fields belong under " + describe_key(family, *own_key));
    }
  } catch (const kj::Exception& e) {
    return corrupt(e.getDescription().cStr());
  } catch (const std::exception& e) {
    return corrupt(e.what());
  }
  return record;
}

template Result<OwnedRecord<schema::RunRecord>> decode_record(std::string_view, std::string_view);
template Result<OwnedRecord<schema::StepRecord>> decode_record(std::string_view, std::string_view);
template Result<OwnedRecord<schema::CandidateRecord>> decode_record(std::string_view,
                                                                    std::string_view);
template Result<OwnedRecord<schema::KernelRecord>> decode_record(std::string_view,
                                                                 std::string_view);
template Result<OwnedRecord<schema::MetricRecord>> decode_record(std::string_view,
                                                                 std::string_view);
template Result<OwnedRecord<schema::TaskRecord>> decode_record(std::string_view, std::string_view);

}  // namespace dice::rewardlog

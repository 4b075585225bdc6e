#include "rewardlog/export.h"

#include <capnp/compat/json.h>
#include <capnp/dynamic.h>
#include <capnp/message.h>
#include <capnp/schema.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

namespace dice::rewardlog {
namespace {

const capnp::JsonCodec& codec() {
  static const capnp::JsonCodec* const kInstance = new capnp::JsonCodec();
  return *kInstance;
}

// {"kind": kind, "record": <record in capnp's JSON mapping>}
std::string json_line(const char* kind, capnp::DynamicStruct::Reader record) {
  capnp::MallocMessageBuilder message;
  auto fields = message.initRoot<capnp::JsonValue>().initObject(2);
  fields[0].setName("kind");
  fields[0].initValue().setString(kind);
  fields[1].setName("record");
  codec().encode(capnp::DynamicValue::Reader(record), record.getSchema(), fields[1].initValue());
  return codec().encodeRaw(message.getRoot<capnp::JsonValue>().asReader()).cStr();
}

std::string struct_json(capnp::DynamicStruct::Reader record) {
  return codec().encode(capnp::DynamicValue::Reader(record), record.getSchema()).cStr();
}

bool omitted_in_csv(std::string_view name) {
  return std::find(std::begin(kCsvOmittedFields), std::end(kCsvOmittedFields), name) !=
         std::end(kCsvOmittedFields);
}

// The shortest decimal that reads back as the same value (as a float for Float32 fields).
std::string format_double(double value, bool float32) {
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, value);
    const double back = std::strtod(buf, nullptr);
    if (float32 ? static_cast<float>(back) == static_cast<float>(value) : back == value) break;
  }
  return buf;
}

// Header names of a struct's flattened columns, in schema (code) order.
void csv_header(capnp::StructSchema schema, const std::string& prefix,
                std::vector<std::string>* out) {
  for (const capnp::StructSchema::Field field : schema.getFields()) {
    const std::string name = field.getProto().getName().cStr();
    if (omitted_in_csv(name)) continue;
    const capnp::Type type = field.getType();
    if (type.isStruct()) {
      csv_header(type.asStruct(), prefix + name + ".", out);
    } else {
      out->push_back(prefix + name);
    }
  }
}

std::string csv_value(const capnp::DynamicValue::Reader& value, const capnp::Type& type) {
  switch (value.getType()) {
    case capnp::DynamicValue::BOOL:
      return value.as<bool>() ? "true" : "false";
    case capnp::DynamicValue::INT:
      return std::to_string(value.as<int64_t>());
    case capnp::DynamicValue::UINT:
      return std::to_string(value.as<uint64_t>());
    case capnp::DynamicValue::FLOAT:
      return format_double(value.as<double>(), type.isFloat32());
    case capnp::DynamicValue::TEXT:
      return value.as<capnp::Text>().cStr();
    case capnp::DynamicValue::ENUM: {
      KJ_IF_MAYBE (enumerant, value.as<capnp::DynamicEnum>().getEnumerant()) {
        return enumerant->getProto().getName().cStr();
      }
      return std::to_string(value.as<capnp::DynamicEnum>().getRaw());
    }
    default:
      return codec().encode(value, type).cStr();  // lists, data: their JSON text
  }
}

void csv_row(capnp::DynamicStruct::Reader record, std::vector<std::string>* out) {
  for (const capnp::StructSchema::Field field : record.getSchema().getFields()) {
    if (omitted_in_csv(field.getProto().getName().cStr())) continue;
    const capnp::Type type = field.getType();
    if (type.isStruct()) {
      csv_row(record.get(field).as<capnp::DynamicStruct>(), out);  // unset: default values
    } else {
      out->push_back(csv_value(record.get(field), type));
    }
  }
}

// Writes records of one kind in the chosen format.
class Sink {
 public:
  Sink(const ExportOptions& options, std::ostream& out) : options_(options), out_(out) {}

  template <typename T>
  void write(const char* kind, typename T::Reader record) {
    const capnp::DynamicStruct::Reader dynamic = capnp::toDynamic(record);
    if (options_.format == ExportFormat::kJsonl) {
      out_ << json_line(kind, dynamic) << '\n';
      return;
    }
    if (!header_written_) {
      std::vector<std::string> header;
      csv_header(capnp::Schema::from<T>(), "", &header);
      write_csv_line(header);
      header_written_ = true;
    }
    std::vector<std::string> row;
    csv_row(dynamic, &row);
    write_csv_line(row);
  }

 private:
  void write_csv_line(const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out_ << ',';
      out_ << csv_field(cells[i]);
    }
    out_ << "\r\n";
  }

  const ExportOptions& options_;
  std::ostream& out_;
  bool header_written_ = false;
};

bool wants(const ExportOptions& options, ExportTable table) {
  return options.table == ExportTable::kAll || options.table == table;
}

Status export_records(RewardLogReader& reader, std::string_view run_id,
                      const ExportOptions& options, Sink& sink, size_t* count) {
  if (wants(options, ExportTable::kRuns)) {
    Result<OwnedRecord<schema::RunRecord>> run = reader.run(run_id);
    if (run.ok()) {
      sink.write<schema::RunRecord>("run", run->get());
      ++*count;
    } else if (run.status().code() != StatusCode::kNotFound) {
      return run.status();
    }
  }
  if (wants(options, ExportTable::kSteps)) {
    DICE_ASSIGN_OR_RETURN(auto steps, reader.steps(run_id));
    for (const auto& step : steps) sink.write<schema::StepRecord>("step", step.get());
    *count += steps.size();
  }
  std::vector<std::string> hashes;  // kernels named by candidates, first-use order
  std::set<std::string> seen;
  if (wants(options, ExportTable::kCandidates) || wants(options, ExportTable::kKernels)) {
    const bool write = wants(options, ExportTable::kCandidates);
    DICE_RETURN_IF_ERROR(
        reader.for_each_candidate(run_id, {}, [&](OwnedRecord<schema::CandidateRecord> candidate) {
          for (std::string& hash : verdict_kernel_keys(candidate.get().getVerdict())) {
            if (seen.insert(hash).second) hashes.push_back(std::move(hash));
          }
          if (write) {
            sink.write<schema::CandidateRecord>("candidate", candidate.get());
            ++*count;
          }
          return Status::ok_status();
        }));
  }
  if (wants(options, ExportTable::kKernels)) {
    for (const std::string& hash : hashes) {
      if (!check_source_hash(hash).ok()) continue;  // not a kernel key; nothing to look up
      Result<OwnedRecord<schema::KernelRecord>> kernel = reader.kernel(hash);
      if (kernel.ok()) {
        sink.write<schema::KernelRecord>("kernel", kernel->get());
        ++*count;
      } else if (kernel.status().code() != StatusCode::kNotFound) {
        return kernel.status();
      }
    }
  }
  if (wants(options, ExportTable::kMetrics)) {
    DICE_ASSIGN_OR_RETURN(auto metrics, reader.metrics(run_id));
    for (const auto& metric : metrics) sink.write<schema::MetricRecord>("metric", metric.get());
    *count += metrics.size();
  }
  // Last, so that the order of the kinds before it stays what readers of older exports know.
  if (wants(options, ExportTable::kTasks)) {
    DICE_ASSIGN_OR_RETURN(auto tasks, reader.tasks(run_id));
    for (const auto& task : tasks) sink.write<schema::TaskRecord>("task", task.get());
    *count += tasks.size();
  }
  return Status::ok_status();
}

}  // namespace

Status parse_export_format(std::string_view text, ExportFormat* format) {
  if (text == "jsonl") {
    *format = ExportFormat::kJsonl;
  } else if (text == "csv") {
    *format = ExportFormat::kCsv;
  } else {
    return Status::invalid_argument("format \"" + std::string(text) + "\": expected jsonl or csv");
  }
  return Status::ok_status();
}

Status parse_export_table(std::string_view text, ExportTable* table) {
  static const std::pair<std::string_view, ExportTable> kNames[] = {
      {"all", ExportTable::kAll},         {"runs", ExportTable::kRuns},
      {"steps", ExportTable::kSteps},     {"candidates", ExportTable::kCandidates},
      {"kernels", ExportTable::kKernels}, {"metrics", ExportTable::kMetrics},
      {"tasks", ExportTable::kTasks}};
  for (const auto& [name, value] : kNames) {
    if (text == name) {
      *table = value;
      return Status::ok_status();
    }
  }
  return Status::invalid_argument("table \"" + std::string(text) +
                                  "\": expected all, runs, steps, candidates, kernels, metrics "
                                  "or tasks");
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted.push_back('"');
    quoted.push_back(c);
  }
  quoted.push_back('"');
  return quoted;
}

std::string record_to_json(schema::RunRecord::Reader r) {
  return struct_json(capnp::toDynamic(r));
}
std::string record_to_json(schema::StepRecord::Reader r) {
  return struct_json(capnp::toDynamic(r));
}
std::string record_to_json(schema::CandidateRecord::Reader r) {
  return struct_json(capnp::toDynamic(r));
}
std::string record_to_json(schema::KernelRecord::Reader r) {
  return struct_json(capnp::toDynamic(r));
}
std::string record_to_json(schema::MetricRecord::Reader r) {
  return struct_json(capnp::toDynamic(r));
}
std::string record_to_json(schema::TaskRecord::Reader r) {
  return struct_json(capnp::toDynamic(r));
}

Status export_run(RewardLogReader& reader, std::string_view run_id, const ExportOptions& options,
                  std::ostream& out) {
  if (options.format == ExportFormat::kCsv && options.table == ExportTable::kAll) {
    return Status::invalid_argument(
        "CSV holds one table per file: choose runs, steps, candidates, kernels, metrics or tasks");
  }
  Sink sink(options, out);
  size_t count = 0;
  try {
    DICE_RETURN_IF_ERROR(export_records(reader, run_id, options, sink, &count));
  } catch (const kj::Exception& e) {
    // Records were validated when read; this is a bug, not a damaged log.
    return Status::internal("exporting run " + std::string(run_id) + ": " +
                            e.getDescription().cStr());
  }
  if (!out) return Status::io_error("exporting run " + std::string(run_id) + ": write failed");
  if (count == 0 && options.table == ExportTable::kAll) {
    return Status::not_found("reward log " + reader.path() + ": no records for run \"" +
                             std::string(run_id) + "\"");
  }
  return Status::ok_status();
}

}  // namespace dice::rewardlog

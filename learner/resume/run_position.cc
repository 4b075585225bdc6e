#include "learner/resume/run_position.h"

#include <boost/json.hpp>

#include "common/json/parse_text.h"

namespace dice {
namespace json = boost::json;

namespace {

constexpr int kFormat = 1;

json::value scheduler_to_json(const TaskSchedulerState& s) {
  json::object out;
  json::array next;
  for (const std::string& id : s.next_task) next.emplace_back(id);
  out["next_task"] = std::move(next);
  out["open"] = s.open;
  json::object recent;
  for (const auto& [level, bits] : s.recent) {
    json::array a;
    for (bool b : bits) a.emplace_back(b);
    recent[level] = std::move(a);
  }
  out["recent"] = std::move(recent);
  json::object history;
  for (const auto& [id, groups] : s.history) {
    json::array a;
    for (const auto& [correct, judged] : groups) a.push_back(json::array{correct, judged});
    history[id] = std::move(a);
  }
  out["history"] = std::move(history);
  if (!s.last_taken.empty()) {  // a phase with a pass-rate band; absent from older positions
    json::object last_taken;
    for (const auto& [id, when] : s.last_taken) last_taken[id] = when;
    out["last_taken"] = std::move(last_taken);
  }
  return out;
}

// Typed access to the members of one object; the first problem is kept and named.
class Fields {
 public:
  Fields(const json::value& value, std::string where) : where_(std::move(where)) {
    if (value.is_object()) {
      object_ = &value.as_object();
    } else {
      fail("", "an object");
    }
  }
  const Status& status() const { return status_; }

  std::uint64_t u64(const char* key) {
    const json::value* v = member(key);
    if (v == nullptr) return 0;
    if (v->is_uint64()) return v->as_uint64();
    if (v->is_int64() && v->as_int64() >= 0) return static_cast<std::uint64_t>(v->as_int64());
    fail(key, "a non-negative integer");
    return 0;
  }
  int i32(const char* key) { return static_cast<int>(u64(key)); }
  double number(const char* key) {
    const json::value* v = member(key);
    if (v == nullptr) return 0;
    if (v->is_double()) return v->as_double();
    if (v->is_int64()) return static_cast<double>(v->as_int64());
    if (v->is_uint64()) return static_cast<double>(v->as_uint64());
    fail(key, "a number");
    return 0;
  }
  bool boolean(const char* key) {
    const json::value* v = member(key);
    if (v == nullptr) return false;
    if (v->is_bool()) return v->as_bool();
    fail(key, "true or false");
    return false;
  }
  std::string text(const char* key) {
    const json::value* v = member(key);
    if (v == nullptr) return {};
    if (v->is_string()) return std::string(v->as_string());
    fail(key, "a string");
    return {};
  }
  const json::array* array(const char* key) {
    const json::value* v = member(key);
    if (v == nullptr) return nullptr;
    if (v->is_array()) return &v->as_array();
    fail(key, "an array");
    return nullptr;
  }
  const json::object* object(const char* key) {
    const json::value* v = member(key);
    if (v == nullptr) return nullptr;
    if (v->is_object()) return &v->as_object();
    fail(key, "an object");
    return nullptr;
  }
  void fail(const std::string& key, const std::string& wanted) {
    if (!status_.ok()) return;
    status_ = Status::invalid_argument(where_ + (key.empty() ? "" : ": \"" + key + "\"") +
                                       " must be " + wanted);
  }

 private:
  const json::value* member(const char* key) {
    if (object_ == nullptr) return nullptr;
    const json::value* v = object_->if_contains(key);
    if (v == nullptr) fail(key, "present");
    return v;
  }

  std::string where_;
  const json::object* object_ = nullptr;
  Status status_;
};

Status scheduler_from_json(const json::value& value, const std::string& where,
                           TaskSchedulerState* s) {
  Fields f(value, where);
  if (const json::array* next = f.array("next_task")) {
    for (const json::value& id : *next) {
      if (!id.is_string())
        return Status::invalid_argument(where + ": next_task holds a non-string");
      s->next_task.emplace_back(id.as_string());
    }
  }
  s->open = f.i32("open");
  if (const json::object* recent = f.object("recent")) {
    for (const auto& [level, bits] : *recent) {
      auto& out = s->recent[std::string(level)];
      if (!bits.is_array())
        return Status::invalid_argument(where + ": recent." + std::string(level));
      for (const json::value& b : bits.as_array()) {
        if (!b.is_bool()) return Status::invalid_argument(where + ": recent holds a non-boolean");
        out.push_back(b.as_bool());
      }
    }
  }
  if (const json::object* history = f.object("history")) {
    for (const auto& [id, groups] : *history) {
      auto& out = s->history[std::string(id)];
      const std::string at = where + ": history." + std::string(id);
      if (!groups.is_array()) return Status::invalid_argument(at + " must be an array");
      for (const json::value& g : groups.as_array()) {
        const json::array* pair = g.if_array();
        if (pair == nullptr || pair->size() != 2 || !(*pair)[0].is_int64() ||
            !(*pair)[1].is_int64()) {
          return Status::invalid_argument(at + " must hold [correct, judged] pairs");
        }
        out.emplace_back(static_cast<int>((*pair)[0].as_int64()),
                         static_cast<int>((*pair)[1].as_int64()));
      }
    }
  }
  // Only a phase with a pass-rate band has it (and older positions never).
  const json::value* last_taken =
      value.is_object() ? value.as_object().if_contains("last_taken") : nullptr;
  if (last_taken != nullptr) {
    Fields when(*last_taken, where + ": last_taken");
    if (last_taken->is_object()) {
      for (const auto& entry : last_taken->as_object()) {
        const std::string id(entry.key());
        s->last_taken[id] = when.u64(id.c_str());
      }
    }
    DICE_RETURN_IF_ERROR(when.status());
  }
  return f.status();
}

}  // namespace

std::uint64_t task_ids_digest(const std::vector<std::string>& ids) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (const std::string& id : ids) {
    for (char c : id) mix(static_cast<unsigned char>(c));
    mix(0);
  }
  return h;
}

std::string run_position_to_json(const RunPosition& p) {
  json::object out;
  out["format"] = kFormat;
  out["run_id"] = p.run_id;
  out["next_step"] = p.next_step;
  out["policy_version"] = p.policy_version;
  out["weights_dir"] = p.weights_dir;
  out["next_work_id"] = p.next_work_id;
  out["next_group_id"] = p.next_group_id;
  out["steps_completed"] = p.steps_completed;
  out["seconds_so_far"] = p.seconds_so_far;
  json::array done;
  for (const std::string& name : p.phases_done) done.emplace_back(name);
  out["phases_done"] = std::move(done);
  out["phase"] = p.phase;
  out["phase_steps_done"] = p.phase_steps_done;
  out["seed"] = p.seed;
  out["resumes"] = p.resumes;
  out["state_interval_steps"] = p.state_interval_steps;
  out["has_scheduler"] = p.has_scheduler;
  out["scheduler"] = scheduler_to_json(p.scheduler);
  json::array phases;
  for (const PhaseFingerprint& f : p.phases) {
    phases.push_back(json::object{{"name", f.name},
                                  {"type", f.type},
                                  {"steps", f.steps},
                                  {"tasks_digest", f.tasks_digest},
                                  {"tasks", f.tasks}});
  }
  out["phases"] = std::move(phases);
  return json::serialize(out) + "\n";
}

Result<RunPosition> run_position_from_json(const std::string& text, const std::string& where) {
  boost::system::error_code error;
  std::string at;
  const json::value value = parse_json_text(text, &error, &at);
  if (error) return Status::invalid_argument(where + ":" + at + ": not JSON: " + error.message());
  Fields f(value, where);
  const int format = f.i32("format");
  if (f.status().ok() && format != kFormat) {
    return Status::invalid_argument(where + ": format " + std::to_string(format) +
                                    ", this learner reads format " + std::to_string(kFormat));
  }
  RunPosition p;
  p.run_id = f.text("run_id");
  p.next_step = f.u64("next_step");
  p.policy_version = f.u64("policy_version");
  p.weights_dir = f.text("weights_dir");
  p.next_work_id = f.u64("next_work_id");
  p.next_group_id = f.u64("next_group_id");
  p.steps_completed = f.i32("steps_completed");
  p.seconds_so_far = f.number("seconds_so_far");
  if (const json::array* done = f.array("phases_done")) {
    for (const json::value& name : *done) {
      if (!name.is_string())
        return Status::invalid_argument(where + ": phases_done holds a non-string");
      p.phases_done.emplace_back(name.as_string());
    }
  }
  p.phase = f.text("phase");
  p.phase_steps_done = f.i32("phase_steps_done");
  p.seed = f.u64("seed");
  p.resumes = f.i32("resumes");
  p.state_interval_steps = f.i32("state_interval_steps");
  p.has_scheduler = f.boolean("has_scheduler");
  if (const json::object* obj = value.is_object() ? &value.as_object() : nullptr) {
    if (const json::value* s = obj->if_contains("scheduler")) {
      DICE_RETURN_IF_ERROR(scheduler_from_json(*s, where + ": scheduler", &p.scheduler));
    }
  }
  if (const json::array* phases = f.array("phases")) {
    for (std::size_t i = 0; i < phases->size(); ++i) {
      Fields pf((*phases)[i], where + ": phases[" + std::to_string(i) + "]");
      PhaseFingerprint fp;
      fp.name = pf.text("name");
      fp.type = pf.text("type");
      fp.steps = pf.i32("steps");
      fp.tasks_digest = pf.u64("tasks_digest");
      fp.tasks = pf.i32("tasks");
      DICE_RETURN_IF_ERROR(pf.status());
      p.phases.push_back(std::move(fp));
    }
  }
  DICE_RETURN_IF_ERROR(f.status());
  return p;
}

}  // namespace dice

#include "learner/resume/resume_plan.h"

#include <algorithm>

namespace dice {
namespace {

const PhaseFingerprint* find_phase(const std::vector<PhaseFingerprint>& phases,
                                   const std::string& name) {
  auto it = std::find_if(phases.begin(), phases.end(),
                         [&](const PhaseFingerprint& p) { return p.name == name; });
  return it == phases.end() ? nullptr : &*it;
}

}  // namespace

PhaseFingerprint phase_fingerprint(const PhasePlan& plan) {
  PhaseFingerprint f;
  f.name = plan.name;
  f.type = config::enum_to_name(plan.type);
  f.steps = plan.type == PhaseType::kSft ? plan.epochs : plan.steps;
  std::vector<std::string> ids;
  for (const LearnerTask& task : plan.tasks) ids.push_back(task.id);
  if (plan.type == PhaseType::kSft) ids.push_back(plan.sft_data);
  f.tasks_digest = task_ids_digest(ids);
  f.tasks = static_cast<int>(plan.tasks.size());
  return f;
}

ResumePlan plan_resume(const RunPosition& position, const std::vector<PhasePlan>& plans) {
  ResumePlan out;
  out.done.assign(plans.size(), false);
  auto quoted = [](const std::string& name) { return "phase \"" + name + "\""; };
  for (const std::string& name : position.phases_done) {
    bool found = false;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (plans[i].name == name) out.done[i] = found = true;
    }
    if (!found) out.changes.push_back(quoted(name) + " is done and no longer in the curriculum");
  }
  // The phase the position names is in progress, or the last phase finished (its scheduler
  // kept, so that it can go on when it has grown).
  const bool finished =
      !position.phases_done.empty() && position.phases_done.back() == position.phase;
  if (!position.phase.empty()) {
    bool found = false;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (plans[i].name != position.phase) continue;
      found = true;
      const int steps_done = position.phase_steps_done;
      if (finished) {
        if (plans[i].type == PhaseType::kRl && plans[i].steps > steps_done) {
          out.done[i] = false;
          out.current = static_cast<int>(i);
          out.steps_done = steps_done;
          out.changes.push_back(quoted(position.phase) + " had finished after " +
                                std::to_string(steps_done) + " steps; it goes on to " +
                                std::to_string(plans[i].steps));
        }
        break;
      }
      if (out.done[i]) break;
      if (plans[i].type != PhaseType::kRl) {
        out.changes.push_back(quoted(position.phase) + " is no longer an rl phase: it starts over");
        break;
      }
      out.current = static_cast<int>(i);
      out.steps_done = steps_done;
      if (steps_done >= plans[i].steps) {
        out.changes.push_back(quoted(position.phase) + ": " + std::to_string(steps_done) +
                              " steps done, it now has " + std::to_string(plans[i].steps) +
                              ": it is complete");
      }
      break;
    }
    if (!found && !finished) {
      out.changes.push_back(quoted(position.phase) + ", in progress at the restart (" +
                            std::to_string(position.phase_steps_done) +
                            " steps done), is no longer in the curriculum");
    }
  }
  for (const PhasePlan& plan : plans) {
    const PhaseFingerprint now = phase_fingerprint(plan);
    const PhaseFingerprint* then = find_phase(position.phases, plan.name);
    if (then == nullptr) {
      out.changes.push_back(quoted(plan.name) + " is new");
      continue;
    }
    if (then->type != now.type) {
      out.changes.push_back(quoted(plan.name) + ": type " + then->type + " -> " + now.type);
    }
    if (then->steps != now.steps) {
      out.changes.push_back(quoted(plan.name) + (now.type == "sft" ? ": epochs " : ": steps ") +
                            std::to_string(then->steps) + " -> " + std::to_string(now.steps));
    }
    if (then->tasks_digest != now.tasks_digest) {
      out.changes.push_back(quoted(plan.name) +
                            (now.type == "sft"
                                 ? std::string(": its data file changed")
                                 : ": its tasks changed (" + std::to_string(then->tasks) + " -> " +
                                       std::to_string(now.tasks) +
                                       " tasks); the scheduler keeps what still fits"));
    }
  }
  return out;
}

}  // namespace dice

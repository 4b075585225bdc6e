#include "net/service/transport_metrics.h"

#include <cstdint>
#include <vector>

namespace dice::service {
namespace {

struct Field {
  const char* name;  // appended to the prefix
  MetricType type;
  const char* help;
  double value;
};

Status export_fields(const std::string& prefix, const MetricLabels& labels,
                     const std::vector<Field>& fields, MetricsRegistry* registry) {
  for (const Field& field : fields) {
    DICE_RETURN_IF_ERROR(registry->set_snapshot(prefix + "_" + field.name, field.type, field.help,
                                                {MetricSample{labels, field.value}}));
  }
  return Status::ok_status();
}

double d(std::uint64_t v) {
  return static_cast<double>(v);
}

}  // namespace

Status export_dispatcher_stats(const transport::DispatcherStats& s, const std::string& prefix,
                               MetricsRegistry* registry) {
  constexpr MetricType kG = MetricType::kGauge;
  constexpr MetricType kC = MetricType::kCounter;
  std::vector<Field> fields = {
      {"pending", kG, "Work waiting for a worker with a credit.", d(s.pending)},
      {"in_flight", kG, "Work sent and not yet acked.", d(s.in_flight)},
      {"results_queued", kG, "Results waiting to be consumed.", d(s.results_queued)},
      {"workers", kG, "Registered workers.", d(s.workers)},
      {"credits", kG, "Credits held by all workers.", d(s.credits)},
      {"oldest_in_flight_seconds", kG, "Age of the oldest item in flight.",
       static_cast<double>(s.oldest_in_flight_ms) / 1000.0},
      {"submitted_total", kC, "Work items submitted.", d(s.submitted)},
      {"dispatched_total", kC, "Sends of work, re-sends included.", d(s.dispatched)},
      {"completed_total", kC, "Work items acked.", d(s.completed)},
      {"results_delivered_total", kC, "Results handed to consumers.", d(s.results_delivered)},
      {"duplicate_results_total", kC, "Duplicate results or acks dropped.", d(s.duplicate_results)},
      {"unknown_results_total", kC, "Results for unknown work dropped.", d(s.unknown_results)},
      {"requeued_total", kC, "Items sent back to the queue.", d(s.requeued)},
      {"given_up_total", kC, "Items answered by the dispatcher after losing their worker.",
       d(s.given_up)},
      {"cancelled_total", kC, "Queued items withdrawn (their answer no longer wanted).",
       d(s.cancelled)},
      {"cancelled_in_flight_total", kC,
       "Items cancelled at the worker holding them (their answer no longer wanted).",
       d(s.cancelled_in_flight)},
      {"cancelled_results_total", kC, "Results of items cancelled in flight, dropped.",
       d(s.cancelled_results)},
      {"workers_dead_total", kC, "Workers declared dead.", d(s.workers_dead)},
      {"malformed_frames_total", kC, "Undecodable frames dropped.", d(s.malformed_frames)},
      {"unexpected_messages_total", kC, "Messages wrong here, dropped.", d(s.unexpected_messages)},
      {"send_failures_total", kC, "Frames that could not be sent.", d(s.send_failures)},
      {"errors_received_total", kC, "Error bodies received from workers.", d(s.errors_received)},
  };
  DICE_RETURN_IF_ERROR(export_fields(prefix, {}, fields, registry));

  std::vector<MetricSample> credits, in_flight, completed, silent;
  for (const transport::WorkerSnapshot& w : s.worker_list) {
    MetricLabels labels = {{"worker", w.worker_id}};
    credits.push_back({labels, d(w.credits)});
    in_flight.push_back({labels, d(w.in_flight)});
    completed.push_back({labels, d(w.completed)});
    silent.push_back({labels, static_cast<double>(w.silent_ms) / 1000.0});
  }
  DICE_RETURN_IF_ERROR(
      registry->set_snapshot(prefix + "_worker_credits", kG, "Credits held, per worker.", credits));
  DICE_RETURN_IF_ERROR(registry->set_snapshot(prefix + "_worker_in_flight", kG,
                                              "Work in flight, per worker.", in_flight));
  DICE_RETURN_IF_ERROR(registry->set_snapshot(prefix + "_worker_completed_total", kC,
                                              "Work items acked, per worker.", completed));
  return registry->set_snapshot(prefix + "_worker_silent_seconds", kG,
                                "Seconds since the worker's last message (heartbeat age).", silent);
}

Status export_worker_stats(const transport::WorkerStats& s, const std::string& worker_id,
                           const std::string& prefix, MetricsRegistry* registry) {
  constexpr MetricType kG = MetricType::kGauge;
  constexpr MetricType kC = MetricType::kCounter;
  std::vector<Field> fields = {
      {"inbox", kG, "Messages waiting to be received.", d(s.inbox)},
      {"outbox", kG, "Frames waiting to be sent.", d(s.outbox)},
      {"held", kG, "Work items received and not finished.", d(s.held)},
      {"received_work_total", kC, "Work items received.", d(s.received_work)},
      {"finished_total", kC, "Work items finished.", d(s.finished)},
      {"hellos_sent_total", kC, "Hello messages sent.", d(s.hellos_sent)},
      {"duplicate_work_total", kC, "Work ids received twice, dropped.", d(s.duplicate_work)},
      {"refused_work_total", kC, "Work refused with a full inbox.", d(s.refused_work)},
      {"malformed_frames_total", kC, "Undecodable frames dropped.", d(s.malformed_frames)},
      {"unexpected_messages_total", kC, "Messages wrong here, dropped.", d(s.unexpected_messages)},
      {"heartbeats_dropped_total", kC, "Heartbeats not sent (socket would block).",
       d(s.heartbeats_dropped)},
      {"cancels_received_total", kC, "Cancels of work items held.", d(s.cancels_received)},
      {"cancels_ignored_total", kC, "Cancels of work items not held, dropped.",
       d(s.cancels_ignored)},
  };
  return export_fields(prefix, {{"worker", worker_id}}, fields, registry);
}

}  // namespace dice::service

#include "rewardlog/options.h"

namespace dice::rewardlog {

const char* sync_policy_name(SyncPolicy policy) {
  switch (policy) {
    case SyncPolicy::kAlways:
      return "always";
    case SyncPolicy::kNever:
      return "never";
    case SyncPolicy::kInterval:
      return "interval";
  }
  return "unknown";
}

Status parse_sync_policy(std::string_view text, SyncPolicy* policy) {
  for (SyncPolicy p : {SyncPolicy::kAlways, SyncPolicy::kNever, SyncPolicy::kInterval}) {
    if (text == sync_policy_name(p)) {
      *policy = p;
      return Status::ok_status();
    }
  }
  return Status::invalid_argument("sync policy \"" + std::string(text) +
                                  "\": expected always, never or interval");
}

}  // namespace dice::rewardlog

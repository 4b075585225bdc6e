#include "net/transport/lost_work_answer.h"

#include <cstdlib>
#include <utility>

#include "net/wire/verdict_identity.h"

namespace dice::transport {

namespace {

using Body = schema::Envelope::Body;

wire::Decoded<schema::Envelope> decode_own(capnp::MallocMessageBuilder& message) {
  // A message this process just built: it decodes unless the build itself is broken.
  auto decoded = wire::decode_envelope(wire::encode(message));
  if (!decoded.ok()) std::abort();
  return std::move(decoded).value();
}

}  // namespace

wire::Decoded<schema::Envelope> lost_work_answer(const std::string& payload, std::uint64_t work_id,
                                                 const std::string& sender_id,
                                                 const std::string& run_id,
                                                 const std::string& workers,
                                                 const std::string& why) {
  capnp::MallocMessageBuilder message;
  auto body = wire::init_envelope(message, sender_id, run_id).getBody();
  auto request = wire::decode_envelope(payload);
  if (request.ok() && request->root().getBody().which() == Body::EVAL_REQUEST) {
    auto verdict = body.initVerdict();
    set_verdict_identity(request->root().getBody().getEvalRequest(), workers, verdict);
    verdict.setCompiled(false);
    verdict.setCorrect(false);
    verdict.setReward(0.0f);
    verdict.setFailure(schema::FailureClass::WORKER_LOST);
    verdict.setLogExcerpt(why);
  } else {
    auto error = body.initError();
    error.setWorkId(work_id);
    error.setMessage(why);
  }
  return decode_own(message);
}

}  // namespace dice::transport

// Small helpers over cppzmq shared by the dispatcher and the worker: non-blocking multipart
// receive, and sends that report "would block" and "peer gone" instead of throwing.
#pragma once

#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

namespace dice::transport {

enum class SendOutcome { kSent, kWouldBlock, kUnreachable, kFailed };

// Receives one whole multipart message without blocking; false when none is waiting.
bool receive_frames(zmq::socket_t& socket, std::vector<zmq::message_t>* frames);

// Sends [routing_id, payload] on a ROUTER socket, or just [payload] when routing_id is empty.
SendOutcome send_frames(zmq::socket_t& socket, const std::string& routing_id,
                        std::string_view payload);

std::string frame_string(const zmq::message_t& frame);

}  // namespace dice::transport

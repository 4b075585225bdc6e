// Small helpers over cppzmq shared by the dispatcher and the worker: non-blocking multipart
// receive, sends that report "would block" and "peer gone" instead of throwing, and the
// edge-triggered readiness check that lets several threads share one socket under a mutex.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "common/status.h"
#include "common/transport/shared_payload.h"
#include "common/wire/envelope.h"

namespace dice::transport {

enum class SendOutcome { kSent, kWouldBlock, kUnreachable, kFailed };

// Receives one whole multipart message without blocking; false when none is waiting.
bool receive_frames(zmq::socket_t& socket, std::vector<zmq::message_t>* frames);

// Messages one round takes off a socket before its caller looks at timers and sends again.
inline constexpr std::size_t kMaxReceivesPerRound = 256;
// Whole messages waiting on `socket`, up to kMaxReceivesPerRound, without blocking. An empty
// result means the last receive found the socket empty (which re-arms its descriptor's edge);
// a full one, that more may be waiting behind an edge already consumed.
std::vector<std::vector<zmq::message_t>> receive_round(zmq::socket_t& socket);

// Sends [routing_id, payload] on a ROUTER socket, or just [payload] when routing_id is empty.
SendOutcome send_frames(zmq::socket_t& socket, const std::string& routing_id,
                        std::string_view payload);
// The same for a shared payload: at kZeroCopyBytes or more, ZeroMQ holds a reference to the
// bytes instead of copying them.
SendOutcome send_frames(zmq::socket_t& socket, const std::string& routing_id,
                        const SharedPayload& payload);

// Decodes a received envelope frame; a large frame is read in place (no copy) when aligned.
Result<wire::Decoded<schema::Envelope>> decode_frame(zmq::message_t frame);

// Whether a message is waiting on `socket`. ZeroMQ's descriptor (zmq::sockopt::fd) only signals
// edges, and any operation on the socket may consume one: a thread that used the socket while
// another sleeps on the descriptor must check this (and wake the sleeper). False on a closed
// socket.
bool has_input(zmq::socket_t& socket);

std::string frame_string(const zmq::message_t& frame);

// Frames at least this large are sent and decoded without copying the payload. It is ZeroMQ's
// batch size: a smaller frame is copied into (or received inside) a shared batch buffer anyway,
// unaligned, so a copy of our own costs no more than the shared bookkeeping would.
constexpr std::size_t kZeroCopyBytes = 8192;

}  // namespace dice::transport

// Small helpers over cppzmq shared by the dispatcher and the worker: non-blocking multipart
// receive, sends that report "would block" and "peer gone" instead of throwing, and the
// edge-triggered readiness check that lets several threads share one socket under a mutex.
#pragma once

#include <capnp/message.h>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>
#include <zmq.hpp>

#include "common/status.h"
#include "net/transport/shared_payload.h"
#include "net/wire/envelope.h"

namespace dice::transport {

enum class SendOutcome { kSent, kWouldBlock, kUnreachable, kFailed };

// Receives one whole multipart message without blocking; false when none is waiting.
bool receive_frames(zmq::socket_t& socket, std::vector<zmq::message_t>* frames);

// Messages one round takes off a socket before its caller looks at timers and sends again.
inline constexpr std::size_t kMaxReceivesPerRound = 256;
// Messages a consumer's round takes (a thread in next_result() or receive(), which wants one).
// Finding the socket empty costs ZeroMQ two system calls (a poll and a fork check), and a round
// that stops short of that costs nothing: the consumer comes back for the next message anyway,
// and a round finds the socket empty only right before its holder sleeps, once per wake-up
// instead of twice.
inline constexpr std::size_t kConsumerRoundMessages = 1;
// Whole messages waiting on `socket`, up to `max_messages`, without blocking. An empty result
// means the last receive found the socket empty (which re-arms its descriptor's edge); a full
// one, that more may be waiting behind an edge already consumed.
std::vector<std::vector<zmq::message_t>> receive_round(zmq::socket_t& socket,
                                                       std::size_t max_messages);

// Sends [routing_id, payload] on a ROUTER socket, or just [payload] when routing_id is empty.
SendOutcome send_frames(zmq::socket_t& socket, const std::string& routing_id,
                        std::string_view payload);
// The same for a shared payload: at kZeroCopyBytes or more, ZeroMQ holds a reference to the
// bytes instead of copying them.
SendOutcome send_frames(zmq::socket_t& socket, const std::string& routing_id,
                        const SharedPayload& payload);

// A frame ready to send, holding `message` encoded (wire::encode() written straight into the
// ZeroMQ message: no string in between, and no copy when it is sent).
zmq::message_t encode_frame(capnp::MessageBuilder& message);
// A frame holding `payload`: copied below kZeroCopyBytes, taken over (not copied) from there up.
zmq::message_t payload_frame(std::string payload);
// Sends one prepared frame on a DEALER socket. On kSent ZeroMQ has taken the frame's content and
// `frame` is empty; on any other outcome `frame` is unchanged, to be sent again later.
SendOutcome send_frame(zmq::socket_t& socket, zmq::message_t& frame);

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

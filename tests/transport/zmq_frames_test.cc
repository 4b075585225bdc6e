// The frame helpers' copy-avoiding paths: large payloads handed to ZeroMQ by reference, large
// aligned frames decoded where they lie, and unaligned or malformed ones still handled safely.
#include "net/transport/zmq_frames.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace dice::transport {
namespace {

std::string eval_request(std::size_t prompt_bytes) {
  capnp::MallocMessageBuilder message;
  auto request = wire::init_envelope(message, "learner", "run").getBody().initEvalRequest();
  request.setWorkId(7);
  request.getTask().setPrompt(std::string(prompt_bytes, 'p'));
  return wire::encode(message);
}

const char* prompt_of(const wire::Decoded<schema::Envelope>& envelope) {
  return envelope.root().getBody().getEvalRequest().getTask().getPrompt().cStr();
}

TEST(ZmqFrames, LargeAlignedFrameIsDecodedInPlace) {
  const std::string bytes = eval_request(64 << 10);
  zmq::message_t frame(bytes.data(), bytes.size());  // its own heap buffer: 8-byte aligned
  const char* begin = static_cast<const char*>(frame.data());
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(begin) % 8, 0u);
  auto decoded = decode_frame(std::move(frame));
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  const char* prompt = prompt_of(*decoded);
  EXPECT_GE(prompt, begin);
  EXPECT_LT(prompt, begin + bytes.size());
  EXPECT_EQ(std::strlen(prompt), std::size_t{64} << 10);
}

TEST(ZmqFrames, UnalignedFrameIsCopiedAndStillDecodes) {
  const std::string bytes = eval_request(64 << 10);
  std::vector<char> buffer(bytes.size() + 1);
  std::memcpy(buffer.data() + 1, bytes.data(), bytes.size());
  // A frame over caller-owned bytes at an odd address, as inside ZeroMQ's receive batches.
  zmq::message_t frame(buffer.data() + 1, bytes.size(), nullptr, nullptr);
  auto decoded = decode_frame(std::move(frame));
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  const char* prompt = prompt_of(*decoded);
  EXPECT_TRUE(prompt < buffer.data() || prompt >= buffer.data() + buffer.size());
  buffer.assign(buffer.size(), 0);  // the decoded copy does not depend on the original
  EXPECT_EQ(std::strlen(prompt_of(*decoded)), std::size_t{64} << 10);
}

TEST(ZmqFrames, MalformedLargeFrameIsCorruption) {
  std::string bytes = eval_request(64 << 10);
  bytes.resize(bytes.size() - 8);  // truncated by one word
  auto decoded = decode_frame(zmq::message_t(bytes.data(), bytes.size()));
  EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption);
}

TEST(ZmqFrames, LargeSharedPayloadIsSentByReferenceAndReleased) {
  zmq::context_t context(1);
  zmq::socket_t sender(context, zmq::socket_type::dealer);
  zmq::socket_t receiver(context, zmq::socket_type::dealer);
  sender.set(zmq::sockopt::linger, 0);
  receiver.set(zmq::sockopt::linger, 0);
  receiver.bind("tcp://127.0.0.1:*");
  sender.connect(receiver.get(zmq::sockopt::last_endpoint));
  auto payload = std::make_shared<const std::string>(eval_request(64 << 10));
  auto small = std::make_shared<const std::string>(eval_request(16));
  ASSERT_EQ(send_frames(sender, "", payload), SendOutcome::kSent);
  ASSERT_EQ(send_frames(sender, "", small), SendOutcome::kSent);
  EXPECT_EQ(small.use_count(), 1);  // small payloads are copied at once
  receiver.set(zmq::sockopt::rcvtimeo, 5000);
  zmq::message_t got;
  ASSERT_TRUE(receiver.recv(got));
  EXPECT_EQ(got.to_string_view(), *payload);
  ASSERT_TRUE(receiver.recv(got));
  EXPECT_EQ(got.to_string_view(), *small);
  // ZeroMQ's reference goes once the bytes are written (on its I/O thread).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (payload.use_count() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(payload.use_count(), 1);
}

TEST(ZmqFrames, HasInputSeesAWaitingMessage) {
  zmq::context_t context(1);
  zmq::socket_t a(context, zmq::socket_type::pair);
  zmq::socket_t b(context, zmq::socket_type::pair);
  a.bind("inproc://has-input");
  b.connect("inproc://has-input");
  EXPECT_FALSE(has_input(a));
  ASSERT_EQ(send_frames(b, "", std::string_view("x")), SendOutcome::kSent);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!has_input(a) && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_TRUE(has_input(a));
}

}  // namespace
}  // namespace dice::transport

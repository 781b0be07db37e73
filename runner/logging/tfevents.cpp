#include "runner/logging/tfevents.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace trainrun {

namespace {

// Debian packages no C/C++ CRC-32C library (google/crc32c is not in bookworm), so the classic
// byte-wise table for the reflected Castagnoli polynomial; event files are small.
constexpr uint32_t kCastagnoli = 0x82F63B78u;

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ kCastagnoli : c >> 1;
    t[i] = c;
  }
  return t;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Protobuf wire format: key = field << 3 | wire type; 0 varint, 1 fixed64, 2 bytes, 5 fixed32.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(v | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}
void key(std::string& out, int field, int wire) { varint(out, uint64_t(field) << 3 | uint64_t(wire)); }
template <class T>
void fixed(std::string& out, int field, T value) {
  key(out, field, sizeof(T) == 8 ? 1 : 5);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // little-endian hosts, as protobuf's fixed types
  out.append(bytes, sizeof(T));
}
void bytes_field(std::string& out, int field, const std::string& data) {
  key(out, field, 2);
  varint(out, data.size());
  out += data;
}
void varint_field(std::string& out, int field, int64_t v) {
  key(out, field, 0);
  varint(out, uint64_t(v));
}

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3, summary = 5, session_log = 6.
std::string event_head(double wall_time, int64_t step) {
  std::string e;
  fixed(e, 1, wall_time);
  if (step != 0) varint_field(e, 2, step);
  return e;
}

}  // namespace

uint32_t crc32c(const void* data, std::size_t size, uint32_t crc) {
  static const auto table = make_table();
  auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t masked_crc32c(const void* data, std::size_t size) {
  uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

namespace tfevents {

std::string scalar_event(double wall_time, int64_t step, const std::string& tag, float value) {
  std::string v;  // Summary.Value: tag = 1, simple_value = 2 (float)
  bytes_field(v, 1, tag);
  fixed(v, 2, value);
  std::string summary;  // Summary: value = 1 (repeated)
  bytes_field(summary, 1, v);
  std::string e = event_head(wall_time, step);
  bytes_field(e, 5, summary);
  return e;
}

std::string file_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  bytes_field(e, 3, "brain.Event:2");
  return e;
}

std::string session_start_event(double wall_time, int64_t step) {
  std::string log;  // SessionLog: status = 1 (START = 1)
  varint_field(log, 1, 1);
  std::string e = event_head(wall_time, step);
  bytes_field(e, 6, log);
  return e;
}

std::string record(const std::string& data) {
  std::string out;
  uint64_t length = data.size();
  char len[8];
  std::memcpy(len, &length, 8);
  out.append(len, 8);
  uint32_t crc = masked_crc32c(len, 8);
  out.append(reinterpret_cast<const char*>(&crc), 4);
  out += data;
  crc = masked_crc32c(data.data(), data.size());
  out.append(reinterpret_cast<const char*>(&crc), 4);
  return out;
}

}  // namespace tfevents

EventWriter::EventWriter(const std::string& dir, int64_t purge_step) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  double t = now_seconds();
  // SummaryWriter's name: events.out.tfevents.{int(time.time())}.{socket.gethostname()}.{pid}
  path_ = (std::filesystem::path(dir) /
           ("events.out.tfevents." + std::to_string(int64_t(t)) + "." + host + "." + std::to_string(::getpid())))
              .string();
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw std::runtime_error(path_ + ": cannot write");
  write(tfevents::file_version_event(t));
  if (purge_step >= 0) write(tfevents::session_start_event(t, purge_step));
  flush();
}

void EventWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  write(tfevents::scalar_event(now_seconds(), step, tag, float(value)));
}

void EventWriter::write(const std::string& event) { out_ << tfevents::record(event); }

void EventWriter::flush() { out_.flush(); }

}  // namespace trainrun

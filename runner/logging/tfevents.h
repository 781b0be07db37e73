// TensorBoard event files written directly, as torch.utils.tensorboard.SummaryWriter writes them:
// `events.out.tfevents.<time>.<host>.<pid>`, a sequence of TFRecords (uint64 length, masked
// CRC32C of the length, an Event protobuf, masked CRC32C of the data). The first event carries
// `file_version: "brain.Event:2"`; scalars are Event{wall_time, step, summary{value{tag,
// simple_value}}}. Only these few protobuf fields are needed, so they are encoded here by hand.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace trainrun {

// CRC-32C (Castagnoli), and TensorFlow's masked form used in TFRecord framing.
uint32_t crc32c(const void* data, std::size_t size, uint32_t crc = 0);
uint32_t masked_crc32c(const void* data, std::size_t size);

namespace tfevents {
// The protobuf bytes of one Event (exposed for tests).
std::string scalar_event(double wall_time, int64_t step, const std::string& tag, float value);
std::string file_version_event(double wall_time);
// SessionLog{status: START} at `step`: TensorBoard drops events of the same run logged after
// `step` by an earlier process (a resumed run after a crash), as SummaryWriter(purge_step=).
std::string session_start_event(double wall_time, int64_t step);
// One TFRecord around `data`.
std::string record(const std::string& data);
}  // namespace tfevents

class EventWriter {
 public:
  // Creates a new event file in `dir`; `purge_step` >= 0 writes a SessionLog START there.
  explicit EventWriter(const std::string& dir, int64_t purge_step = -1);
  void add_scalar(const std::string& tag, double value, int64_t step);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write(const std::string& event);
  std::string path_;
  std::ofstream out_;
};

}  // namespace trainrun

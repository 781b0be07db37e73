// TensorBoard event files: CRC-32C against its published check value, and the files a run
// writes decoded by a small TFRecord + protobuf reader back into the values of metrics.jsonl.
#include "runner/logging/tfevents.h"
#include "test_util.h"

#include <cstring>
#include <map>

namespace trainrun {
namespace {

namespace fs = std::filesystem;

struct Scalar {
  std::string tag;
  int64_t step = 0;
  float value = 0;
};

struct Decoded {
  std::string file_version;
  std::vector<Scalar> scalars;
  int session_starts = 0;
  std::string error;
};

uint64_t varint(const std::string& b, std::size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; i < b.size(); shift += 7) {
    auto c = uint8_t(b[i++]);
    v |= uint64_t(c & 0x7F) << shift;
    if (!(c & 0x80)) break;
  }
  return v;
}

// Calls f(field, wire, bytes-or-scalar) for each field of a protobuf message.
void fields(const std::string& msg, const std::function<void(int, int, const std::string&, uint64_t)>& f) {
  for (std::size_t i = 0; i < msg.size();) {
    uint64_t key = varint(msg, i);
    int field = int(key >> 3), wire = int(key & 7);
    if (wire == 0) f(field, wire, "", varint(msg, i));
    else if (wire == 1) f(field, wire, msg.substr(i, 8), 0), i += 8;
    else if (wire == 5) f(field, wire, msg.substr(i, 4), 0), i += 4;
    else if (wire == 2) {
      auto n = std::size_t(varint(msg, i));
      f(field, wire, msg.substr(i, n), 0);
      i += n;
    } else throw std::runtime_error("unexpected wire type");
  }
}

Decoded decode(const std::string& path) {
  Decoded d;
  std::string b = test::read_file(path);
  for (std::size_t i = 0; i < b.size();) {
    if (b.size() - i < 12) return d.error = "truncated record header", d;
    uint64_t len;
    uint32_t len_crc, data_crc;
    std::memcpy(&len, b.data() + i, 8);
    std::memcpy(&len_crc, b.data() + i + 8, 4);
    if (len_crc != masked_crc32c(b.data() + i, 8)) return d.error = "bad length crc", d;
    std::string data = b.substr(i + 12, len);
    std::memcpy(&data_crc, b.data() + i + 12 + len, 4);
    if (data_crc != masked_crc32c(data.data(), data.size())) return d.error = "bad data crc", d;
    i += 16 + len;
    int64_t step = 0;
    std::vector<std::string> summaries;
    fields(data, [&](int field, int, const std::string& bytes, uint64_t v) {
      if (field == 2) step = int64_t(v);
      if (field == 3) d.file_version = bytes;
      if (field == 5) summaries.push_back(bytes);
      if (field == 6) ++d.session_starts;
    });
    for (auto& s : summaries)
      fields(s, [&](int field, int, const std::string& value, uint64_t) {
        if (field != 1) return;
        Scalar sc;
        sc.step = step;
        fields(value, [&](int f, int, const std::string& bytes, uint64_t) {
          if (f == 1) sc.tag = bytes;
          if (f == 2) std::memcpy(&sc.value, bytes.data(), 4);
        });
        d.scalars.push_back(sc);
      });
  }
  return d;
}

TEST(TfEvents, Crc32cCheckValues) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value (RFC 3720)
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8A9136AAu);  // RFC 3720 B.4, 32 bytes of zeros
}

TEST(TfEvents, WriterRoundTrip) {
  test::TempDir dir;
  std::string path;
  {
    EventWriter w(dir.path().string(), 7);
    w.add_scalar("train/loss", 0.25, 8);
    w.add_scalar("eval/accuracy", 0.875, 10);
    path = w.path();
  }
  EXPECT_NE(fs::path(path).filename().string().find("events.out.tfevents."), std::string::npos);
  Decoded d = decode(path);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.file_version, "brain.Event:2");
  EXPECT_EQ(d.session_starts, 1);
  ASSERT_EQ(d.scalars.size(), 2u);
  EXPECT_EQ(d.scalars[0].tag, "train/loss");
  EXPECT_EQ(d.scalars[0].step, 8);
  EXPECT_EQ(d.scalars[0].value, 0.25f);
  EXPECT_EQ(d.scalars[1].tag, "eval/accuracy");
  EXPECT_EQ(d.scalars[1].value, 0.875f);
}

TEST(TfEvents, RunWritesTheLoggedValues) {
  if (!fs::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  auto r = test::run(test::trainrun(test::source("recipes/quickstart.yaml") +
                                    " data.max_train_samples=640 data.max_eval_samples=300 train.log_every_steps=2"
                                    " world.nproc_per_node=1 output.save_every=never output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  std::string events;
  for (auto& e : fs::directory_iterator(dir / "run"))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) events = e.path().string();
  ASSERT_FALSE(events.empty());
  Decoded d = decode(events);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.file_version, "brain.Event:2");
  std::map<std::string, std::map<int64_t, float>> got;
  for (auto& s : d.scalars) got[s.tag][s.step] = s.value;
  int compared = 0;
  for (auto& line : test::read_jsonl(dir / "run/metrics.jsonl"))
    for (auto& [key, tag] : std::vector<std::pair<std::string, std::string>>{
             {"loss", "train/loss"}, {"learning_rate", "train/lr"}, {"grad_norm", "train/grad_norm"},
             {"eval_loss", "eval/loss"}, {"eval_accuracy", "eval/accuracy"}, {"train_loss", "train/train_loss"}})
      if (line.contains(key)) {
        EXPECT_EQ(got[tag][line["step"].get<int64_t>()], float(line[key].get<double>())) << tag;
        ++compared;
      }
  EXPECT_EQ(compared, 5 * 3 + 2 + 1);  // 5 train lines, one evaluation, the summary
}

}  // namespace
}  // namespace trainrun

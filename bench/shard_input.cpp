// Training input from WebDataset tar shards against the same images as a folder (issue 42, item 5),
// side by side in one run: the same JPEGs, transforms (decode + random_resized_crop(224) +
// to_tensor + normalize, as bench/data_pipeline), workers and batch, read
//   folder       data.dataset image_folder, the DataLoader by index (one file opened per image);
//   shards bB    webdataset on the same images as local shards of 100 (`trainrun shards`), buffer B;
//   http bB      the same shards from a loopback HTTP server this bench starts
//                (/usr/bin/python3 -m http.server), buffer B.
// Each phase runs in a child process of its own (this program again, with --phase), so that its
// peak RSS (VmHWM less VmRSS before the dataset is built) is its own. A phase times a warm-up
// epoch and EPOCHS epochs; the phases run one after another, ROUNDS times, the order reversed
// every other round. Per phase: the best epoch's images/s and the median round's (its best epoch),
// the CPU time an image (user + system, every thread: what the rate is on a box whose cores are
// shared), how many CPUs were busy, the HTTP server's CPU an image, the wait for an epoch's first
// batch (the shuffle buffer fills first), files opened an epoch (inotify IN_OPEN on the class
// folders or the shard folder, the HTTP server's opens included), and the peak RSS growth, as
// run and once more with glibc's mmap threshold fixed (the live memory; see rates()).
//
// usage: build/bench/shard_input [WORKERS=2] [BATCH=32] [IMAGES=1000] [EPOCHS=3] [ROUNDS=4] [FOLDER]
//        build/bench/shard_input --startup [N=100000] [ROUNDS=3] [WORKERS=2] [BATCH=32] [FOLDER]
//        build/bench/shard_input --soak [EPOCHS=40] [WORKERS=2] [BATCH=32] [IMAGES=400] [FOLDER]
// FOLDER (default /tmp/trainrun-bench-shards) keeps photos-IMAGES/, val/ (4 photos, the eval split
// both datasets need) and shards-IMAGES/ between runs. --startup writes N tiny PNGs (16x16) once
// into FOLDER/startup/folder-N/ (folder-1000 and folder-10000 hard links to its first ones) and as
// shards of 1,000 with sizes.json, then times, for 1,000, 10,000, ... N samples, building the
// dataset as a recipe does (image_folder lists its folder; webdataset reads sizes.json) plus the
// DataLoader up to its first batch, each in a fresh process. --soak runs every phase for EPOCHS
// epochs and judges its live RSS, open fds and threads after each as bench/soak does (soak()).
// Needs build/trainrun (`trainrun shards`).
#include "bench/photos.h"
#include "bench/process_probe.h"
#include "components/data/dataset.h"
#include "components/data/loader/loader.h"
#include "registry/registry.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace trainrun;
using bench::Clock;
using bench::cpu_ms_used;
using bench::load_average;
using bench::median;
using bench::ms_since;
using bench::open_fds;
using bench::OpenCounter;
using bench::settled_rss_mib;
using bench::status_field;
using bench::status_mib;
using bench::folder_bytes;
using bench::HttpServer;
using bench::run_child;
using bench::run_command;
using bench::write_tiny;
using bench::class_dirs;

namespace {

Compose train_transforms() {
  return Compose({bench::make_transform("random_resized_crop",
                                        "{size: 224, scale: [0.08, 1.0], ratio: [0.75, 1.3333333333333333]}"),
                  bench::make_transform("to_tensor", "{}"),
                  bench::make_transform("normalize", "{mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}")});
}

DatasetSplits make_dataset(const std::string& name, const std::string& params) {
  return Registry<Dataset>::instance().get(name).make(Config(YAML::Load(params), "data.dataset"));
}

DatasetSplits image_folder(const fs::path& root, const fs::path& val) {
  return make_dataset("image_folder", "{root: '" + root.string() + "', val_root: '" + val.string() +
                                          "', val_fraction: 0.2, split_seed: 42, channels: 3}");
}

// `base` a folder or http://HOST:PORT; shards train-000000.tar ... train-{shards - 1}.tar.
DatasetSplits webdataset(const std::string& base, int64_t shards, int64_t buffer) {
  char last[32];
  std::snprintf(last, sizeof last, "%06lld", (long long)(shards - 1));
  return make_dataset("webdataset", "{urls: '" + base + "/train-{000000.." + last + "}.tar', eval_urls: '" + base +
                                        "/validation-000000.tar', num_samples: null, shuffle: {shards: true, buffer: " +
                                        std::to_string(buffer) + "}, classes: null, image_key: '', label_key: '', "
                                        "cache_dir: null, retries: 3, eval_split_name: validation, channels: 3}");
}

// The training shards sizes.json lists.
int64_t train_shards(const fs::path& dir) {
  std::ifstream in(dir / "sizes.json");
  const nlohmann::json sizes = nlohmann::json::parse(in);  // items() refers to it: not a temporary
  int64_t n = 0;
  for (const auto& item : sizes.items()) n += item.key().rfind("train-", 0) == 0;
  return n;
}

LoaderOptions loader_options(int64_t workers, int64_t batch) {
  LoaderOptions o;
  o.batch_size = batch;
  o.workers = workers;
  o.shard.shuffle = true;  // training
  return o;
}

// A phase of the rate comparison, in this (child) process; prints one line: "result" then the best
// epoch's images/s, images an epoch, files opened an epoch, VmRSS before the dataset, VmHWM, CPU
// ms an image, CPUs busy, median wait for an epoch's first batch (ms), then after each timed
// epoch its settled RSS (MiB), open fds and threads. kind: folder | shards | http; buffer for the
// shards; port for http.
int rate_phase(const std::string& kind, int64_t buffer, int64_t workers, int64_t batch, int64_t epochs,
               const fs::path& photos, const fs::path& val, const fs::path& shards, int port) {
  const double rss_start = status_mib("VmRSS");
  OpenCounter opens(kind == "folder" ? class_dirs(photos) : std::vector<fs::path>{shards});
  const std::string base = kind == "http" ? "http://127.0.0.1:" + std::to_string(port) : shards.string();
  DatasetSplits data = kind == "folder" ? image_folder(photos, val) : webdataset(base, train_shards(shards), buffer);
  DataLoader loader(data.train, train_transforms(), loader_options(workers, batch));
  const int64_t opened_before = opens.count();
  double best = 0, wall_ms = 0, cpu_ms = 0;
  int64_t images = 0;
  std::vector<double> first_batch_ms, after_epochs;  // after each timed epoch: live RSS MiB, open fds, threads
  for (int64_t epoch = 0; epoch <= epochs; ++epoch) {
    auto start = Clock::now();
    const double cpu_start = cpu_ms_used();
    int64_t n = 0;
    loader.start_epoch(epoch);
    for (auto b = loader.next(); b; b = loader.next()) {
      if (n == 0) first_batch_ms.push_back(ms_since(start));
      n += b->inputs.size(0);
    }
    const double ms = ms_since(start);
    if (epoch == 0) continue;  // the first epoch warms up, as data_pipeline's
    after_epochs.insert(after_epochs.end(), {settled_rss_mib(), double(open_fds()), status_field("Threads")});
    best = std::max(best, double(n) / (ms / 1000.0));
    wall_ms += ms;
    cpu_ms += cpu_ms_used() - cpu_start;
    images += n;
  }
  first_batch_ms.erase(first_batch_ms.begin());  // the warm-up's
  const double per_epoch = double(opens.count() - opened_before) / double(epochs + 1);
  std::printf("result %.3f %lld %.2f %.2f %.2f %.4f %.3f %.2f", best, (long long)(images / epochs), per_epoch, rss_start,
              status_mib("VmHWM"), cpu_ms / double(images), cpu_ms / wall_ms, median(first_batch_ms));
  for (double v : after_epochs) std::printf(" %.2f", v);
  std::printf("\n");
  return 0;
}

// A phase of --startup: dataset + DataLoader + first batch of `n` samples, in this (child) process.
// kind: folder | shards (buffer 0) | shards2000.
int startup_phase(const std::string& kind, int64_t n, int64_t workers, int64_t batch, const fs::path& dir) {
  const bool folder = kind == "folder";
  const fs::path root = dir / ("folder-" + std::to_string(n));
  OpenCounter opens(folder ? class_dirs(root) : std::vector<fs::path>{dir / "shards"});
  Compose transforms = train_transforms();
  const double rss_start = status_mib("VmRSS");
  auto start = Clock::now();
  DatasetSplits data = folder ? image_folder(root, dir / "val")
                              : webdataset((dir / "shards").string(), n / 1000, kind == "shards" ? 0 : 2000);
  const double built = ms_since(start);
  DataLoader loader(data.train, transforms, loader_options(workers, batch));
  loader.start_epoch(0);
  auto first = loader.next();
  const double first_ms = ms_since(start);
  if (!first) throw std::runtime_error("no first batch");
  std::printf("result %.3f %.3f %lld %lld %.2f %.2f\n", built, first_ms, (long long)data.train->size(), (long long)opens.count(),
              rss_start, status_mib("VmHWM"));
  return 0;
}

// `trainrun shards` of an image_folder (root, val_root) into `out` with `max_count` samples a
// shard, unless out/sizes.json (written last) is there already.
void write_shards(const fs::path& root, const fs::path& val, const fs::path& out, int64_t max_count) {
  if (fs::exists(out / "sizes.json")) return;
  const fs::path trainrun = fs::path(TRAINRUN_BINARY_DIR) / "trainrun";
  if (!fs::exists(trainrun)) throw std::runtime_error(trainrun.string() + ": not built (cmake --build build --target trainrun)");
  fs::remove_all(out);  // a run stopped half-way
  const fs::path recipe = out.string() + ".yaml";
  const std::string dataset = "{name: image_folder, root: '" + root.string() + "', val_root: '" + val.string() + "'}";
  std::ofstream(recipe) << "model: {name: basicnet, num_classes: auto}\n"  // `shards` builds only the data
                        << "data:\n  dataset: " << dataset << "\n  batch_size: 32\n"
                        << "train: {epochs: 1, loss: nll}\noptimizer: {name: adam, lr: 1.0e-3}\n";
  if (run_command(trainrun.string() + " shards " + recipe.string() + " --output " + out.string() +
                  " --max-count " + std::to_string(max_count)) != 0)
    throw std::runtime_error("trainrun shards failed");
}

// The photos as a folder and as shards, written once under `dir`, and the HTTP server of the shards.
struct Inputs {
  Inputs(const fs::path& dir, int64_t images)
      : photos(dir / ("photos-" + std::to_string(images))), val(dir / "val"), shards(dir / ("shards-" + std::to_string(images))) {
    bench::write_photos(photos, images);
    bench::write_photos(val, 4);
    write_shards(photos, val, shards, 100);
    server = std::make_unique<HttpServer>(shards);
  }
  // The numbers of a rate phase (rate_phase) of `kind` in a child process.
  std::vector<double> phase(const std::string& kind, int64_t buffer, int64_t workers, int64_t batch, int64_t epochs,
                            const std::string& env = "") const {
    return run_child(kind + " " + std::to_string(buffer) + " " + std::to_string(workers) + " " + std::to_string(batch) + " " +
                         std::to_string(epochs) + " " + photos.string() + " " + val.string() + " " + shards.string() + " " +
                         std::to_string(server->port),
                     env);
  }
  fs::path photos, val, shards;
  std::unique_ptr<HttpServer> server;
};

// glibc's malloc keeps freed blocks in per-thread arenas, and once the first batch tensor is freed
// it stops mmapping blocks of that size: RSS then tells more of the allocator than of what is
// live. With the threshold fixed, every block over 128 KiB is mmapped and unmapped when freed, so
// RSS follows the live memory (at ~1.5x the CPU an image: such runs are not timed).
const char* kLiveMemory = "MALLOC_MMAP_THRESHOLD_=131072";

struct Phase {
  Phase(std::string n, std::string k, int64_t b) : name(std::move(n)), kind(std::move(k)), buffer(b) {}
  std::string name, kind;
  int64_t buffer;
  std::vector<double> rates, cpu_per_image, busy, server_per_image, first_batch_ms, growth;
  double opens = 0, live_growth = 0, live_first = 0, live_last = 0;
};

std::vector<Phase> all_phases() {
  return {{"folder", "folder", 0}, {"shards b0", "shards", 0}, {"shards b1000", "shards", 1000}, {"http b0", "http", 0},
          {"http b1000", "http", 1000}};
}

int rates(int64_t workers, int64_t batch, int64_t images, int64_t epochs, int64_t rounds, const fs::path& dir) {
  Inputs in(dir, images);
  const fs::path &photos = in.photos, &shards = in.shards;
  HttpServer& server = *in.server;
  std::vector<Phase> phases = all_phases();
  const std::string load_before = load_average();
  for (int64_t r = 0; r < rounds; ++r)
    for (std::size_t k = 0; k < phases.size(); ++k) {
      Phase& ph = phases[r % 2 ? phases.size() - 1 - k : k];
      const double server_start = server.cpu_ms();
      auto v = in.phase(ph.kind, ph.buffer, workers, batch, epochs);
      ph.rates.push_back(v[0]);
      ph.opens = v[2];
      ph.growth.push_back(v[4] - v[3]);
      ph.cpu_per_image.push_back(v[5]);
      ph.busy.push_back(v[6]);
      ph.first_batch_ms.push_back(v[7]);
      ph.server_per_image.push_back((server.cpu_ms() - server_start) / double(v[1] * (epochs + 1)));
      std::printf("round %lld %-13s %7.1f images/s (%lld an epoch)\n", (long long)r + 1, ph.name.c_str(), v[0], (long long)v[1]);
      std::fflush(stdout);
    }
  for (auto& ph : phases) {  // the live memory, once
    auto v = in.phase(ph.kind, ph.buffer, workers, batch, epochs, kLiveMemory);
    ph.live_growth = v[4] - v[3];
    ph.live_first = v.at(8);
    ph.live_last = v.at(std::size_t(8 + 3 * (epochs - 1)));
  }
  std::printf("\n%lld JPEGs 500x375 (%.1f MB), %lld shards of 100 (%.1f MB), workers %lld, batch %lld, %lld rounds of a warm-up "
              "+ %lld timed epochs; load average %s before, %s after\n\n",
              (long long)images, folder_bytes(photos, "img_") / 1e6, (long long)train_shards(shards),
              folder_bytes(shards, "train-") / 1e6, (long long)workers, (long long)batch, (long long)rounds, (long long)epochs,
              load_before.c_str(), load_average().c_str());
  std::printf("| input | images/s: best epoch | median round | CPU ms an image | CPUs busy | HTTP server CPU ms an image | "
              "first batch of an epoch, ms | files opened an epoch | peak RSS growth, MiB | live peak growth, MiB | live RSS "
              "after epoch 1 -> %lld, MiB |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
              (long long)epochs);
  auto best = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  for (const auto& ph : phases)
    std::printf("| %s | %.0f | %.0f | %.3f | %.2f | %.3f | %.1f | %.1f | %.0f | %.0f | %.1f -> %.1f |\n", ph.name.c_str(),
                best(ph.rates), median(ph.rates), median(ph.cpu_per_image), median(ph.busy), median(ph.server_per_image),
                median(ph.first_batch_ms), ph.opens, median(ph.growth), ph.live_growth, ph.live_first, ph.live_last);
  auto ratios = [&](int a, int b) {
    char out[160];
    const Phase &x = phases[std::size_t(a)], &y = phases[std::size_t(b)];
    std::snprintf(out, sizeof out, "%.2fx best epoch, %.2fx median round, %.2fx CPU an image", best(x.rates) / best(y.rates),
                  median(x.rates) / median(y.rates), median(y.cpu_per_image) / median(x.cpu_per_image));
    return std::string(out);
  };
  std::printf("\nshards / folder (goal >= 1.0): buffer 0 %s; buffer 1000 %s\n", ratios(1, 0).c_str(), ratios(2, 0).c_str());
  std::printf("http / local shards (goal >= 0.9): buffer 0 %s; buffer 1000 %s\n", ratios(3, 1).c_str(), ratios(4, 2).c_str());
  return 0;
}

// Every phase for `epochs` epochs with the live memory measured (kLiveMemory), RSS, open fds and
// threads after each epoch, judged as bench/soak judges a run: from epochs 5-7 to the last 3 (the
// lowest figure of each 3), fds and threads must not grow, RSS by at most 3 MiB.
int soak(int64_t workers, int64_t batch, int64_t images, int64_t epochs, const fs::path& dir) {
  if (epochs < 10) throw std::runtime_error("--soak EPOCHS: at least 10 (epochs 5-7 against the last 3)");
  Inputs in(dir, images);
  const std::string load_before = load_average();
  bool pass = true;
  std::printf("| input | RSS MiB after epoch 1 / 5 / 10 / %lld | floor of epochs 5-7 -> last 3 | fds | threads | verdict |\n"
              "|---|---|---|---|---|---|\n",
              (long long)epochs);
  for (const Phase& ph : all_phases()) {
    auto v = in.phase(ph.kind, ph.buffer, workers, batch, epochs, kLiveMemory);
    auto at = [&](int64_t epoch, int what) { return v.at(std::size_t(8 + 3 * (epoch - 1) + what)); };
    auto floor = [&](int64_t first, int what) { return std::min({at(first, what), at(first + 1, what), at(first + 2, what)}); };
    const double rss0 = floor(5, 0), rss1 = floor(epochs - 2, 0);
    const double fds0 = floor(5, 1), fds1 = floor(epochs - 2, 1), threads0 = floor(5, 2), threads1 = floor(epochs - 2, 2);
    const bool ok = rss1 - rss0 <= 3.0 && fds1 <= fds0 && threads1 <= threads0;
    pass = pass && ok;
    std::printf("| %s | %.1f / %.1f / %.1f / %.1f | %.1f -> %.1f (%+.1f) | %.0f -> %.0f | %.0f -> %.0f | %s |\n", ph.name.c_str(),
                at(1, 0), at(5, 0), at(10, 0), at(epochs, 0), rss0, rss1, rss1 - rss0, fds0, fds1, threads0, threads1,
                ok ? "pass" : "FAIL");
    std::fflush(stdout);
  }
  std::printf("\n%lld JPEGs, workers %lld, batch %lld, %lld epochs a phase; load average %s before, %s after: %s\n",
              (long long)images, (long long)workers, (long long)batch, (long long)epochs, load_before.c_str(),
              load_average().c_str(), pass ? "pass" : "FAIL");
  return pass ? 0 : 1;
}

int startup(int64_t count, int64_t rounds, int64_t workers, int64_t batch, const fs::path& dir) {
  if (count < 1000 || count % 1000 != 0) throw std::runtime_error("--startup N: a multiple of 1,000 (shards of 1,000)");
  write_tiny(dir, count);
  write_shards(dir / ("folder-" + std::to_string(count)), dir / "val", dir / "shards", 1000);
  if (train_shards(dir / "shards") * 1000 != count)
    throw std::runtime_error((dir / "shards").string() + ": written for another N; remove it");

  struct Row {
    Row(std::string name_, std::string kind_, int64_t n_) : name(std::move(name_)), kind(std::move(kind_)), n(n_) {}
    std::string name, kind;
    int64_t n;
    std::vector<double> built, first;
    double files = 0, rss_start = 0, hwm = 0;
  };
  std::vector<Row> rows;
  for (int64_t n = 1000; n <= count; n *= 10)
    for (const char* kind : {"folder", "shards", "shards2000"})
      rows.push_back({std::string(kind) == "folder" ? "image_folder" : std::string(kind) == "shards" ? "webdataset buffer 0"
                                                                                                       : "webdataset buffer 2000",
                      kind, n});
  const std::string load_before = load_average();
  for (int64_t r = 0; r < rounds; ++r)
    for (std::size_t k = 0; k < rows.size(); ++k) {
      Row& row = rows[r % 2 ? rows.size() - 1 - k : k];
      auto v = run_child("startup " + row.kind + " " + std::to_string(row.n) + " " + std::to_string(workers) + " " +
                         std::to_string(batch) + " " + dir.string());
      row.built.push_back(v[0]);
      row.first.push_back(v[1]);
      row.files = v[3];
      row.rss_start = v[4];
      row.hwm = std::max(row.hwm, v[5]);
      std::printf("round %lld %-22s N %6lld: dataset %8.1f ms, first batch at %8.1f ms, %lld files opened\n", (long long)r + 1,
                  row.name.c_str(), (long long)row.n, v[0], v[1], (long long)v[3]);
      std::fflush(stdout);
    }
  std::printf("\n16x16 PNGs, shards of 1,000, workers %lld, batch %lld, median of %lld rounds (each a fresh process, the "
              "files in the page cache); load average %s before, %s after\n\n",
              (long long)workers, (long long)batch, (long long)rounds, load_before.c_str(), load_average().c_str());
  std::printf("| dataset | N | dataset built, ms | first batch at, ms | files opened by then | RSS MiB at start -> peak |\n"
              "|---|---:|---:|---:|---:|---|\n");
  for (const auto& row : rows)
    std::printf("| %s | %lld | %.1f | %.1f | %.0f | %.1f -> %.1f |\n", row.name.c_str(), (long long)row.n, median(row.built),
                median(row.first), row.files, row.rss_start, row.hwm);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  auto arg = [&](std::size_t i, const std::string& fallback) { return i < a.size() ? a[i] : fallback; };
  const fs::path default_dir = fs::temp_directory_path() / "trainrun-bench-shards";
  try {
    if (arg(0, "") == "--phase" && arg(1, "") == "startup")
      return startup_phase(a.at(2), std::stoll(a.at(3)), std::stoll(a.at(4)), std::stoll(a.at(5)), a.at(6));
    if (arg(0, "") == "--phase")
      return rate_phase(a.at(1), std::stoll(a.at(2)), std::stoll(a.at(3)), std::stoll(a.at(4)), std::stoll(a.at(5)), a.at(6),
                        a.at(7), a.at(8), std::stoi(a.at(9)));
    if (arg(0, "") == "--soak")
      return soak(std::stoll(arg(2, "2")), std::stoll(arg(3, "32")), std::stoll(arg(4, "400")), std::stoll(arg(1, "40")),
                  arg(5, default_dir.string()));
    if (arg(0, "") == "--startup")
      return startup(std::stoll(arg(1, "100000")), std::stoll(arg(2, "3")), std::stoll(arg(3, "2")), std::stoll(arg(4, "32")),
                     arg(5, (default_dir / "startup").string()));
    return rates(std::stoll(arg(0, "2")), std::stoll(arg(1, "32")), std::stoll(arg(2, "1000")), std::stoll(arg(3, "3")),
                 std::stoll(arg(4, "4")), arg(5, default_dir.string()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shard_input: %s\n", e.what());
    return 1;
  }
}

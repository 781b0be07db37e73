// Batch transforms (data.batch_transforms): timm's Mixup/CutMix against its formulas re-derived on
// python3-torch (tests/py/mixup_ref.py) with the draw forced; the loader running them, the same
// batches whatever the number of workers; soft targets through cross_entropy as torch's.
#include "components/data/batch_transform.h"
#include "components/data/loader/loader.h"
#include "components/data/transforms/mixup.h"
#include "components/make_dataset.h"
#include "components/optim/optim.h"
#include "runner/recipe/job.h"
#include "runner/train/trainer.h"
#include "support/safetensors.h"
#include "support/python_worker.h"
#include "test_util.h"

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <fstream>

namespace trainrun {
namespace {

// The registered factory, with the schema's defaults under `params` (as the recipe engine fills them).
std::shared_ptr<BatchTransform> mixup(const std::string& params) {
  const auto& entry = Registry<BatchTransform>::instance().get("mixup");
  YAML::Node node = YAML::Load(params);
  for (const auto& p : entry.schema.params())
    if (!node[p.name]) node[p.name] = p.default_value;
  return entry.make(Config(node, "data.batch_transforms[0].mixup"));
}

// One case for the reference: a batch, how it was drawn, the mixer's options.
struct MixCase {
  Batch batch;
  MixDraw draw;
  MixupOptions options;
};

// Runs the reference on every case at once (one Python start); returns x_K, target_K, lam_K.
TensorList python_mixup(const std::vector<MixCase>& cases, int64_t classes) {
  test::TempDir dir;
  TensorList in;
  nlohmann::json specs = nlohmann::json::array();
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const auto& [batch, d, o] = cases[k];
    in.emplace_back("x_" + std::to_string(k), batch.inputs);
    in.emplace_back("target_" + std::to_string(k), batch.targets);
    specs.push_back({{"mode", o.mode},          {"lam", d.lam},
                     {"cutmix", d.cutmix},      {"box", d.box},
                     {"num_classes", classes},  {"smoothing", o.label_smoothing},
                     {"correct_lam", o.correct_lam}, {"minmax", o.cutmix_minmax.has_value()}});
  }
  save_safetensors(dir / "in.safetensors", in);
  std::ofstream(dir / "draws.json") << specs.dump();
  auto r = test::run(fmt::format("{} {} {} {} {}", test::kPython, test::source("tests/py/mixup_ref.py"),
                                 dir / "in.safetensors", dir / "out.safetensors", dir / "draws.json"));
  EXPECT_EQ(r.code, 0) << r.err;
  return load_safetensors(dir / "out.safetensors");
}

at::Tensor named(const TensorList& list, const std::string& name) {
  for (auto& [n, t] : list)
    if (n == name) return t;
  ADD_FAILURE() << name << " missing";
  return {};
}

Batch random_batch(int64_t n, int64_t classes) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(3);
  return {torch::rand({n, 3, 10, 12}, g), torch::randint(0, classes, {n}, g, torch::kLong)};
}

// Every mode, mixup and CutMix (a box inside, one clipped at the border, cutmix_minmax's), not
// mixed, even and odd batches: the images bit for bit, the targets within 1e-7.
TEST(Mixup, MixesAsTimmWithTheDrawForced) {
  const std::vector<MixDraw> batch_draws = {
      {{0.3719}, {false}, {{{0, 0, 0, 0}}}},   // mixup
      {{0.6}, {true}, {{{2, 9, 1, 8}}}},       // CutMix: lambda corrected to the box
      {{0.45}, {true}, {{{0, 10, 5, 12}}}},    // a box clipped at the border
      {{1.0}, {false}, {{{0, 0, 0, 0}}}},      // not mixed: targets only smoothed
  };
  std::vector<MixCase> cases;
  for (const char* mode : {"batch", "pair", "elem"}) {
    for (bool minmax : {false, true}) {
      MixupOptions o;
      o.mode = mode;
      if (minmax) o.cutmix_minmax = std::make_pair(0.3, 0.8);
      o.mixup_alpha = 0.8, o.cutmix_alpha = 1.0;
      Mixup m(o);
      for (int64_t n : {6, 5}) {  // an odd batch: its middle example
        std::vector<MixDraw> draws;
        if (std::string(mode) == "batch") {
          draws = batch_draws;
        } else {  // per unit, drawn (a seeded generator: mixed, CutMix and not mixed among them)
          for (uint64_t seed : {1, 2, 3}) {
            Rng rng(seed);
            draws.push_back(m.draw(n, 10, 12, rng));
          }
        }
        for (const auto& d : draws) cases.push_back({random_batch(n, 7), d, o});
      }
    }
  }
  ASSERT_EQ(cases.size(), 2u * 2 * 4 + 2 * 2 * 2 * 3);
  auto want = python_mixup(cases, 7);
  for (std::size_t k = 0; k < cases.size(); ++k) {
    auto& [batch, d, o] = cases[k];
    const std::string K = std::to_string(k), what = o.mode + " case " + K;
    Batch b{batch.inputs.clone(), batch.targets.clone()};
    std::vector<double> lam = Mixup(o).apply(b, d, 7);
    at::Tensor want_lam = named(want, "lam_" + K);
    ASSERT_EQ(int64_t(lam.size()), b.inputs.size(0)) << what;
    for (std::size_t i = 0; i < lam.size(); ++i) EXPECT_DOUBLE_EQ(lam[i], want_lam[int64_t(i)].item<double>()) << what;
    EXPECT_TRUE(b.inputs.equal(named(want, "x_" + K))) << what << ": "
                                                       << (b.inputs - named(want, "x_" + K)).abs().max().item<double>();
    EXPECT_LE((b.targets - named(want, "target_" + K)).abs().max().item<double>(), 1e-7) << what;
    EXPECT_NEAR(b.targets.sum(1).mean().item<double>(), 1.0, 1e-6) << what;
  }
}

MixupOptions alphas(double mixup_alpha, double cutmix_alpha, double prob = 1.0, double switch_prob = 0.5) {
  MixupOptions o;
  o.mixup_alpha = mixup_alpha;
  o.cutmix_alpha = cutmix_alpha;
  o.prob = prob;
  o.switch_prob = switch_prob;
  return o;
}

TEST(Mixup, DrawsFollowTheOptions) {
  Rng rng(1);
  Mixup never(alphas(1.0, 0.0, /*prob=*/0.0));
  EXPECT_EQ(never.draw(4, 10, 12, rng).lam, std::vector<double>(1, 1.0));
  Mixup cut_only(alphas(0.0, 1.0));
  int64_t mixed = 0;
  for (int i = 0; i < 200; ++i) {
    MixDraw d = cut_only.draw(4, 10, 12, rng);
    ASSERT_EQ(d.lam.size(), 1u);
    EXPECT_TRUE(d.cutmix[0]);
    EXPECT_GE(d.box[0][0], 0);
    EXPECT_LE(d.box[0][1], 10);
    EXPECT_LE(d.box[0][3], 12);
    mixed += d.lam[0] > 0 && d.lam[0] < 1;
  }
  EXPECT_EQ(mixed, 200);
  MixupOptions minmax = alphas(0.0, 1.0);
  minmax.cutmix_minmax = std::make_pair(0.2, 0.6);
  minmax.mode = "elem";
  MixDraw boxes = Mixup(minmax).draw(64, 10, 20, rng);
  ASSERT_EQ(boxes.box.size(), 64u);
  for (auto& b : boxes.box) {  // sides in [int(0.2 n), int(0.6 n)), inside the image
    EXPECT_GE(b[1] - b[0], 2);
    EXPECT_LT(b[1] - b[0], 6);
    EXPECT_GE(b[0], 0);
    EXPECT_LE(b[1], 10);
    EXPECT_GE(b[3] - b[2], 4);
    EXPECT_LT(b[3] - b[2], 12);
    EXPECT_GE(b[2], 0);
    EXPECT_LE(b[3], 20);
  }
  MixupOptions pairs;
  pairs.mode = "pair";
  EXPECT_EQ(Mixup(pairs).draw(7, 10, 12, rng).lam.size(), 3u);
  Mixup both(alphas(1.0, 1.0, 1.0, /*switch_prob=*/0.5));
  int64_t cut = 0;
  double mean = 0;
  for (int i = 0; i < 4000; ++i) {
    MixDraw d = both.draw(4, 10, 12, rng);
    cut += d.cutmix[0];
    mean += d.lam[0] / 4000;
  }
  EXPECT_NEAR(double(cut) / 4000, 0.5, 0.04);
  EXPECT_NEAR(mean, 0.5, 0.03);  // Beta(1, 1) is uniform
  EXPECT_THROW(mixup("{mixup_alpha: 0.0, cutmix_alpha: 0.0}"), std::invalid_argument);
  EXPECT_THROW(mixup("{cutmix_minmax: [0.5, 0.4]}"), std::invalid_argument);
}

struct LabelledNoise : Dataset {
  std::size_t size() const override { return 23; }
  Example get(std::size_t i) const override {
    auto g = at::make_generator<at::CPUGeneratorImpl>(i);
    return {torch::randint(0, 256, {8, 9, 3}, g, torch::kUInt8), int64_t(i % 4), {}};
  }
  int64_t label(std::size_t i) const override { return int64_t(i % 4); }
};

TEST(BatchTransforms, SameBatchesWhateverTheWorkers) {
  auto data = std::make_shared<LabelledNoise>();
  Compose to_tensor({Registry<Transform>::instance().get("to_tensor").make(Config(YAML::Load("{}")), ModelInput{})});
  std::vector<std::vector<Batch>> runs;
  for (int64_t workers : {0, 1, 3}) {
    LoaderOptions o = test::loader_options(4, workers, 9);
    o.num_classes = 4;
    o.batch_transforms = {mixup("{mixup_alpha: 0.8, cutmix_alpha: 1.0}")};
    DataLoader loader(data, to_tensor, o);
    test::load_epoch(loader, 0);
    runs.push_back(test::load_epoch(loader, 1));
  }
  ASSERT_EQ(runs[0].size(), 6u);
  for (std::size_t r = 1; r < runs.size(); ++r)
    for (std::size_t b = 0; b < runs[0].size(); ++b) {
      EXPECT_TRUE(runs[r][b].inputs.equal(runs[0][b].inputs)) << "workers run " << r << " batch " << b;
      EXPECT_TRUE(runs[r][b].targets.equal(runs[0][b].targets)) << "workers run " << r << " batch " << b;
    }
  // Mixed: probability targets, and lambdas that differ between batches.
  std::set<double> top;
  for (auto& b : runs[0]) {
    EXPECT_EQ(b.targets.sizes(), (std::vector<int64_t>{b.inputs.size(0), 4}));
    top.insert(b.targets.max().item<double>());
  }
  EXPECT_GT(top.size(), 3u);
  // Another rank draws other lambdas for its batches.
  EXPECT_FALSE(batch_rng(9, 1, 0, 0)() == batch_rng(9, 1, 1, 0)());
}

// From a recipe: training batches mixed (the run trains and evaluates), evaluation batches not;
// a loss that cannot take probabilities is exit 2 before anything starts.
TEST(BatchTransforms, FromARecipe) {
  if (!std::filesystem::exists(test::kFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  test::TempDir dir;
  const std::string base = test::source("recipes/quickstart.yaml") +
                           " data.max_train_samples=256 data.max_eval_samples=200 world.nproc_per_node=1"
                           " 'data.batch_transforms=[{mixup: {mixup_alpha: 0.8, cutmix_alpha: 1.0}}]'";
  auto r = test::run(test::trainrun(base + " train.loss=cross_entropy output.dir=" + (dir / "run")));
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = test::read_jsonl(dir / "run/metrics.jsonl");
  ASSERT_GE(lines.size(), 2u);
  EXPECT_TRUE(lines[lines.size() - 2].contains("eval_accuracy")) << lines[lines.size() - 2].dump();
  Job job = build_job(load_recipe(test::source("recipes/quickstart.yaml"),
                                  {"train.loss=cross_entropy", "data.batch_transforms=[mixup]"}));
  EXPECT_EQ(loader_options(job, true).batch_transforms.size(), 1u);
  EXPECT_TRUE(loader_options(job, false).batch_transforms.empty());
  EXPECT_EQ(loader_options(job, true).num_classes, 10);

  r = test::run(test::trainrun(base + " output.dir=" + (dir / "nll")));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("train.loss: nll takes class indices, but data.batch_transforms[0] (mixup) makes probability "
                       "targets: use cross_entropy"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "nll"));
  r = test::run(test::trainrun("check " + test::source("recipes/quickstart.yaml") + " 'data.batch_transforms=[mixxup]'"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("data.batch_transforms[0]: unknown batch transform 'mixxup' (did you mean 'mixup'?)"),
            std::string::npos)
      << r.err;
}

TEST(Loss, CrossEntropyTakesProbabilitiesAsTorchDoes) {
  test::TempDir dir;
  torch::manual_seed(4);
  at::Tensor logits = torch::randn({6, 5}) * 2;
  at::Tensor target = torch::softmax(torch::randn({6, 5}), 1);
  save_safetensors(dir / "in.safetensors", {{"logits", logits}, {"target", target}});
  auto py = test::python_reference("cross_entropy.py", {dir / "in.safetensors", "0.1"});
  ASSERT_EQ(py.code, 0) << py.err;
  double want = nlohmann::json::parse(py.out)["loss"].get<double>();
  auto loss = Registry<Loss>::instance().get("cross_entropy").make(Config(YAML::Load("{label_smoothing: 0.1}"), "train.loss"));
  EXPECT_TRUE(loss->takes_probabilities());
  EXPECT_NEAR((*loss)(logits, target, false).item<double>(), want, 1e-6 * std::abs(want));
  EXPECT_FALSE(Registry<Loss>::instance().get("nll").make(Config(YAML::Load("{}"), "train.loss"))->takes_probabilities());
}

}  // namespace
}  // namespace trainrun

// The augmentation transforms against torchvision + PIL (tests/py/augment_ref.py runs torchvision
// on PIL images with every random draw forced; we run the same op with the same parameters on the
// same pixels): every op of RandAugment / TrivialAugmentWide / AutoAugment at several magnitudes,
// ColorJitter's four adjustments, greyscale, Gaussian blur, rotation, affine and bicubic/nearest
// resizing must be bit-identical. Then the transforms' parameter draws against their definitions.
#include "components/data/pil/pil_ops.h"
#include "components/data/transform.h"
#include "components/data/transforms/augment.h"
#include "test_util.h"

#include <torch/torch.h>

#include <cmath>
#include <map>

namespace trainrun {
namespace {

using nlohmann::json;

// The registered factory, with the schema's defaults under `params` (as the recipe engine fills them).
std::shared_ptr<Transform> make_transform(const std::string& name, const std::string& params) {
  const auto& entry = Registry<Transform>::instance().get(name);
  YAML::Node node = YAML::Load(params);
  for (const auto& p : entry.schema.params())
    if (!node[p.name]) node[p.name] = p.default_value;
  return entry.make(Config(node, name), ModelInput{});
}

std::array<double, 2> pair(const json& j) { return {j[0].get<double>(), j[1].get<double>()}; }

class PilReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    auto r = test::run(std::string(test::kPython) + " " + test::source("tests/py/augment_ref.py") + " " +
                       dir_->path().string());
    ASSERT_EQ(r.code, 0) << r.err;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) cases_.push_back(json::parse(line));
  }
  static void TearDownTestSuite() { delete dir_; }

  static at::Tensor load(const std::string& name, const json& shape) {
    std::string bytes = test::read_file(*dir_ / (name + ".bin"));
    return torch::from_blob(bytes.data(), {int64_t(bytes.size())}, torch::kUInt8).clone().view(shape.get<std::vector<int64_t>>());
  }
  static at::Tensor input(const std::string& image) {
    for (auto& c : cases_)
      if (c["case"] == "input" && c["image"] == image) return load(image, c["shape"]);
    throw std::runtime_error("no input " + image);
  }

  // Runs `ours` on every case of `kind` and expects torchvision's pixels exactly; returns the count.
  static int expect_exact(const std::string& kind, const std::function<at::Tensor(const at::Tensor&, const json&)>& ours) {
    int n = 0, wrong = 0;
    for (auto& c : cases_) {
      if (c.value("kind", "") != kind) continue;
      ++n;
      at::Tensor ref = load(c["case"], c["shape"]);
      at::Tensor got = ours(input(c["image"]), c["params"]);
      if (got.sizes() != ref.sizes()) {
        ADD_FAILURE() << kind << " " << c["image"] << " " << c["params"].dump() << ": shape " << got.sizes() << " vs " << ref.sizes();
        ++wrong;
        continue;
      }
      at::Tensor d = (got.to(torch::kInt) - ref.to(torch::kInt)).abs();
      int64_t differing = d.gt(0).sum().item<int64_t>();
      if (differing) {
        ++wrong;
        ADD_FAILURE() << kind << " " << c["image"] << " " << c["params"].dump() << ": " << differing << " of " << d.numel()
                      << " values differ, max by " << d.max().item<int>();
      }
    }
    std::cout << "[ vs torchvision+PIL ] " << kind << ": " << n - wrong << " of " << n << " cases bit-identical\n";
    return n;
  }

  static inline test::TempDir* dir_ = nullptr;
  static inline std::vector<json> cases_;
};

TEST_F(PilReference, EveryPolicyOpAtEveryTestedMagnitudeIsBitIdentical) {
  int n = expect_exact("op", [](const at::Tensor& img, const json& p) {
    std::vector<double> fill = p.contains("fill") ? p["fill"].get<std::vector<double>>() : std::vector<double>{};
    return apply_augment_op(img, p["op"], p["magnitude"], fill);
  });
  EXPECT_GE(n, 150);  // 15 ops, RGB and greyscale, up to 14 magnitudes each
}

TEST_F(PilReference, PolicyMagnitudeTablesAreTorchvisions) {
  int tables = 0;
  for (auto& c : cases_) {
    if (c["case"] != "magnitudes") continue;
    ++tables;
    const bool wide = c["space"] == "trivial_augment_wide";
    const int64_t bins = c["bins"];
    for (auto& [op, values] : c["table"].items())
      for (int64_t b = 0; b < bins; ++b)
        EXPECT_EQ(augment_magnitude(op, b, bins, c["height"], c["width"], wide), values[size_t(b)].get<double>())
            << c["space"] << " " << op << " bin " << b;
  }
  EXPECT_EQ(tables, 4);
}

TEST_F(PilReference, ColorJitterAdjustmentsAreBitIdentical) {
  expect_exact("brightness", [](const at::Tensor& img, const json& p) { return pil::brightness(img, p["factor"]); });
  expect_exact("contrast", [](const at::Tensor& img, const json& p) { return pil::contrast(img, p["factor"]); });
  expect_exact("saturation", [](const at::Tensor& img, const json& p) { return pil::saturation(img, p["factor"]); });
  EXPECT_EQ(expect_exact("hue", [](const at::Tensor& img, const json& p) { return pil::hue(img, p["factor"]); }), 14);
}

TEST_F(PilReference, GrayscaleBlurRotationAndAffineAreBitIdentical) {
  expect_exact("grayscale", [](const at::Tensor& img, const json& p) {
    Rng rng(0);
    return (*make_transform("grayscale", "{num_output_channels: " + std::to_string(p["channels"].get<int>()) + "}"))(img, rng);
  });
  expect_exact("gaussian_blur", [](const at::Tensor& img, const json& p) {
    return gaussian_blur(img, p["kernel"][0], p["kernel"][1], p["sigma"][0], p["sigma"][1]);
  });
  expect_exact("rotate", [](const at::Tensor& img, const json& p) {
    std::array<double, 2> center{};
    if (!p["center"].is_null()) center = pair(p["center"]);
    return pil::rotate(img, p["angle"], p["fill"].get<std::vector<double>>(), p["expand"], p["center"].is_null() ? nullptr : &center);
  });
  expect_exact("affine", [](const at::Tensor& img, const json& p) {
    return pil::affine(img, p["angle"], pair(p["translate"]), p["scale"], pair(p["shear"]), {});
  });
}

TEST_F(PilReference, BicubicAndNearestResizeAreBitIdentical) {
  int n = expect_exact("resize", [](const at::Tensor& img, const json& p) {
    const std::string params = "{size: " + p["size"].dump() + ", interpolation: " + p["interpolation"].get<std::string>() + "}";
    Rng rng(0);
    return (*make_transform("resize", params))(img, rng);
  });
  EXPECT_EQ(n, 20);
  expect_exact("resized_crop", [](const at::Tensor& img, const json& p) {
    auto box = p["box"].get<std::vector<int64_t>>();
    return pil::resize(img.slice(0, box[0], box[0] + box[2]).slice(1, box[1], box[1] + box[3]), p["size"][0], p["size"][1],
                       pil::filter_named(p["interpolation"]));
  });
}

// RandomErasing's boxes: the share of the area and the log aspect ratio over many draws against
// torchvision's get_params (its statistics; our draws come from another generator). The bounds
// are 4 standard errors of the mean of 20000 draws (area share sd ~0.09, log-ratio sd ~0.7).
TEST_F(PilReference, RandomErasingBoxesHaveTorchvisionsDistribution) {
  json ref;
  for (auto& c : cases_)
    if (c["case"] == "erasing_stats") ref = c;
  ASSERT_FALSE(ref.is_null());
  auto erase = make_transform("random_erasing", "{p: 1.0, value: 7}");
  const int64_t h = ref["height"], w = ref["width"], draws = ref["draws"];
  double area = 0, log_ratio = 0;
  int64_t hits = 0;
  Rng rng(3);
  for (int64_t i = 0; i < draws; ++i) {
    at::Tensor out = (*erase)(torch::zeros({3, h, w}), rng);
    at::Tensor mask = out.eq(7).any(0);
    if (!mask.any().item<bool>()) continue;
    ++hits;
    at::Tensor rows = mask.any(1).nonzero(), cols = mask.any(0).nonzero();
    const double eh = double(rows.size(0)), ew = double(cols.size(0));
    EXPECT_EQ(mask.sum().item<int64_t>(), int64_t(eh * ew));  // one filled rectangle
    area += eh * ew / double(h * w);
    log_ratio += std::log(eh / ew);
  }
  EXPECT_NEAR(double(hits) / double(draws), ref["hit_rate"].get<double>(), 0.01);
  EXPECT_NEAR(area / double(hits), ref["mean_area"].get<double>(), 4 * 0.09 / std::sqrt(double(draws)));
  EXPECT_NEAR(log_ratio / double(hits), ref["mean_log_ratio"].get<double>(), 4 * 0.7 / std::sqrt(double(draws)));
}

// The policies draw only from the generator they are handed (the loader seeds it per example), so
// the same seed gives the same picture, and a different one (almost always) another.
TEST(Augment, PoliciesAreDeterministicPerGenerator) {
  at::Tensor img = torch::randint(0, 256, {40, 50, 3}, torch::kUInt8);
  for (const char* spec : {"rand_augment", "trivial_augment_wide", "auto_augment", "color_jitter"}) {
    auto t = make_transform(spec, std::string(spec) == "color_jitter" ? "{brightness: 0.4, contrast: 0.4, saturation: 0.4, hue: 0.1}" : "{}");
    int changed = 0;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      Rng a(seed), b(seed);
      at::Tensor x = (*t)(img, a), y = (*t)(img, b);
      ASSERT_TRUE(x.equal(y)) << spec << " seed " << seed;
      ASSERT_EQ(x.sizes(), img.sizes()) << spec;
      changed += !x.equal(img);
    }
    EXPECT_GE(changed, 10) << spec << " changed only " << changed << " of 20 images";
  }
}

// RandAugment at magnitude bin 0 gives every op its identity magnitude (shear, translation and
// rotation 0, enhancement factor 1, Posterize at 8 bits, Solarize at 255, which is an identity on
// pixels below 255): the output then differs from the input only through AutoContrast and Equalize.
TEST(Augment, RandAugmentAtMagnitudeZeroOnlyAppliesTheMagnitudeFreeOps) {
  at::Tensor img = torch::randint(0, 255, {30, 30, 3}, torch::kUInt8);
  img.select(2, 0).clamp_(20, 200);  // so AutoContrast has something to stretch
  auto t = make_transform("rand_augment", "{num_ops: 1, magnitude: 0}");
  at::Tensor stretched = pil::autocontrast(img), equalized = pil::equalize(img);
  for (uint64_t seed = 0; seed < 60; ++seed) {
    Rng rng(seed);
    at::Tensor out = (*t)(img, rng);
    EXPECT_TRUE(out.equal(img) || out.equal(stretched) || out.equal(equalized)) << "seed " << seed;
  }
}

TEST(Augment, BadParametersSayWhichKey) {
  auto fails_with = [](const std::string& name, const std::string& params, const std::string& key) {
    try {
      make_transform(name, params);
      ADD_FAILURE() << name << " " << params << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
    }
  };
  fails_with("rand_augment", "{magnitude: 31}", "magnitude");
  fails_with("color_jitter", "{brightness: [1.5, 0.5]}", "brightness");
  fails_with("gaussian_blur", "{kernel_size: 4}", "kernel_size");
  fails_with("random_affine", "{degrees: 10, shear: [1, 2, 3]}", "shear");
  fails_with("grayscale", "{num_output_channels: 2}", "num_output_channels");
}

TEST(Augment, RandomErasingNeedsAFloatTensor) {
  auto erase = make_transform("random_erasing", "{p: 1.0}");
  Rng rng(0);
  EXPECT_THROW((*erase)(torch::zeros({8, 8, 3}, torch::kUInt8), rng), std::invalid_argument);
}

}  // namespace
}  // namespace trainrun

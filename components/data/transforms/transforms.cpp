// torchvision.transforms semantics. Image transforms (resize, center_crop, random_resized_crop,
// random_horizontal_flip) take uint8 H x W x C and give uint8 H x W x C, as torchvision's do on
// PIL images; to_tensor turns that into CHW float in [0, 1]; normalize works on floats.
//
// Resampling is OpenCV's, arranged to come close to PIL's antialiased bilinear (what
// torchvision users get from PIL images): a triangle blur of PIL's filter width on each axis that
// shrinks, then INTER_LINEAR at half-pixel centres (see triangle_kernel). It is closer to PIL
// than INTER_AREA and twice as fast. The difference to torchvision + PIL on the same JPEG is
// measured by tests/components/transforms_test.cpp and stated in the README.
#include "components/data/cv_tensor.h"
#include "components/data/pil/pil_ops.h"
#include "components/data/transform_params.h"
#include "components/data/transform.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>

namespace trainrun {
namespace {

// Python's round(): halves go to the even neighbour (the default rounding mode).
int64_t py_round(double x) { return int64_t(std::nearbyint(x)); }

// PIL's antialiased bilinear weights output pixel i by tri((j + 0.5 - c_i) / s) over input
// pixels j, with s = in / out and c_i = (i + 0.5) * s when shrinking. The same triangle sampled
// at integer offsets, as a blur, followed by a linear resize sampling at c_i - 0.5 gives those
// weights linearly interpolated between integer offsets: exact where the triangle is straight,
// off next to its peak and its ends. One tap when the axis does not shrink (PIL's filter is then
// plain bilinear, which INTER_LINEAR is).
cv::Mat triangle_kernel(int64_t in, int64_t out) {
  if (out >= in) return cv::Mat::ones(1, 1, CV_32F);
  double s = double(in) / double(out);
  int r = int(std::ceil(s)) - 1;
  cv::Mat k(2 * r + 1, 1, CV_32F);
  double sum = 0;
  for (int d = -r; d <= r; ++d) sum += (k.at<float>(d + r) = float(std::max(0.0, 1.0 - std::abs(d) / s)));
  return k / sum;
}

// Resizes `src` into a new height x width tensor.
at::Tensor resize_mat(const cv::Mat& src, int64_t height, int64_t width) {
  at::Tensor out = at::empty({height, width, src.channels()}, at::kByte);
  cv::Mat dst(int(height), int(width), src.type(), out.data_ptr<uint8_t>());
  if (height == src.rows && width == src.cols) {
    src.copyTo(dst);
    return out;
  }
  if (height >= src.rows && width >= src.cols) {
    cv::resize(src, dst, dst.size(), 0, 0, cv::INTER_LINEAR);
    return out;
  }
  // ISOLATED: a crop (an ROI of a larger image) is blurred as if it were the whole image, as PIL
  // resizes the cropped copy; otherwise pixels outside the box would leak in at its edges.
  cv::Mat blurred;
  cv::sepFilter2D(src, blurred, -1, triangle_kernel(src.cols, width), triangle_kernel(src.rows, height),
                  cv::Point(-1, -1), 0, cv::BORDER_REPLICATE | cv::BORDER_ISOLATED);
  cv::resize(blurred, dst, dst.size(), 0, 0, cv::INTER_LINEAR);
  return out;
}

// `size` as torchvision's Resize takes it: one number = the shorter side, two = [h, w].
std::vector<int64_t> sizes(const Config& c, const std::string& key) {
  auto n = c.node()[key];
  if (n.IsScalar()) return {n.as<int64_t>()};
  auto v = n.as<std::vector<int64_t>>();
  if (v.empty() || v.size() > 2)
    throw std::invalid_argument(key + ": expected one number or [height, width]");
  return v;
}

// Crop sizes: one number = a square.
std::pair<int64_t, int64_t> hw(const Config& c, const std::string& key) {
  auto v = sizes(c, key);
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}


// `key: model` takes the model's values, written into the recipe's node as the shortest text that
// reads back the same (0.1307, not 0.13070000000000001), so the resolved recipe shows them.
std::vector<double> numbers_or_model(const Config& c, const std::string& key, const std::vector<double>& model) {
  if (c.is_word(key, "model")) {
    YAML::Node params = c.node();  // the recipe's node, shared
    YAML::Node values(YAML::NodeType::Sequence);
    for (double v : model) values.push_back(fmt::format("{}", v));
    values.SetStyle(YAML::EmitterStyle::Flow);
    params[key] = values;
  }
  return numbers(c, key);
}

// `interpolation`: bilinear is the fast OpenCV path within the documented bound of PIL's; bicubic
// and nearest are PIL's resampler ported exactly (pil_ops.h).
Schema interpolation_param(Schema s) {
  s.add("interpolation", Type::String, yaml("bilinear"), "bilinear, bicubic (PIL's, a = -0.5) or nearest")
      .choices({"bilinear", "bicubic", "nearest"});
  return s;
}


// uint8 HWC -> float CHW through one lookup table per channel: entry v is what torchvision
// computes for a pixel v (ToTensor's float(v) / 255, then Normalize's (x - mean) / std, each
// in float), taken from torch's own ops so the numbers are the same bit for bit.
class ToTensorLut : public Transform {
 public:
  // C' x 256 float (C' = 1 broadcasts); `rest` is what the table folds in, for float inputs.
  explicit ToTensorLut(at::Tensor lut, std::shared_ptr<const Transform> rest = nullptr)
      : lut_(std::move(lut)), rest_(std::move(rest)) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override { return apply_into(x, rng, {}); }
  at::Tensor apply_into(const at::Tensor& x, Rng& rng, const at::Tensor& into) const override {
    if (x.scalar_type() != at::kByte) return rest_ ? (*rest_)(x, rng) : x;  // already a float tensor, as torchvision allows
    at::Tensor img = x.contiguous();
    int64_t h = img.size(0), w = img.size(1), c = img.size(2), n = h * w;
    if (lut_.size(0) != 1 && lut_.size(0) != c)
      throw std::invalid_argument("normalize: " + std::to_string(lut_.size(0)) + " means for an image with " +
                                  std::to_string(c) + " channels");
    bool fits = into.defined() && into.scalar_type() == at::kFloat && into.is_contiguous() &&
                into.sizes() == at::IntArrayRef({c, h, w});
    at::Tensor out = fits ? into : at::empty({c, h, w}, at::kFloat);
    const uint8_t* in = img.data_ptr<uint8_t>();
    float* o = out.data_ptr<float>();
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* table = lut_.data_ptr<float>() + (lut_.size(0) == 1 ? 0 : ch) * 256;
      float* plane = o + ch * n;
      for (int64_t i = 0; i < n; ++i) plane[i] = table[in[i * c + ch]];
    }
    return out;
  }
  std::shared_ptr<Transform> fuse(const Transform& next) const override;

 protected:
  at::Tensor lut_;
  std::shared_ptr<const Transform> rest_;
};

class ToTensor : public ToTensorLut {
 public:
  ToTensor() : ToTensorLut(at::arange(256, at::kFloat).view({1, 256}).div(255.0)) {}
  const at::Tensor& lut() const { return lut_; }
};

class Normalize : public Transform {
 public:
  Normalize(std::vector<double> mean, std::vector<double> std) {
    mean_ = at::tensor(mean, at::kFloat).view({-1, 1, 1});
    std_ = at::tensor(std, at::kFloat).view({-1, 1, 1});
  }
  at::Tensor operator()(const at::Tensor& x, Rng&) const override {
    if (x.scalar_type() != at::kFloat)
      throw std::invalid_argument("normalize: needs a float tensor; put to_tensor before it");
    if (mean_.size(0) != 1 && mean_.size(0) != x.size(0))
      throw std::invalid_argument("normalize: " + std::to_string(mean_.size(0)) + " means for an image with " +
                                  std::to_string(x.size(0)) + " channels");
    return (x - mean_) / std_;
  }
  // The table of `to_tensor` then this, per channel.
  at::Tensor after(const at::Tensor& lut) const {
    return ((lut.view({1, 1, 256}) - mean_) / std_).reshape({-1, 256}).contiguous();
  }

 private:
  at::Tensor mean_, std_;
};

std::shared_ptr<Transform> ToTensorLut::fuse(const Transform& next) const {
  auto* normalize = dynamic_cast<const Normalize*>(&next);
  if (!normalize || rest_) return nullptr;
  return std::make_shared<ToTensorLut>(normalize->after(lut_), std::make_shared<Normalize>(*normalize));
}

// transforms.Resize(size, max_size): torchvision's _compute_resized_output_size.
class Resize : public Transform {
 public:
  Resize(std::vector<int64_t> size, std::optional<int64_t> max_size, pil::Filter filter)
      : size_(std::move(size)), max_size_(max_size), filter_(filter) {}
  at::Tensor operator()(const at::Tensor& x, Rng&) const override {
    at::Tensor img = x;
    cv::Mat m = as_mat(img);
    int64_t h = m.rows, w = m.cols, new_h, new_w;
    if (size_.size() == 2) {
      new_h = size_[0], new_w = size_[1];
    } else {
      int64_t shorter = std::min(h, w), longer = std::max(h, w);
      int64_t new_short = size_[0], new_long = int64_t(double(new_short) * double(longer) / double(shorter));
      if (max_size_ && new_long > *max_size_) {
        new_short = int64_t(double(*max_size_) * double(new_short) / double(new_long));
        new_long = *max_size_;
      }
      new_w = w <= h ? new_short : new_long;
      new_h = w <= h ? new_long : new_short;
    }
    if (new_h == h && new_w == w) return img;
    return filter_ == pil::Filter::bilinear ? resize_mat(m, new_h, new_w) : pil::resize(img, new_h, new_w, filter_);
  }

 private:
  std::vector<int64_t> size_;
  std::optional<int64_t> max_size_;
  pil::Filter filter_;
};

// transforms.CenterCrop: zero padding when the crop is larger, then torchvision's rounding.
class CenterCrop : public Transform {
 public:
  CenterCrop(int64_t h, int64_t w) : h_(h), w_(w) {}
  at::Tensor operator()(const at::Tensor& x, Rng&) const override {
    at::Tensor img = x;
    cv::Mat m = as_mat(img), padded;
    if (h_ > m.rows || w_ > m.cols) {
      int64_t dw = std::max<int64_t>(0, w_ - m.cols), dh = std::max<int64_t>(0, h_ - m.rows);
      cv::copyMakeBorder(m, padded, int(dh / 2), int((dh + 1) / 2), int(dw / 2), int((dw + 1) / 2),
                         cv::BORDER_CONSTANT, cv::Scalar::all(0));
      m = padded;
    }
    int64_t top = py_round(double(m.rows - h_) / 2.0), left = py_round(double(m.cols - w_) / 2.0);
    return to_tensor_copy(m(cv::Rect(int(left), int(top), int(w_), int(h_))));
  }

 private:
  int64_t h_, w_;
};

class RandomResizedCrop : public Transform {
 public:
  RandomResizedCrop(int64_t h, int64_t w, std::vector<double> scale, std::vector<double> ratio, pil::Filter filter)
      : h_(h), w_(w), scale_(std::move(scale)), ratio_(std::move(ratio)), filter_(filter) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    CropBox box = random_resized_crop_box(x.size(0), x.size(1), scale_, ratio_, rng);
    if (filter_ == pil::Filter::bilinear) return resized_crop(x, box, h_, w_);
    return pil::resize(x.slice(0, box.top, box.top + box.height).slice(1, box.left, box.left + box.width), h_, w_, filter_);
  }
  bool crops_first() const override { return true; }
  CropBox crop_box(int64_t height, int64_t width, Rng& rng) const override {
    return random_resized_crop_box(height, width, scale_, ratio_, rng);
  }
  at::Tensor after_crop(const at::Tensor& cropped, Rng&) const override {
    at::Tensor img = cropped;
    return filter_ == pil::Filter::bilinear ? resize_mat(as_mat(img), h_, w_) : pil::resize(img, h_, w_, filter_);
  }

 private:
  int64_t h_, w_;
  std::vector<double> scale_, ratio_;
  pil::Filter filter_;
};

// transforms.RandomHorizontalFlip: flips when U[0, 1) < p.
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p) : p_(p) {}
  at::Tensor operator()(const at::Tensor& x, Rng& rng) const override {
    if (!(uniform01(rng) < p_)) return x;
    at::Tensor img = x;
    cv::Mat m = as_mat(img);
    at::Tensor out = at::empty_like(img);
    cv::Mat dst(m.rows, m.cols, m.type(), out.data_ptr<uint8_t>());
    cv::flip(m, dst, 1);
    return out;
  }

 private:
  double p_;
};

}  // namespace

std::vector<double> numbers(const Config& c, const std::string& key) {
  auto n = c.node()[key];
  if (n.IsScalar()) return {n.as<double>()};
  return n.as<std::vector<double>>();
}

std::vector<double> pair_of(const Config& c, const std::string& key) {
  auto v = numbers(c, key);
  if (v.size() != 2 || v[0] > v[1])
    throw std::invalid_argument(key + ": expected [min, max] with min <= max");
  return v;
}

CropBox random_resized_crop_box(int64_t height, int64_t width, const std::vector<double>& scale,
                                const std::vector<double>& ratio, Rng& rng) {
  double area = double(height * width);
  double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    double target_area = area * (scale[0] + (scale[1] - scale[0]) * uniform01(rng));
    double aspect = std::exp(log_lo + (log_hi - log_lo) * uniform01(rng));
    int64_t w = py_round(std::sqrt(target_area * aspect));
    int64_t h = py_round(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      int64_t top = int64_t(rng() % uint64_t(height - h + 1));
      int64_t left = int64_t(rng() % uint64_t(width - w + 1));
      return {top, left, h, w};
    }
  }
  double in_ratio = double(width) / double(height);
  int64_t w = width, h = height;
  if (in_ratio < ratio[0]) {
    h = py_round(double(w) / ratio[0]);
  } else if (in_ratio > ratio[1]) {
    w = py_round(double(h) * ratio[1]);
  }
  return {(height - h) / 2, (width - w) / 2, h, w};
}

at::Tensor resized_crop(const at::Tensor& image, const CropBox& box, int64_t height, int64_t width) {
  at::Tensor img = image;
  cv::Mat m = as_mat(img);
  return resize_mat(m(cv::Rect(int(box.left), int(box.top), int(box.width), int(box.height))), height, width);
}

TRAINRUN_REGISTER(Transform, "to_tensor", "HWC uint8 image -> CHW float in [0, 1] (torchvision ToTensor)",
                  Schema(), [](const Config&, const ModelInput&) { return std::make_shared<ToTensor>(); });

TRAINRUN_REGISTER(Transform, "normalize",
                  "(x - mean) / std per channel (torchvision Normalize); `model` takes the model's values",
                  Schema()
                      .add("mean", Type::FloatList, yaml("model"), "per-channel means, or `model`")
                      .choices({"model"}).scalar_ok()
                      .add("std", Type::FloatList, yaml("model"), "per-channel stds, or `model`")
                      .choices({"model"}).scalar_ok().above(0),
                  [](const Config& c, const ModelInput& model) {
                    std::vector<double> mean = numbers_or_model(c, "mean", model.mean);
                    return std::make_shared<Normalize>(mean, numbers_or_model(c, "std", model.std));
                  });

TRAINRUN_REGISTER(Transform, "resize",
                  "resize (torchvision Resize on PIL images; antialiased when shrinking)",
                  interpolation_param(Schema()
                      .required("size", Type::IntList, "one number = the shorter side (aspect kept), or [height, width]")
                      .scalar_ok().min(1)
                      .add("max_size", Type::Int, YAML::Node(), "cap on the longer side when size is one number")
                      .nullable().min(1)),
                  [](const Config& c, const ModelInput&) {
                    std::optional<int64_t> max_size;
                    if (!c.is_null("max_size")) max_size = c.get<int64_t>("max_size");
                    return std::make_shared<Resize>(sizes(c, "size"), max_size, pil::filter_named(c.get<std::string>("interpolation", "bilinear")));
                  });

TRAINRUN_REGISTER(Transform, "center_crop",
                  "crop the centre (torchvision CenterCrop: zero-padded when the crop is larger)",
                  Schema().required("size", Type::IntList, "one number = a square, or [height, width]").scalar_ok().min(1),
                  [](const Config& c, const ModelInput&) {
                    auto size = hw(c, "size");
                    return std::make_shared<CenterCrop>(size.first, size.second);
                  });

TRAINRUN_REGISTER(Transform, "random_resized_crop",
                  "random area/aspect crop resized to size (torchvision RandomResizedCrop, 10 tries then centre)",
                  interpolation_param(Schema()
                      .required("size", Type::IntList, "one number = a square, or [height, width]").scalar_ok().min(1)
                      .add("scale", Type::FloatList, yaml("[0.08, 1.0]"), "[min, max] share of the image area").above(0)
                      .add("ratio", Type::FloatList, yaml("[0.75, 1.3333333333333333]"), "[min, max] aspect ratio w/h")
                      .above(0)),
                  [](const Config& c, const ModelInput&) {
                    auto size = hw(c, "size");
                    return std::make_shared<RandomResizedCrop>(size.first, size.second, pair_of(c, "scale"),
                                                               pair_of(c, "ratio"), pil::filter_named(c.get<std::string>("interpolation", "bilinear")));
                  });

TRAINRUN_REGISTER(Transform, "random_horizontal_flip", "flip left-right with probability p (torchvision RandomHorizontalFlip)",
                  Schema().add("p", Type::Float, yaml("0.5"), "probability of a flip").range(0, 1),
                  [](const Config& c, const ModelInput&) { return std::make_shared<RandomHorizontalFlip>(c.get<double>("p")); });

}  // namespace trainrun

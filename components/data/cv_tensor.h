// Zero-copy views between uint8 H x W x C tensors and cv::Mat, for the OpenCV-backed decoder and
// transforms. Internal to components/data: OpenCV is a private dependency of trainrun_core.
#pragma once

#include <ATen/ATen.h>
#include <opencv2/core.hpp>

#include <stdexcept>

namespace trainrun {

// A cv::Mat over the tensor's memory (made contiguous first); the tensor must outlive it.
inline cv::Mat as_mat(at::Tensor& t) {
  if (t.scalar_type() != at::kByte || t.dim() != 3)
    throw std::invalid_argument("expected a uint8 H x W x C image (put image transforms before to_tensor)");
  t = t.contiguous();
  return cv::Mat(int(t.size(0)), int(t.size(1)), CV_8UC(int(t.size(2))), t.data_ptr<uint8_t>());
}

// A tensor owning a copy of `m` (which may be a non-contiguous ROI).
inline at::Tensor to_tensor_copy(const cv::Mat& m) {
  at::Tensor t = at::empty({m.rows, m.cols, m.channels()}, at::kByte);
  cv::Mat dst(m.rows, m.cols, m.type(), t.data_ptr<uint8_t>());
  m.copyTo(dst);
  return t;
}

}  // namespace trainrun

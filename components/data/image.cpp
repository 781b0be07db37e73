#include "components/data/image.h"

#include "components/data/dataset.h"

#include <ATen/ATen.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace trainrun {

at::Tensor decode_image(const std::string& path, int64_t channels) {
  cv::Mat bgr = cv::imread(path, channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
  if (bgr.empty()) throw DataError(path + ": cannot read or decode the image");
  cv::Mat img;
  if (channels == 1) img = bgr;
  else cv::cvtColor(bgr, img, cv::COLOR_BGR2RGB);
  at::Tensor out = at::empty({img.rows, img.cols, channels}, at::kByte);
  cv::Mat view(img.rows, img.cols, channels == 1 ? CV_8UC1 : CV_8UC3, out.data_ptr<uint8_t>());
  img.copyTo(view);
  return out;
}

}  // namespace trainrun

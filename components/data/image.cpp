#include "components/data/image.h"

#include "components/data/cv_tensor.h"
#include "components/data/dataset.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <fstream>

namespace trainrun {

at::Tensor decode_image(const std::string& path, int64_t channels) {
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("decode_image: channels must be 1 or 3, got " + std::to_string(channels));
  // Always decode to colour, then convert: IMREAD_GRAYSCALE would hand back a JPEG's own luma
  // plane, which is not what PIL's convert('L') computes from the RGB pixels. The EXIF
  // orientation is ignored, as torchvision's pil_loader does (Image.open does not apply it).
  cv::Mat bgr;
  try {
    bgr = cv::imread(path, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const cv::Exception& e) {
    throw UnreadableFile(path + ": cannot decode the image (" + e.err + ")");
  }
  if (bgr.empty()) {
    if (!std::ifstream(path)) throw UnreadableFile(path + ": cannot open the file");
    throw UnreadableFile(path + ": cannot decode the image (corrupt or not an image)");
  }
  at::Tensor out = at::empty({bgr.rows, bgr.cols, channels}, at::kByte);
  cv::Mat dst(bgr.rows, bgr.cols, CV_8UC(int(channels)), out.data_ptr<uint8_t>());
  cv::cvtColor(bgr, dst, channels == 3 ? cv::COLOR_BGR2RGB : cv::COLOR_BGR2GRAY);  // writes into `out`
  return out;
}

void write_image(const std::string& path, const at::Tensor& image) {
  at::Tensor img = image;
  cv::Mat m = as_mat(img), bgr;
  if (m.channels() == 3)
    cv::cvtColor(m, bgr, cv::COLOR_RGB2BGR);  // a new buffer: the caller's image stays RGB
  else
    bgr = m;
  bool ok = false;
  try {
    ok = cv::imwrite(path, bgr);
  } catch (const cv::Exception& e) {
    throw DataError(path + ": cannot write the image (" + e.err + ")");
  }
  if (!ok) throw DataError(path + ": cannot write the image");
}

}  // namespace trainrun

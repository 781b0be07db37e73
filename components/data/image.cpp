#include "components/data/image.h"

#include "components/data/cv_tensor.h"
#include "components/data/data_error.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <ATen/ATen.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include <jpeglib.h>

namespace trainrun {

namespace {

// Whatever imgcodecs reads, whole.
at::Tensor decode_with_opencv(const std::string& path, int64_t channels) {
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

// The same from bytes in memory (a tar shard's member), `what` naming them in errors.
at::Tensor decode_with_opencv(const std::vector<unsigned char>& data, const std::string& what, int64_t channels) {
  cv::Mat bgr;
  try {
    bgr = cv::imdecode(data, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const cv::Exception& e) {
    throw UnreadableFile(what + ": cannot decode the image (" + e.err + ")");
  }
  if (bgr.empty()) throw UnreadableFile(what + ": cannot decode the image (corrupt or not an image)");
  at::Tensor out = at::empty({bgr.rows, bgr.cols, channels}, at::kByte);
  cv::Mat dst(bgr.rows, bgr.cols, CV_8UC(int(channels)), out.data_ptr<uint8_t>());
  cv::cvtColor(bgr, dst, channels == 3 ? cv::COLOR_BGR2RGB : cv::COLOR_BGR2GRAY);
  return out;
}

// The file's bytes; empty when it cannot be read (the OpenCV path then names the problem).
std::vector<unsigned char> read_bytes(const std::string& path) {
  std::vector<unsigned char> data;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::streamoff size = in ? std::streamoff(in.tellg()) : -1;
  if (size > 0) {
    data.resize(std::size_t(size));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(data.data()), size)) data.clear();
  }
  return data;
}

bool is_jpeg(const std::vector<unsigned char>& data) {
  return data.size() > 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

struct JpegError {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
};

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) { std::longjmp(reinterpret_cast<JpegError*>(cinfo->err)->jump, 1); }
void jpeg_quiet(j_common_ptr) {}  // warnings are counted (num_warnings) and handled by falling back

// The box of a JPEG in `data`, decoded as OpenCV's imread decodes the whole file (JCS_EXT_BGR
// there, RGB here: the same per-pixel colour conversion, JDCT_ISLOW, fancy upsampling). Calls
// pick(H, W) once the header is read and stores the box in *box. False (and *box untouched when
// pick was not called) when the file is not a JPEG this handles, is corrupt, or gave a warning:
// the caller then decodes the whole file as before.
bool decode_jpeg_box(const std::vector<unsigned char>& data, const RegionPicker& pick, std::optional<CropBox>* box,
                     at::Tensor* rgb, std::vector<unsigned char>* row_buffer) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = jpeg_fail;
  err.pub.output_message = jpeg_quiet;
  // Everything that changes after setjmp lives in the caller (no C++ object to unwind here).
  std::vector<unsigned char>& row = *row_buffer;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo, TRUE);
  if ((cinfo.jpeg_color_space != JCS_YCbCr && cinfo.jpeg_color_space != JCS_GRAYSCALE &&
       cinfo.jpeg_color_space != JCS_RGB) ||
      cinfo.err->num_warnings > 0) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const int64_t H = cinfo.image_height, W = cinfo.image_width;
  *box = pick(H, W);
  const CropBox b = **box;
  if (b.top < 0 || b.left < 0 || b.height <= 0 || b.width <= 0 || b.top + b.height > H || b.left + b.width > W) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = JCS_RGB;
  cinfo.dct_method = JDCT_ISLOW;
  cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&cinfo);
  // Fancy upsampling reads one chroma sample beyond each edge of what it outputs: a window
  // max_samp_factor pixels wider than the box on each side (within the image) makes the box's
  // edge pixels what a full decode gives (narrower windows differ there; tests/components/data_test.cpp).
  // jpeg_crop_scanline widens the window further, to iMCU boundaries.
  const int64_t margin_x = cinfo.max_h_samp_factor, margin_y = cinfo.max_v_samp_factor;
  int64_t x0 = std::max<int64_t>(0, b.left - margin_x), x1 = std::min<int64_t>(W, b.left + b.width + margin_x);
  JDIMENSION xoff = JDIMENSION(x0), cw = JDIMENSION(x1 - x0);
  if (x0 > 0 || x1 < W) jpeg_crop_scanline(&cinfo, &xoff, &cw);
  else xoff = 0, cw = cinfo.output_width;
  // Rows: jpeg_skip_scanlines entropy-decodes the skipped rows without producing pixels and keeps
  // the upsampler's context; read and drop the margin rows, then read the box.
  int64_t y0 = std::max<int64_t>(0, b.top - margin_y);
  if (y0 > 0) y0 = int64_t(jpeg_skip_scanlines(&cinfo, JDIMENSION(y0)));
  const int64_t comps = cinfo.output_components;  // 3
  row.resize(std::size_t(cw) * std::size_t(comps));
  *rgb = at::empty({b.height, b.width, 3}, at::kByte);
  uint8_t* out = rgb->data_ptr<uint8_t>();
  const int64_t col = b.left - int64_t(xoff);
  JSAMPROW rows[1] = {row.data()};
  for (int64_t y = y0; y < b.top + b.height; ++y) {
    if (jpeg_read_scanlines(&cinfo, rows, 1) != 1) longjmp(err.jump, 1);
    if (y < b.top) continue;
    std::memcpy(out + (y - b.top) * b.width * 3, row.data() + col * comps, std::size_t(b.width * 3));
  }
  bool clean = cinfo.err->num_warnings == 0;
  jpeg_destroy_decompress(&cinfo);  // the rows below the box are never decoded
  return clean;
}

// The box of a JPEG through libjpeg-turbo, in `channels`; nullopt when decode_jpeg_box declines.
std::optional<at::Tensor> decode_jpeg(const std::vector<unsigned char>& data, int64_t channels,
                                      const RegionPicker& pick, std::optional<CropBox>* box) {
  at::Tensor rgb;
  std::vector<unsigned char> row;
  if (!decode_jpeg_box(data, pick, box, &rgb, &row)) return std::nullopt;
  if (channels == 3) return rgb;
  at::Tensor out = at::empty({rgb.size(0), rgb.size(1), 1}, at::kByte);
  cv::Mat src(int(rgb.size(0)), int(rgb.size(1)), CV_8UC3, rgb.data_ptr<uint8_t>());
  cv::Mat dst(int(rgb.size(0)), int(rgb.size(1)), CV_8UC1, out.data_ptr<uint8_t>());
  cv::cvtColor(src, dst, cv::COLOR_RGB2GRAY);  // as OpenCV's BGR2GRAY on the same pixels
  return out;
}

// The formats torchvision's ImageFolder lists (IMG_EXTENSIONS, as image_files.cpp), told by
// their first bytes. Only these reach OpenCV: imread tries every decoder Debian built it with
// (DICOM through GDCM, JPEG 2000, OpenEXR, GDAL's rasters...), and GDCM aborts the process on a
// malformed file (found by fuzz/image_fuzz.cpp), so a stray file must not reach them.
bool is_listed_format(const std::vector<unsigned char>& d) {
  auto starts = [&](const char* magic, std::size_t n, std::size_t at = 0) {
    return d.size() >= at + n && std::memcmp(d.data() + at, magic, n) == 0;
  };
  return is_jpeg(d) || starts("\x89PNG\r\n\x1a\n", 8) || starts("BM", 2) || starts("II*\0", 4) || starts("MM\0*", 4) ||
         (starts("RIFF", 4) && starts("WEBP", 4, 8)) ||
         (d.size() >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6');  // PBM/PGM/PPM
}

// PIL's decompression-bomb limit (2 x Image.MAX_IMAGE_PIXELS): torchvision's loader refuses
// larger images, and a few hundred bytes of header can claim 20000 x 35000 pixels (2 GB to decode).
constexpr int64_t kMaxPixels = 178956970;

// Width and height from a JPEG's or PNG's header, without decoding; nullopt for other formats
// and headers this cannot read (the decoder then judges the file).
std::optional<std::pair<int64_t, int64_t>> header_size(const std::vector<unsigned char>& data) {
  static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (data.size() >= 24 && std::memcmp(data.data(), png, 8) == 0 && std::memcmp(data.data() + 12, "IHDR", 4) == 0) {
    auto be32 = [&](std::size_t at) {
      return int64_t(data[at]) << 24 | int64_t(data[at + 1]) << 16 | int64_t(data[at + 2]) << 8 | int64_t(data[at + 3]);
    };
    return std::make_pair(be32(20), be32(16));
  }
  if (!is_jpeg(data)) return std::nullopt;
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = jpeg_fail;
  err.pub.output_message = jpeg_quiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return std::nullopt;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data.data(), static_cast<unsigned long>(data.size()));
  jpeg_read_header(&cinfo, TRUE);
  auto size = std::make_pair(int64_t(cinfo.image_height), int64_t(cinfo.image_width));
  jpeg_destroy_decompress(&cinfo);
  return size;
}

}  // namespace

// JPEGs go straight to libjpeg-turbo in RGB (the decoder imread uses, without its BGR round trip:
// about a third faster, the same pixels); anything else, and JPEGs it declines, to imread.
at::Tensor decode_image(const std::string& path, int64_t channels) {
  return decode_image_region(path, channels, [](int64_t h, int64_t w) { return CropBox{0, 0, h, w}; });
}

at::Tensor decode_image_region(const std::string& path, int64_t channels, const RegionPicker& pick) {
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("decode_image: channels must be 1 or 3, got " + std::to_string(channels));
  std::vector<unsigned char> data = read_bytes(path);
  if (data.empty()) {  // missing, unreadable or empty: OpenCV names which
    at::Tensor full = decode_with_opencv(path, channels);
    CropBox b = pick(full.size(0), full.size(1));
    return full.narrow(0, b.top, b.height).narrow(1, b.left, b.width).contiguous();
  }
  return decode_image_bytes(data, path, channels, pick);
}

at::Tensor decode_image_bytes(const std::vector<unsigned char>& data, const std::string& what, int64_t channels,
                              const RegionPicker& pick) {
  if (channels != 1 && channels != 3)
    throw std::invalid_argument("decode_image: channels must be 1 or 3, got " + std::to_string(channels));
  std::optional<CropBox> box;
  // PNG sizes are 32-bit: their product fits in 64 bits unsigned, not signed.
  if (auto hw = header_size(data); hw && uint64_t(hw->first) * uint64_t(hw->second) > uint64_t(kMaxPixels))
    throw UnreadableFile(what + ": " + std::to_string(hw->second) + " x " + std::to_string(hw->first) + " = " +
                         std::to_string(uint64_t(hw->first) * uint64_t(hw->second)) + " pixels, more than " + std::to_string(kMaxPixels) +
                         " (PIL's decompression-bomb limit, which torchvision's loader enforces)");
  if (data.empty()) throw UnreadableFile(what + ": cannot decode the image (empty)");
  if (!is_listed_format(data))
    throw UnreadableFile(what + ": cannot decode the image: not a JPEG, PNG, BMP, PPM/PGM, TIFF or WebP file (judged by its first bytes)");
  if (is_jpeg(data))
    if (auto img = decode_jpeg(data, channels, pick, &box)) return *img;
  // Not a JPEG, or one libjpeg could not decode cleanly: the whole image, then the box (drawn
  // only once: the decoder may have read the header before giving up).
  at::Tensor full = decode_with_opencv(data, what, channels);
  CropBox b = box ? *box : pick(full.size(0), full.size(1));
  return full.narrow(0, b.top, b.height).narrow(1, b.left, b.width).contiguous();
}

namespace {

// OpenCV's encoders take BGR; `img` keeps the memory a grayscale Mat points to.
cv::Mat opencv_order(at::Tensor& img) {
  cv::Mat m = as_mat(img), bgr;
  if (m.channels() != 3) return m;
  cv::cvtColor(m, bgr, cv::COLOR_RGB2BGR);  // a new buffer: the caller's image stays RGB
  return bgr;
}

}  // namespace

void write_image(const std::string& path, const at::Tensor& image) {
  at::Tensor img = image;
  cv::Mat bgr = opencv_order(img);
  bool ok = false;
  try {
    ok = cv::imwrite(path, bgr);
  } catch (const cv::Exception& e) {
    throw DataError(path + ": cannot write the image (" + e.err + ")");
  }
  if (!ok) throw DataError(path + ": cannot write the image");
}

std::vector<unsigned char> encode_png(const at::Tensor& image) {
  at::Tensor img = image;
  cv::Mat bgr = opencv_order(img);
  std::vector<unsigned char> out;
  bool ok = false;
  try {
    ok = cv::imencode(".png", bgr, out);
  } catch (const cv::Exception& e) {
    throw DataError("cannot encode the image as PNG (" + e.err + ")");
  }
  if (!ok) throw DataError("cannot encode the image as PNG");
  return out;
}

}  // namespace trainrun

#include "components/data/webdataset.h"

#include "support/download.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>

namespace trainrun::wds {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --- braceexpand ----------------------------------------------------------------------------

// The matching '}' of the '{' at `open`, nullopt when there is none.
std::optional<std::size_t> closing_brace(const std::string& s, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] == '{') ++depth;
    if (s[i] == '}' && --depth == 0) return i;
  }
  return std::nullopt;
}

// The comma-separated parts of a group's inside, at depth 0.
std::vector<std::string> top_level_parts(const std::string& inner) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (std::size_t i = 0; i < inner.size(); ++i) {
    char c = inner[i];
    if (c == '\\' && i + 1 < inner.size()) {
      cur += c;
      cur += inner[++i];
      continue;
    }
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

// braceexpand's ranges: {0..3}, {000..127} (zero padding to the longer bound when a bound has a
// leading zero), {10..0..2}, {a..e}; nullopt when `inner` is not a range.
std::optional<std::vector<std::string>> expand_range(const std::string& inner) {
  static const std::regex int_range(R"((-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?)");
  static const std::regex char_range(R"(([A-Za-z])\.\.([A-Za-z])(?:\.\.(-?\d+))?)");
  std::smatch m;
  std::vector<std::string> out;
  if (std::regex_match(inner, m, int_range)) {
    const std::string left = m[1], right = m[2];
    auto padded = [](const std::string& s) {
      return s != "0" && s != "-0" && (starts_with(s, "0") || starts_with(s, "-0"));
    };
    const std::size_t width = padded(left) || padded(right) ? std::max(left.size(), right.size()) : 0;
    long long a = std::stoll(left), b = std::stoll(right);
    long long step = m[3].matched ? std::llabs(std::stoll(m[3])) : 1;
    if (step == 0) step = 1;
    for (long long v = a; a <= b ? v <= b : v >= b; v += a <= b ? step : -step) {
      std::string digits = std::to_string(std::llabs(v));
      std::string sign = v < 0 ? "-" : "";
      std::size_t w = width > sign.size() ? width - sign.size() : 0;
      if (digits.size() < w) digits.insert(0, w - digits.size(), '0');
      out.push_back(sign + digits);
    }
    return out;
  }
  if (std::regex_match(inner, m, char_range)) {
    char a = m[1].str()[0], b = m[2].str()[0];
    int step = m[3].matched ? std::abs(std::stoi(m[3])) : 1;
    if (step == 0) step = 1;
    for (int v = a; a <= b ? v <= b : v >= b; v += a <= b ? step : -step) out.push_back(std::string(1, char(v)));
    return out;
  }
  return std::nullopt;
}

void brace_expand(const std::string& s, std::vector<std::string>& out) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
      continue;
    }
    if (s[i] != '{') continue;
    auto close = closing_brace(s, i);
    if (!close) throw std::invalid_argument("'" + s + "': unbalanced '{'");
    const std::string prefix = s.substr(0, i), inner = s.substr(i + 1, *close - i - 1), rest = s.substr(*close + 1);
    std::vector<std::string> alternatives;
    if (auto range = expand_range(inner)) {
      alternatives = *range;
    } else {
      std::vector<std::string> parts = top_level_parts(inner);
      if (parts.size() < 2) {
        // "{x}" is left as it is, as braceexpand leaves it; the rest of the string is still expanded.
        std::vector<std::string> tails;
        brace_expand(rest, tails);
        std::vector<std::string> heads;
        brace_expand(inner, heads);
        for (const auto& h : heads)
          for (const auto& t : tails) out.push_back(prefix + "{" + h + "}" + t);
        return;
      }
      for (const auto& p : parts) brace_expand(p, alternatives);
    }
    std::vector<std::string> tails;
    brace_expand(rest, tails);
    for (const auto& a : alternatives)
      for (const auto& t : tails) out.push_back(prefix + a + t);
    return;
  }
  if (s.find('}') != std::string::npos) {
    // A '}' without its '{' (escaped ones aside) is unbalanced.
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\\') {
        ++i;
        continue;
      }
      if (s[i] == '}') throw std::invalid_argument("'" + s + "': unbalanced '}'");
    }
  }
  std::string plain;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '{' || s[i + 1] == '}' || s[i + 1] == ',' || s[i + 1] == '\\'))
      ++i;
    plain += s[i];
  }
  out.push_back(plain);
}

// webdataset's envsubst: ${name} is the environment variable WDS_name, repeated while it changes
// (at most 10 times).
std::string envsubst(std::string s) {
  static const std::regex var(R"(\$\{(\w+)\})");
  for (int round = 0; round < 10; ++round) {
    std::string out;
    std::smatch m;
    std::string rest = s;
    while (std::regex_search(rest, m, var)) {
      std::string name = "WDS_" + m[1].str();
      const char* value = std::getenv(name.c_str());
      if (!value) throw std::invalid_argument("'" + s + "': ${" + m[1].str() + "} names $" + name + ", which is not set");
      out += m.prefix().str() + value;
      rest = m.suffix();
    }
    out += rest;
    if (out == s) break;
    s = out;
  }
  return s;
}

}  // namespace

// --- byte sources for libarchive ------------------------------------------------------------
// (a named namespace: ShardReader::Impl holds one)
namespace source {

struct Source {
  virtual ~Source() = default;
  virtual std::size_t read(char* out, std::size_t n) = 0;  // 0 at the end; throws ShardError
  virtual int64_t skip(int64_t n) { return 0; }            // bytes skipped without reading; 0: not possible
};

class FileSource : public Source {
 public:
  FileSource(const std::string& path, int64_t offset) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ShardError(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd_);
      throw ShardError(path + ": is a folder, not a tar shard");
    }
    regular_ = S_ISREG(st.st_mode);
    if (offset > 0 && ::lseek(fd_, offset, SEEK_SET) < 0) {
      int e = errno;
      ::close(fd_);
      throw ShardError(path + ": cannot seek to byte " + std::to_string(offset) + ": " + std::strerror(e));
    }
#ifdef POSIX_FADV_SEQUENTIAL
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  }
  ~FileSource() override { ::close(fd_); }
  std::size_t read(char* out, std::size_t n) override {
    for (;;) {
      ssize_t r = ::read(fd_, out, n);
      if (r >= 0) return std::size_t(r);
      if (errno != EINTR) throw ShardError(path_ + ": cannot read: " + std::strerror(errno));
    }
  }
  int64_t skip(int64_t n) override {
    if (!regular_) return 0;
    return ::lseek(fd_, n, SEEK_CUR) < 0 ? 0 : n;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
};

class HttpSource : public Source {
 public:
  HttpSource(const std::string& url, int64_t offset, const OpenOptions& o)
      : stream_(url, o.headers, offset, int(o.retries)) {}
  std::size_t read(char* out, std::size_t n) override {
    try {
      return stream_.read(out, n);
    } catch (const DownloadError& e) {
      throw ShardError(e.what());
    }
  }

 private:
  HttpStream stream_;
};

bool is_remote(const std::string& url) { return starts_with(url, "http://") || starts_with(url, "https://"); }

std::string local_path(const std::string& url) { return starts_with(url, "file://") ? url.substr(7) : url; }

// A remote shard in options.cache_dir: downloaded whole (resumed, under a lock) the first time.
std::string cached_copy(const std::string& url, const OpenOptions& o) {
  std::string name = url.substr(url.find_last_of('/') + 1);
  std::string digest;  // the URL's folder, so that two datasets' train-000000.tar do not meet
  std::hash<std::string> h;
  digest = std::to_string(h(url.substr(0, url.size() - name.size())));
  std::filesystem::path dest = std::filesystem::path(o.cache_dir) / digest / name;
  DownloadRequest r;
  r.url = url;
  r.destination = dest;
  r.headers = o.headers;
  r.what = "shard";
  r.offline_hint = "or put the shard at " + dest.string();
  try {
    download(r);
  } catch (const DownloadError& e) {
    throw ShardError(e.what());
  }
  return dest.string();
}

std::unique_ptr<Source> open_source(const std::string& url, int64_t offset, const OpenOptions& o) {
  if (starts_with(url, "pipe:")) throw ShardError(url + ": pipe: URLs are not supported; use a path or an http(s) URL");
  if (is_remote(url)) {
    if (!o.cache_dir.empty()) return std::make_unique<FileSource>(cached_copy(url, o), offset);
    return std::make_unique<HttpSource>(url, offset, o);
  }
  return std::make_unique<FileSource>(local_path(url), offset);
}

// An uncompressed tar is reopened at a byte offset; a compressed one is read from its start
// and the members before the offset skipped.
bool seekable(const std::string& url) { return ends_with(url, ".tar"); }

}  // namespace source

using source::open_source;
using source::seekable;
using source::Source;

// webdataset's regex ^((?:.*/|)[^.]+)[.]([^/]*)$ worked out by hand: a member's name comes from
// the shard, and std::regex recurses per character (a long PAX name would overflow the stack). The
// dot is the first one of the base name when the base name does not start with one; a base name
// that does (".x.jpg") splits at that dot when the folder above it has no dot ("dir/.x.jpg": key
// "dir/"); anything else has no key. Checked against webdataset's own answers in
// tests/components/webdataset_grouping_test.cpp.
std::optional<std::pair<std::string, std::string>> base_plus_ext(const std::string& name) {
  const std::size_t slash = name.rfind('/');
  const std::size_t base = slash == std::string::npos ? 0 : slash + 1;
  std::size_t dot = name.find('.', base);
  if (dot == std::string::npos) return std::nullopt;
  if (dot == base) {
    if (base == 0) return std::nullopt;
    std::size_t from = 0;  // the folder above: from the slash before the last one
    if (base >= 2) {
      const std::size_t above = name.rfind('/', base - 2);
      if (above != std::string::npos) from = above + 1;
    }
    if (name.find('.', from) < base) return std::nullopt;
  }
  return std::make_pair(name.substr(0, dot), name.substr(dot + 1));
}

// tar_file_iterator's two rules: a top-level __X__ name, and re.match("__[^/]*__($|/)") (a first
// path component of at least 4 characters that starts and ends with "__").
bool is_meta(const std::string& name) {
  const bool top_level = name.find('/') == std::string::npos && starts_with(name, "__") && ends_with(name, "__");
  const std::string first = name.substr(0, name.find('/'));
  return top_level || (first.size() >= 4 && starts_with(first, "__") && ends_with(first, "__"));
}

std::vector<std::string> expand_urls(const std::string& pattern) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t sep = pattern.find("::", start);
    std::string part = pattern.substr(start, sep == std::string::npos ? std::string::npos : sep - start);
    brace_expand(envsubst(part), out);
    if (sep == std::string::npos) break;
    start = sep + 2;
  }
  return out;
}

// --- ShardReader --------------------------------------------------------------------------

struct ShardReader::Impl {
  std::string url;
  std::unique_ptr<Source> source;
  struct archive* a = nullptr;
  int64_t base = 0;       // the byte offset the source starts at
  int64_t skip_to = 0;    // compressed shards: members before it are passed over
  bool ended = false;
  int64_t end_position = 0;
  std::vector<char> buffer = std::vector<char>(std::size_t(1) << 18);
  std::string error;  // a Source exception, carried across libarchive
  std::string last_member;  // the last member read whole, for messages

  struct Member {
    std::string key, field, name;
    int64_t offset = 0;
    std::string data;
  };
  std::optional<Member> pending;

  static la_ssize_t on_read(struct archive*, void* self, const void** out) {
    auto* s = static_cast<Impl*>(self);
    try {
      *out = s->buffer.data();
      return la_ssize_t(s->source->read(s->buffer.data(), s->buffer.size()));
    } catch (const std::exception& e) {
      s->error = e.what();
      return -1;
    }
  }
  static la_int64_t on_skip(struct archive*, void* self, la_int64_t n) {
    return static_cast<Impl*>(self)->source->skip(n);
  }

  [[noreturn]] void fail(const std::string& what) {
    if (!error.empty()) throw ShardError(error);
    std::string why = archive_error_string(a) ? archive_error_string(a) : "unknown libarchive error";
    throw ShardError(url + ": " + what + why);
  }

  // The next member that belongs to a sample, nullopt at the end of the archive.
  std::optional<Member> read_member() {
    if (ended) return std::nullopt;
    for (;;) {
      struct archive_entry* entry = nullptr;
      int r = archive_read_next_header(a, &entry);
      if (r == ARCHIVE_EOF) {
        ended = true;
        end_position = base + archive_read_header_position(a);
        return std::nullopt;
      }
      if (r < ARCHIVE_WARN) {
        std::string why = archive_error_string(a) ? archive_error_string(a) : "";
        if (!error.empty()) throw ShardError(error);
        if (why.find("Unrecognized archive format") != std::string::npos)
          throw ShardError(url + ": not a tar archive (libarchive: " + why + ")");
        if (why.find("runcated") != std::string::npos)
          throw ShardError(url + ": truncated tar archive" +
                           (last_member.empty() ? std::string(" before its first member") : " after member '" + last_member + "'") +
                           " (libarchive: " + why + ")");
        fail("cannot read a member header: ");
      }
      const int64_t offset = base + archive_read_header_position(a);
      const char* raw = archive_entry_pathname(entry);
      std::string name = raw ? raw : "";
      if (offset < skip_to || archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry) ||
          name.empty() || is_meta(name))
        continue;
      auto split = base_plus_ext(name);
      if (!split) continue;
      Member m{split->first, split->second, name, offset, {}};
      for (char& c : m.field) c = char(std::tolower(static_cast<unsigned char>(c)));
      const int64_t size = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
      // Straight into a string of the header's size (not through `buffer`: libarchive copies out
      // of the block the read callback handed it, which lives there). A member never holds more;
      // the call that finds its end reads into `probe`, which also takes the data of a member
      // whose header has no size.
      m.data.resize(std::size_t(std::max<int64_t>(size, 0)));
      std::size_t got = 0;
      char probe[512];
      for (;;) {
        const bool room = got < m.data.size();
        la_ssize_t n = room ? archive_read_data(a, m.data.data() + got, m.data.size() - got)
                            : archive_read_data(a, probe, sizeof probe);
        if (n == 0) break;
        if (n < 0) {
          if (!error.empty()) throw ShardError(error);
          std::string why = archive_error_string(a) ? archive_error_string(a) : "";
          throw ShardError(url + ": truncated tar archive: member '" + name + "' ends early (libarchive: " + why + ")");
        }
        if (!room) m.data.append(probe, std::size_t(n));
        got += std::size_t(n);
      }
      m.data.resize(got);
      last_member = name;
      return m;
    }
  }
};

ShardReader::ShardReader(const std::string& url, int64_t offset, const OpenOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.url = url;
  const bool seek = offset > 0 && seekable(url);
  s.base = seek ? offset : 0;
  s.skip_to = seek ? 0 : offset;
  s.source = open_source(url, s.base, options);
  s.a = archive_read_new();
  archive_read_support_filter_all(s.a);
  archive_read_support_format_tar(s.a);
  archive_read_support_format_empty(s.a);
  archive_read_set_read_callback(s.a, Impl::on_read);
  archive_read_set_skip_callback(s.a, Impl::on_skip);
  archive_read_set_callback_data(s.a, &s);
  if (archive_read_open1(s.a) != ARCHIVE_OK) {
    std::string why = archive_error_string(s.a) ? archive_error_string(s.a) : "";
    std::string carried = s.error;
    archive_read_free(s.a);
    s.a = nullptr;
    if (!carried.empty()) throw ShardError(carried);
    if (why.find("Unrecognized archive format") != std::string::npos)
      throw ShardError(url + ": not a tar archive (libarchive: " + why + ")");
    throw ShardError(url + ": cannot open as a tar archive (libarchive: " + why + ")");
  }
}

ShardReader::~ShardReader() {
  if (impl_ && impl_->a) archive_read_free(impl_->a);
}

std::optional<RawSample> ShardReader::next() {
  for (;;) {
    std::optional<RawSample> sample = next_grouped();
    // valid_sample: a sample whose __bad__ field is not empty is left out.
    if (sample) {
      auto bad = sample->fields.find("__bad__");
      if (bad != sample->fields.end() && !bad->second.empty()) continue;
    }
    return sample;
  }
}

std::optional<RawSample> ShardReader::next_grouped() {
  Impl& s = *impl_;
  std::optional<RawSample> sample;
  for (;;) {
    std::optional<Impl::Member> m;
    if (s.pending) {
      m = std::move(s.pending);
      s.pending.reset();
    } else {
      m = s.read_member();
    }
    if (!m) return sample;  // the end of the shard ends the sample (tar_file_expander's marker)
    if (sample && m->key != sample->key) {
      s.pending = std::move(m);
      return sample;
    }
    if (!sample) sample = RawSample{m->key, s.url, m->offset, {}};
    // __key__ and __url__ are the sample's own: a member with that field is a duplicate too.
    if (m->field == "__key__" || m->field == "__url__" || sample->fields.count(m->field))
      throw ShardError(s.url + ": " + m->name + ": duplicate file name in tar file (field '" + m->field +
                       "' twice in sample '" + sample->key + "')");
    sample->fields.emplace(m->field, std::move(m->data));
  }
}

int64_t ShardReader::position() const {
  if (impl_->pending) return impl_->pending->offset;
  return impl_->ended ? impl_->end_position : -1;
}

std::string open_problem(const std::string& url, const OpenOptions& options) {
  try {
    ShardReader reader(url, 0, options);
    if (!reader.next()) return url + ": no sample in the shard";
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::vector<RawSample> read_samples(const std::vector<std::string>& urls, const OpenOptions& options) {
  std::vector<RawSample> out;
  for (const auto& url : urls) {
    ShardReader reader(url, 0, options);
    while (auto s = reader.next()) out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace trainrun::wds

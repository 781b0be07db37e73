#include "components/data/shards/tar_samples.h"

#include "components/data/shards/shard_urls.h"

#include <archive.h>
#include <archive_entry.h>

#include <cctype>

namespace trainrun::wds {

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

  [[noreturn]] void fail_header() {
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
      if (r < ARCHIVE_WARN) fail_header();
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
      m.data = read_data(name, archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0);
      last_member = name;
      return m;
    }
  }

  // The current member's bytes, `size` as its header says.
  std::string read_data(const std::string& name, int64_t size) {
    // Straight into a string of the header's size (not through `buffer`: libarchive copies out
    // of the block the read callback handed it, which lives there). A member never holds more;
    // the call that finds its end reads into `probe`, which also takes the data of a member
    // whose header has no size.
    std::string data(std::size_t(std::max<int64_t>(size, 0)), '\0');
    std::size_t got = 0;
    char probe[512];
    for (;;) {
      const bool room = got < data.size();
      la_ssize_t n = room ? archive_read_data(a, data.data() + got, data.size() - got)
                          : archive_read_data(a, probe, sizeof probe);
      if (n == 0) break;
      if (n < 0) {
        if (!error.empty()) throw ShardError(error);
        std::string why = archive_error_string(a) ? archive_error_string(a) : "";
        throw ShardError(url + ": truncated tar archive: member '" + name + "' ends early (libarchive: " + why + ")");
      }
      if (!room) data.append(probe, std::size_t(n));
      got += std::size_t(n);
    }
    data.resize(got);
    return data;
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

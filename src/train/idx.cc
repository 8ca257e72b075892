// IDX reading (paratune/train/idx.h). gzip through zlib's gzread, which also reads plain files.
#include "paratune/train/idx.h"

#include <fmt/format.h>
#include <zlib.h>

#include <filesystem>
#include <limits>

#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

constexpr std::int64_t kMaxBytes = std::int64_t{1} << 32;  // 4 GiB: far above any dataset here

struct GzFile {
  gzFile f = nullptr;
  ~GzFile() {
    if (f) gzclose(f);
  }
};

// Reads exactly n bytes; false at the end of the file.
bool read_exactly(gzFile f, void* out, std::size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  while (n > 0) {
    const int chunk = static_cast<int>(std::min<std::size_t>(n, 1 << 30));
    const int got = gzread(f, p, static_cast<unsigned>(chunk));
    if (got <= 0) return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

std::uint32_t big_endian(const unsigned char b[4]) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw Error(fmt::format("{}: no such file", path));
  GzFile file{gzopen(path.c_str(), "rb")};
  if (!file.f) throw Error(fmt::format("{}: cannot open", path));
  unsigned char header[4];
  if (!read_exactly(file.f, header, 4)) throw Error(fmt::format("{}: header: the file has fewer than 4 bytes", path));
  if (header[0] != 0 || header[1] != 0)
    throw Error(fmt::format("{}: magic: bytes {:#04x} {:#04x} must be 0 0 (not an IDX file)", path, header[0], header[1]));
  if (header[2] != 0x08)
    throw Error(fmt::format("{}: type: {:#04x} is not unsigned byte (0x08), the only type paratune reads", path,
                            header[2]));
  const int ndims = header[3];
  if (ndims < 1 || ndims > 4)
    throw Error(fmt::format("{}: dimensions: {} must be 1 to 4", path, ndims));
  IdxArray out;
  std::int64_t total = 1;
  for (int i = 0; i < ndims; ++i) {
    unsigned char b[4];
    if (!read_exactly(file.f, b, 4))
      throw Error(fmt::format("{}: dimension {}: the header ends before it", path, i));
    const std::uint32_t d = big_endian(b);
    if (d == 0 || d > static_cast<std::uint32_t>(std::numeric_limits<int>::max()))
      throw Error(fmt::format("{}: dimension {}: {} must be between 1 and {}", path, i, d,
                              std::numeric_limits<int>::max()));
    total *= d;
    if (total > kMaxBytes)
      throw Error(fmt::format("{}: dimensions: {} bytes in all is more than {}", path, total, kMaxBytes));
    out.dims.push_back(static_cast<int>(d));
  }
  out.data.resize(static_cast<std::size_t>(total));
  if (!read_exactly(file.f, out.data.data(), out.data.size()))
    throw Error(fmt::format("{}: data: shorter than the {} bytes its header announces (truncated?)", path, total));
  unsigned char extra;
  if (read_exactly(file.f, &extra, 1))
    throw Error(fmt::format("{}: data: more than the {} bytes its header announces", path, total));
  return out;
}

namespace {

// "dir/train-images-idx3-ubyte" with ".gz" when only the compressed file is there.
std::string idx_path(const std::string& directory, const std::string& name) {
  std::string plain = (std::filesystem::path(directory) / name).string();
  if (std::filesystem::exists(plain)) return plain;
  return plain + ".gz";
}

}  // namespace

LabelledImages load_fashion_mnist(const std::string& directory, const std::string& split) {
  if (split != "train" && split != "t10k")
    throw Error(fmt::format("split: '{}' must be train or t10k", split));
  const std::string images_path = idx_path(directory, split + "-images-idx3-ubyte");
  const std::string labels_path = idx_path(directory, split + "-labels-idx1-ubyte");
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  if (images.dims.size() != 3)
    throw Error(fmt::format("{}: dimensions: {} must be 3 (count, rows, cols)", images_path, images.dims.size()));
  if (labels.dims.size() != 1)
    throw Error(fmt::format("{}: dimensions: {} must be 1 (count)", labels_path, labels.dims.size()));
  if (images.dims[0] != labels.dims[0])
    throw Error(fmt::format("{} has {} images but {} has {} labels", images_path, images.dims[0], labels_path,
                            labels.dims[0]));
  for (std::size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9)
      throw Error(fmt::format("{}: label {}: {} must be 0-9", labels_path, i, static_cast<int>(labels.data[i])));
  return LabelledImages{.count = images.dims[0],
                        .rows = images.dims[1],
                        .cols = images.dims[2],
                        .images = std::move(images.data),
                        .labels = std::move(labels.data)};
}

}  // namespace paratune::train

// IDX files (the MNIST format: LeCun et al., "THE MNIST DATABASE of handwritten digits"), plain or
// gzip-compressed as Debian's dataset-fashion-mnist ships them, and the Fashion-MNIST split built
// on them. The data of paratune-train's image workloads (issue 18); read entirely into memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace paratune::train {

// An IDX array of unsigned bytes: big-endian header {0, 0, type 0x08, number of dimensions}, one
// big-endian uint32 per dimension, then the bytes in row-major order.
struct IdxArray {
  std::vector<int> dims;
  std::vector<std::uint8_t> data;  // product(dims) bytes
};

// Reads `path` (gzip-compressed when it starts with the gzip magic). Throws Error naming the file,
// the field and the rule for a missing file, a bad magic, a type other than unsigned byte, a
// dimension count outside 1..4, a zero or oversized dimension, or data shorter or longer than the
// header says.
IdxArray read_idx(const std::string& path);

// Images with their labels: images is count x rows x cols bytes (0-255), labels count bytes (0-9).
struct LabelledImages {
  int count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> images;
  std::vector<std::uint8_t> labels;
};

// The training ("train") or test ("t10k") split of Fashion-MNIST in `directory`
// ({split}-images-idx3-ubyte[.gz], {split}-labels-idx1-ubyte[.gz]). Throws Error when a file is
// missing or malformed, when images are not 3-dimensional or labels not 1-dimensional, when their
// counts differ, or when a label is not 0-9.
LabelledImages load_fashion_mnist(const std::string& directory, const std::string& split);

// Where Debian's dataset-fashion-mnist puts the files.
inline constexpr const char* kDebianFashionMnist = "/usr/share/datasets/fashion-mnist";

}  // namespace paratune::train

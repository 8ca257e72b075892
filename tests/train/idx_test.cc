// IDX files (train/idx.h): written here byte by byte, plain and gzipped, then read back; malformed
// ones refused with the file, the field and the rule; Debian's Fashion-MNIST when installed.
#include "paratune/train/idx.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

std::vector<unsigned char> idx_bytes(const std::vector<std::uint32_t>& dims, const std::vector<unsigned char>& data,
                                     unsigned char type = 0x08) {
  std::vector<unsigned char> out{0, 0, type, static_cast<unsigned char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<unsigned char>(d >> shift));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string write(const std::string& name, const std::vector<unsigned char>& bytes, bool gzip = false) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) / name).string();
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
  }
  return path;
}

void expect_error(const std::string& path, const std::string& what) {
  try {
    (void)read_idx(path);
    FAIL() << path << " was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(Idx, ReadsPlainAndGzipped) {
  const std::vector<unsigned char> data{1, 2, 3, 4, 5, 6};
  for (bool gzip : {false, true}) {
    const IdxArray a = read_idx(write(gzip ? "a.idx.gz" : "a.idx", idx_bytes({2, 3}, data), gzip));
    EXPECT_EQ(a.dims, (std::vector<int>{2, 3}));
    EXPECT_EQ(a.data, std::vector<std::uint8_t>(data.begin(), data.end()));
  }
}

TEST(Idx, RefusesMalformedFiles) {
  expect_error((std::filesystem::path(::testing::TempDir()) / "missing.idx").string(), "no such file");
  expect_error(write("short.idx", {0, 0}), "fewer than 4 bytes");
  expect_error(write("magic.idx", {1, 0, 8, 1, 0, 0, 0, 1, 7}), "magic");
  expect_error(write("float.idx", idx_bytes({1}, {0, 0, 0, 0}, 0x0D)), "unsigned byte");
  expect_error(write("dims.idx", {0, 0, 8, 0}), "dimensions: 0 must be 1 to 4");
  expect_error(write("zero.idx", idx_bytes({0}, {})), "dimension 0: 0");
  expect_error(write("truncated.idx.gz", idx_bytes({2, 3}, {1, 2, 3}), true), "shorter");
  expect_error(write("long.idx", idx_bytes({2}, {1, 2, 3})), "more than the 2 bytes");
}

TEST(Idx, FashionMnistSplitChecksItsFiles) {
  const std::string dir = ::testing::TempDir();
  write("train-images-idx3-ubyte", idx_bytes({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  write("train-labels-idx1-ubyte.gz", idx_bytes({2}, {3, 9}), true);
  const LabelledImages d = load_fashion_mnist(dir, "train");
  EXPECT_EQ(d.count, 2);
  EXPECT_EQ(d.rows, 2);
  EXPECT_EQ(d.labels, (std::vector<std::uint8_t>{3, 9}));
  write("t10k-images-idx3-ubyte", idx_bytes({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  write("t10k-labels-idx1-ubyte", idx_bytes({3}, {1, 2, 3}));
  EXPECT_THROW((void)load_fashion_mnist(dir, "t10k"), Error);  // 2 images, 3 labels
  write("t10k-labels-idx1-ubyte", idx_bytes({2}, {1, 12}));
  EXPECT_THROW((void)load_fashion_mnist(dir, "t10k"), Error);  // label 12
  EXPECT_THROW((void)load_fashion_mnist(dir, "valid"), Error);
}

// Debian's dataset-fashion-mnist (scripts/setup.sh installs it): 60,000 + 10,000 28x28 images.
TEST(Idx, ReadsDebiansFashionMnist) {
  if (!std::filesystem::exists(kDebianFashionMnist)) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  const LabelledImages train = load_fashion_mnist(kDebianFashionMnist, "train");
  const LabelledImages test = load_fashion_mnist(kDebianFashionMnist, "t10k");
  EXPECT_EQ(train.count, 60000);
  EXPECT_EQ(test.count, 10000);
  EXPECT_EQ(train.rows, 28);
  EXPECT_EQ(train.cols, 28);
  std::vector<int> per_class(10);
  for (std::uint8_t l : test.labels) ++per_class[l];
  for (int n : per_class) EXPECT_EQ(n, 1000);  // the test set is balanced
}

}  // namespace
}  // namespace paratune::train

// The xgboost baseline's model: gradient-boosted trees through XGBoost's C API (tune/bayes.h).
#include <fmt/format.h>
#include <xgboost/c_api.h>

#include <string>
#include <vector>

#include "paratune/spec/error.h"
#include "paratune/tune/bayes.h"

namespace paratune::tune {
namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw Error(fmt::format("xgboost: {}: {}", what, XGBGetLastError()));
}

// Owns a DMatrix made from the rows of `x` (XGBoost wants row-major floats).
class Matrix {
 public:
  explicit Matrix(const Eigen::MatrixXd& x) {
    std::vector<float> data(static_cast<std::size_t>(x.size()));
    for (Eigen::Index r = 0; r < x.rows(); ++r)
      for (Eigen::Index c = 0; c < x.cols(); ++c) data[static_cast<std::size_t>(r * x.cols() + c)] = static_cast<float>(x(r, c));
    check(XGDMatrixCreateFromMat(data.data(), static_cast<bst_ulong>(x.rows()), static_cast<bst_ulong>(x.cols()),
                                 std::numeric_limits<float>::quiet_NaN(), &handle_),
          "XGDMatrixCreateFromMat");
  }
  ~Matrix() { XGDMatrixFree(handle_); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  [[nodiscard]] DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

class Booster {
 public:
  explicit Booster(const Matrix& train) {
    DMatrixHandle m = train.get();
    check(XGBoosterCreate(&m, 1, &handle_), "XGBoosterCreate");
  }
  ~Booster() { XGBoosterFree(handle_); }
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  void set(const char* name, const std::string& value) { check(XGBoosterSetParam(handle_, name, value.c_str()), name); }
  [[nodiscard]] BoosterHandle get() const { return handle_; }

 private:
  BoosterHandle handle_ = nullptr;
};

}  // namespace

Eigen::VectorXd xgboost_fit_predict(const Eigen::MatrixXd& x, const Eigen::VectorXd& y, const Eigen::MatrixXd& query,
                                    std::uint64_t seed) {
  const Matrix train(x);
  std::vector<float> labels(static_cast<std::size_t>(y.size()));
  for (Eigen::Index i = 0; i < y.size(); ++i) labels[static_cast<std::size_t>(i)] = static_cast<float>(y(i));
  check(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), static_cast<bst_ulong>(labels.size())),
        "XGDMatrixSetFloatInfo");
  Booster booster(train);
  booster.set("objective", "reg:squarederror");
  booster.set("max_depth", "6");
  booster.set("eta", "0.3");
  booster.set("nthread", "1");
  booster.set("verbosity", "0");
  booster.set("seed", std::to_string(seed % 2147483647ULL));
  constexpr int kRounds = 100;
  for (int round = 0; round < kRounds; ++round)
    check(XGBoosterUpdateOneIter(booster.get(), round, train.get()), "XGBoosterUpdateOneIter");
  const Matrix q(query);
  bst_ulong n = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(booster.get(), q.get(), 0, 0, 0, &n, &out), "XGBoosterPredict");
  Eigen::VectorXd predicted(static_cast<Eigen::Index>(n));
  for (bst_ulong i = 0; i < n; ++i) predicted(static_cast<Eigen::Index>(i)) = out[i];
  return predicted;
}

}  // namespace paratune::tune

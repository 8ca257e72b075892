// Small helpers shared by the tests: builders for specs and a temp-file writer.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/presets.h"
#include "paratune/spec/training.h"

namespace paratune::testing {

// ModelBuilder().layers(4).hidden(256)... : a GPT-style dense model by default.
class ModelBuilder {
 public:
  ModelBuilder() {
    m_.name = "test-model";
    m_.num_layers = 4;
    m_.hidden_size = 256;
    m_.num_attention_heads = 8;
    m_.num_kv_heads = 8;
    m_.head_dim = 32;
    m_.ffn_hidden_size = 1024;
    m_.vocab_size = 1000;
  }
  ModelBuilder& layers(int n) { m_.num_layers = n; return *this; }
  ModelBuilder& hidden(int h) { m_.hidden_size = h; m_.head_dim = h / m_.num_attention_heads; m_.ffn_hidden_size = 4 * h; return *this; }
  ModelBuilder& heads(int a) { m_.num_attention_heads = m_.num_kv_heads = a; m_.head_dim = m_.hidden_size / a; return *this; }
  ModelBuilder& dropout(bool d) { m_.dropout = d; return *this; }
  ModelBuilder& vocab(int v) { m_.vocab_size = v; return *this; }
  [[nodiscard]] ModelSpec build() const { return m_; }

 private:
  ModelSpec m_;
};

inline TrainingSpec training(int seq, int batch) {
  TrainingSpec t;
  t.seq_len = seq;
  t.global_batch = batch;
  return t;
}

inline ClusterSpec dgx_h100(int nodes) {
  ClusterSpec c = find_cluster_preset("dgx-h100").node;
  c.nodes = nodes;
  return c;
}

inline std::string write_temp(const std::string& name, const std::string& content) {
  const auto dir = std::filesystem::temp_directory_path() / "paratune-tests";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << content;
  return path.string();
}

// A directory of its own (tests may run in parallel), removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "paratune-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes `content` to the file `name` in it; returns its path.
  [[nodiscard]] std::string write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name) << content;
    return (path_ / name).string();
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace paratune::testing

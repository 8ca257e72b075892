// Reading published_runs.csv: RFC 4180 CSV and the columns `validate` needs.
#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "paratune/calib/published_runs.h"
#include "paratune/spec/input_file.h"

namespace paratune {
namespace {

// Columns every published-runs CSV must have. The later additions (MoE, ep, cp, total tokens/s,
// other_result, notes) are optional: an older file without them reads them as empty.
const std::vector<std::string> kRequiredColumns{
    "row_id", "source_id", "model", "num_layers", "hidden_size", "num_attention_heads", "num_kv_heads",
    "ffn_hidden_size", "vocab_size", "seq_length", "gpu_type", "total_gpus", "gpus_per_node", "interconnect",
    "model_parallel_total", "tp", "pp", "dp", "vpp", "micro_batch_size", "global_batch_size",
    "activation_recompute", "sequence_parallel", "zero_or_distributed_optimizer", "precision", "framework",
    "iteration_time_s", "tflops_per_gpu", "tflops_basis", "mfu_pct", "tokens_per_s_per_gpu"};

}  // namespace

std::string PublishedRun::get(const std::string& column) const {
  const auto it = fields.find(column);
  if (it == fields.end()) return "";
  std::string v = it->second;
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.pop_back();
  std::size_t i = 0;
  while (i < v.size() && std::isspace(static_cast<unsigned char>(v[i]))) ++i;
  return v.substr(i);
}

std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  return parse_csv(read_input_file(path, "CSV file"), path);
}

std::vector<std::map<std::string, std::string>> parse_csv(std::string_view text, const std::string& source) {
  check_utf8(text, source);
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, field_started = false;
  int line = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quoted) {
      if (ch == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (ch == '\n') ++line;
        field += ch;
      }
      continue;
    }
    if (ch == '"' && !field_started) {
      quoted = field_started = true;
    } else if (ch == ',') {
      record.push_back(field);
      field.clear();
      field_started = false;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      record.push_back(field);
      field.clear();
      field_started = false;
      if (!(record.size() == 1 && record[0].empty())) records.push_back(record);
      record.clear();
      ++line;
    } else {
      field += ch;
      field_started = true;
    }
  }
  if (quoted) throw Error(fmt::format("{}: line {}: unterminated quoted field", source, line));
  if (field_started || !record.empty()) {
    record.push_back(field);
    records.push_back(record);
  }
  if (records.empty()) throw Error(fmt::format("{}: empty CSV file (no header)", source));
  std::vector<std::map<std::string, std::string>> rows;
  const auto& header = records.front();
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != header.size())
      throw Error(fmt::format("{}: record {} has {} fields but the header has {}", source, r + 1, records[r].size(),
                              header.size()));
    std::map<std::string, std::string> row;
    for (std::size_t k = 0; k < header.size(); ++k) row[header[k]] = records[r][k];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<PublishedRun> read_published_runs(const std::string& path) {
  return parse_published_runs(read_input_file(path, "CSV file"), path);
}

std::vector<PublishedRun> parse_published_runs(std::string_view text, const std::string& source) {
  const auto rows = parse_csv(text, source);
  std::vector<PublishedRun> runs;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i == 0)
      for (const auto& column : kRequiredColumns)
        if (!rows[0].contains(column))
          throw Error(fmt::format("{}: missing column '{}' (needs the columns of published_runs.csv)", source, column));
    runs.push_back(PublishedRun{rows[i], static_cast<int>(i) + 2});
  }
  return runs;
}

}  // namespace paratune

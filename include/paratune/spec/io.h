// Reading specs from files, presets and command-line shorthands; writing them back as JSON.
//
// Files may be YAML or JSON (chosen by extension: .json is JSON, anything else YAML). paratune's own
// file formats reject unknown keys, naming the file and the key and suggesting the closest valid one.
// A Hugging Face config.json (recognised by its `model_type`) is mapped field by field; an
// unsupported model_type lists the supported ones.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "paratune/spec/hardware.h"
#include "paratune/spec/model.h"
#include "paratune/spec/parallel.h"
#include "paratune/spec/training.h"

namespace paratune {

// Parses a YAML or JSON file into a JSON value. Throws Error "<path>: ..." on I/O or syntax errors.
nlohmann::json read_document(const std::string& path);
enum class DocumentFormat { kYaml, kJson };
// The same from text (read_document's parser); `source` names it in errors.
nlohmann::json parse_document(std::string_view text, const std::string& source, DocumentFormat format);

// --model: a preset name (see `paratune presets`) or a path to a model-spec file / HF config.json.
ModelSpec load_model(std::string_view name_or_path);
// A parsed model file: a Hugging Face config.json when it has `model_type`, else our format.
ModelSpec model_from_document(const nlohmann::json& doc, std::string_view source);
// A model-spec document (our format). `source` names it in errors.
ModelSpec model_from_json(const nlohmann::json& doc, std::string_view source);
// A Hugging Face config.json document.
ModelSpec model_from_hf_config(const nlohmann::json& doc, std::string_view source);
std::vector<std::string> supported_hf_model_types();

// --cluster: "dgx-h100:16" (preset:nodes), "dgx-h100" (one node), "h100x128" (GPU shorthand x GPU
// count, on that GPU's reference node) or a path to a cluster file.
ClusterSpec load_cluster(std::string_view text);
ClusterSpec cluster_from_json(const nlohmann::json& doc, std::string_view source);
GpuSpec gpu_from_json(const nlohmann::json& doc, std::string_view source);

nlohmann::json to_json(const ModelSpec& model);
nlohmann::json to_json(const GpuSpec& gpu);
nlohmann::json to_json(const ClusterSpec& cluster);
nlohmann::json to_json(const TrainingSpec& training);
nlohmann::json to_json(const ParallelConfig& config);

}  // namespace paratune

#include "paratune/train/corpus.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "paratune/spec/error.h"

namespace paratune::train {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open for reading", path.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Appends the records of `text` (separated by lines holding only "%") to the splits.
void split_records(const std::string& text, TextCorpus& corpus) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find("\n%\n", start);
    const bool last = end == std::string::npos;
    if (last) end = text.size();
    else end += 1;  // keep the record's final newline
    if (end > start) {
      auto& split = corpus.records % 10 == 9 ? corpus.validation : corpus.train;
      split.insert(split.end(), text.begin() + static_cast<std::ptrdiff_t>(start),
                   text.begin() + static_cast<std::ptrdiff_t>(end));
      ++corpus.records;
    }
    start = last ? text.size() : end + 2;  // past "%\n"
  }
}

}  // namespace

TextCorpus load_text_corpus(const std::string& path, std::size_t min_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw Error(fmt::format("{}: no such file or directory", path));
  std::vector<fs::path> files;
  if (fs::is_directory(status)) {
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file() && !entry.is_symlink() && entry.path().extension() != ".dat")
        files.push_back(entry.path());
    if (ec) throw Error(fmt::format("{}: cannot list the directory ({})", path, ec.message()));
    std::sort(files.begin(), files.end());
  } else {
    files.emplace_back(path);
  }
  TextCorpus corpus;
  for (const auto& file : files) {
    split_records(read_file(file), corpus);
    ++corpus.files;
  }
  if (corpus.train.size() < min_bytes || corpus.validation.size() < min_bytes)
    throw Error(fmt::format(
        "{}: {} training and {} validation bytes in {} files ({} records); each split needs at least {} "
        "(seq_len + 1; every 10th record is held out)",
        path, corpus.train.size(), corpus.validation.size(), corpus.files, corpus.records, min_bytes));
  return corpus;
}

}  // namespace paratune::train

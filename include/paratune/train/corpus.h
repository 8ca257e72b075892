// The byte-level text corpus of paratune-train's language model: Debian's `fortunes` package
// (/usr/share/games/fortunes, 2.8 MB of English quotations in ~17,000 records; chosen because it is
// real prose, small enough to train on a CPU, and installed by one package with no network).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace paratune::train {

struct TextCorpus {
  std::vector<std::uint8_t> train, validation;  // bytes (the vocabulary is the 256 byte values)
  int files = 0, records = 0;
};

// Reads `path`: one text file, or every regular file of a directory in name order (symbolic links
// and fortune's `.dat` index files skipped). The text is cut into records at lines holding only
// "%" (the fortune file format; a file without them is one record), and every 10th record (index
// 9, 19, ...) is held out for validation: a fixed split, the same for every seed, spread over every
// file. Throws Error naming the path when nothing can be read or either split is shorter than
// `min_bytes` (a sequence and its next byte).
TextCorpus load_text_corpus(const std::string& path, std::size_t min_bytes);

// Where Debian's fortunes package puts its files.
inline constexpr const char* kDebianFortunes = "/usr/share/games/fortunes";

}  // namespace paratune::train

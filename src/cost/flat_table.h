// FlatTable: a find-or-add map from keys to values in two flat arrays, for lookups that dominate
// a loop (GroupBounder: one per layer-shape group, a million for DeepSeek-V3 on 2,048 GPUs, in a
// table of half a million shapes). std::unordered_map allocates a node per entry and chains them
// from buckets chosen by a modulo; here the entries lie in one vector in insertion order and an
// open-addressed array of slots (linear probing, a power-of-two size at most half full) holds each
// entry's index beside 32 bits of its hash, so a probe reads an entry only when those bits match.
// No removal: the tables only grow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace paratune::cost_detail {

template <typename Key, typename Value, typename Hash>
class FlatTable {
 public:
  // The value stored for `key`; make() gives it when the key is new. The reference holds until the
  // next call (adding an entry may move the others).
  template <typename Make>
  Value& find_or_add(const Key& key, Make&& make) {
    // Fibonacci hashing spreads hashes whose low bits vary little over the slots.
    const std::uint64_t mixed = static_cast<std::uint64_t>(Hash{}(key)) * 0x9E3779B97F4A7C15ull;
    const auto tag = static_cast<std::uint32_t>(mixed);
    if (2 * (entries_.size() + 1) > slots_.size()) grow();
    for (std::size_t i = slot_of(mixed);; i = (i + 1) & (slots_.size() - 1)) {
      const std::uint64_t slot = slots_[i];
      if (slot == kEmpty) {
        entries_.emplace_back(key, make());
        slots_[i] = pack(tag, entries_.size() - 1);
        return entries_.back().second;
      }
      if (static_cast<std::uint32_t>(slot) == tag) {
        std::pair<Key, Value>& entry = entries_[static_cast<std::size_t>(slot >> 32) - 1];
        if (entry.first == key) return entry.second;
      }
    }
  }

  [[nodiscard]] std::size_t size() const { return entries_.size(); }

 private:
  // A slot: the entry's index + 1 in the high 32 bits (0: empty), the hash's tag in the low ones.
  static constexpr std::uint64_t kEmpty = 0;
  static std::uint64_t pack(std::uint32_t tag, std::size_t index) {
    return (static_cast<std::uint64_t>(index) + 1) << 32 | tag;
  }
  [[nodiscard]] std::size_t slot_of(std::uint64_t mixed) const {
    return static_cast<std::size_t>(mixed >> (64 - bits_));
  }
  void grow() {
    bits_ = slots_.empty() ? 6 : bits_ + 1;
    slots_.assign(std::size_t{1} << bits_, kEmpty);
    for (std::size_t e = 0; e < entries_.size(); ++e) {
      const std::uint64_t mixed = static_cast<std::uint64_t>(Hash{}(entries_[e].first)) * 0x9E3779B97F4A7C15ull;
      std::size_t i = slot_of(mixed);
      while (slots_[i] != kEmpty) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = pack(static_cast<std::uint32_t>(mixed), e);
    }
  }

  std::vector<std::pair<Key, Value>> entries_;
  std::vector<std::uint64_t> slots_;
  int bits_ = 0;  // slots_.size() == 2^bits_
};

}  // namespace paratune::cost_detail

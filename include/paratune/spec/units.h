// Units: the one place where user-facing quantities ("80GiB", "450GB/s", "5us") become SI numbers.
//
// Inside paratune every quantity is a double in base units whose name says the unit:
// `_bytes`, `_s` (seconds), `_bytes_per_s`, `_flops`, `_flops_per_s`. Decimal prefixes (KB, MB, GB,
// TB) are powers of 1000, binary ones (KiB, MiB, GiB, TiB) powers of 1024, bit rates (Gbps, Gb/s)
// are divided by 8.
#pragma once

#include <string>
#include <string_view>

namespace paratune::units {

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * kKiB;
inline constexpr double kGiB = 1024.0 * kMiB;
inline constexpr double kGB = 1e9;
inline constexpr double kTera = 1e12;

// "80GiB", "80 GB", "1.5TB", "1024" (plain number = bytes). Throws paratune::Error.
double parse_bytes(std::string_view text);
// "450GB/s", "400Gbps", "400 Gb/s", "25e9" (plain number = bytes per second).
double parse_bandwidth(std::string_view text);
// "5us", "5µs", "2ms", "1.5s", "20m", "1h", "3e-6" (plain number = seconds).
double parse_duration(std::string_view text);

// Human-readable renderings used in reports: "79.6 GiB", "450 GB/s", "1.23 ms".
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_s);
std::string format_duration(double seconds);
std::string format_count(double count);  // 6.74B, 141M, 12.3K

}  // namespace paratune::units

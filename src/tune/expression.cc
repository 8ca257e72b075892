#include "paratune/tune/expression.h"

#include <fmt/format.h>
#include <muParser.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "paratune/spec/error.h"

namespace paratune::tune {
namespace {

double logical_not(double x) { return x == 0 ? 1 : 0; }

// Set while a constructor compiles: muparser compiles by evaluating once, at whatever values the
// variables hold then (zeros, say), where a zero divisor says nothing about the expression.
thread_local bool compiling = false;

// Division and remainder by zero are errors, as in Python: muparser's own '/' gives inf (so
// "1 / (x - 1) > 0" would hold at x = 1) and fmod gives nan. Thrown from a callback, muparser's
// ParserError leaves Eval() with the message. Neither is folded at compile time (a constant
// "1 / 0" is refused when evaluated).
double checked_modulo(double a, double b) {
  if (b == 0 && !compiling) throw mu::ParserError("remainder by zero (%)");
  return std::fmod(a, b);
}
double checked_divide(double a, double b) {
  if (b == 0 && !compiling) throw mu::ParserError("division by zero (/)");
  return a / b;
}
// muparser cannot redefine its built-in '/': translate() writes each '/' as this operator, which
// no expression may contain itself, and messages show it as '/' again.
constexpr char kDivide = '$';

std::string shown(std::string message) {
  std::replace(message.begin(), message.end(), kDivide, '/');
  return message;
}

// Every string (value or literal) gets a number of its own, far from any parameter value: equal
// strings, equal numbers. One table for the process, so values and literals agree wherever they
// were seen first.
double string_id(const std::string& s) {
  static std::mutex mutex;
  static std::map<std::string, double> ids;
  const std::lock_guard lock(mutex);
  const auto it = ids.find(s);
  if (it != ids.end()) return it->second;
  const double id = 1e15 + static_cast<double>(ids.size());
  ids.emplace(s, id);
  return id;
}

// and/or/not/true/false -> muparser's && || ! 1 0; "text" / 'text' -> the string's number.
std::string translate(std::string_view expr) {
  std::string out;
  int depth = 0;  // of parentheses: a comma inside them separates a function's arguments
  for (std::size_t i = 0; i < expr.size();) {
    const char c = expr[i];
    if (c == '(' || c == ')') depth += c == '(' ? 1 : -1;
    if (c == ',' && depth <= 0) {
      // muparser reads "a, b" as two expressions and keeps the value of the last: "dp == 1, dp == 8"
      // would drop its first condition. A constraint is one condition.
      throw Error(fmt::format("',' at position {} separates two expressions, of which only the last would count "
                              "(to require both, write 'and')",
                              i + 1));
    }
    if (c == '"' || c == '\'') {
      const std::size_t close = expr.find(c, i + 1);
      if (close == std::string_view::npos) throw Error(fmt::format("unbalanced {} in the string literal", c));
      out += fmt::format("{:.0f}", string_id(std::string(expr.substr(i + 1, close - i - 1))));
      i = close + 1;
    } else if ((c == '=' || c == '!' || c == '<' || c == '>') && i + 1 < expr.size() && expr[i + 1] == '=') {
      out += expr.substr(i, 2);  // the comparisons ==, !=, <=, >=
      i += 2;
    } else if (c == '=') {
      // muparser reads a lone '=' (and +=, -=, *=, /=) as an assignment whose value is the number
      // assigned: "dp = 8" would set dp and hold at every point. A constraint only compares.
      throw Error(fmt::format("'=' at position {} assigns a value, which a constraint cannot do "
                              "(to compare, write '==')",
                              i + 1));
    } else if (c == kDivide) {
      throw Error(fmt::format("'{}' at position {} is not an operator", c, i + 1));
    } else if (c == '/') {
      out.push_back(kDivide);
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_')) ++j;
      const std::string_view w = expr.substr(i, j - i);
      if (w == "and") out += "&&";
      else if (w == "or") out += "||";
      else if (w == "not") out += "!";
      else if (w == "true") out += "1";
      else if (w == "false") out += "0";
      else out += w;
      i = j;
    } else {
      out.push_back(c);
      ++i;
    }
  }
  return out;
}

}  // namespace

double expression_value(const nlohmann::json& scalar) {
  // null (a categorical None): NaN, equal to nothing, so `x == 'a'` and `x > 1` are false for it.
  if (scalar.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (scalar.is_boolean()) return scalar.get<bool>() ? 1 : 0;
  if (scalar.is_number()) return scalar.get<double>();
  return string_id(scalar.get<std::string>());
}

Expression::Expression(std::string_view text, const std::vector<std::string>& names, double* values)
    : text_(text), parser_(std::make_unique<mu::Parser>()) {
  try {
    parser_->DefineOprt("%", checked_modulo, mu::prMUL_DIV, mu::oaLEFT, /*a_bAllowOpt=*/false);
    parser_->DefineOprt(std::string(1, kDivide), checked_divide, mu::prMUL_DIV, mu::oaLEFT, /*a_bAllowOpt=*/false);
    parser_->DefineInfixOprt("!", logical_not);
    for (std::size_t i = 0; i < names.size(); ++i) parser_->DefineVar(names[i], &values[i]);
    parser_->SetExpr(translate(text));
    compiling = true;
    try {
      parser_->Eval();  // compiles: unknown names and syntax errors surface here
    } catch (...) {
      compiling = false;
      throw;
    }
    compiling = false;
    for (const auto& [name, address] : parser_->GetUsedVar())
      used_.push_back(static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin()));
    std::sort(used_.begin(), used_.end());
  } catch (const mu::Parser::exception_type& e) {
    std::vector<std::string> sorted = names;
    std::sort(sorted.begin(), sorted.end());
    throw Error(fmt::format("{} (parameters: {})", shown(e.GetMsg()), join(sorted)));
  }
}

Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(Expression&&) noexcept = default;
Expression::~Expression() = default;

double Expression::evaluate() const {
  try {
    return parser_->Eval();
  } catch (const mu::Parser::exception_type& e) {
    throw Error(shown(e.GetMsg()));
  }
}

}  // namespace paratune::tune

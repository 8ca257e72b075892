#include "paratune/tune/expression.h"

#include <fmt/format.h>
#include <muParser.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include "paratune/spec/error.h"

namespace paratune::tune {
namespace {

double logical_not(double x) { return x == 0 ? 1 : 0; }
double modulo(double a, double b) { return std::fmod(a, b); }

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
  for (std::size_t i = 0; i < expr.size();) {
    const char c = expr[i];
    if (c == '"' || c == '\'') {
      const std::size_t close = expr.find(c, i + 1);
      if (close == std::string_view::npos) throw Error(fmt::format("unbalanced {} in the string literal", c));
      out += fmt::format("{:.0f}", string_id(std::string(expr.substr(i + 1, close - i - 1))));
      i = close + 1;
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
  if (scalar.is_boolean()) return scalar.get<bool>() ? 1 : 0;
  if (scalar.is_number()) return scalar.get<double>();
  return string_id(scalar.get<std::string>());
}

Expression::Expression(std::string_view text, const std::vector<std::string>& names, double* values)
    : text_(text), parser_(std::make_unique<mu::Parser>()) {
  try {
    parser_->DefineOprt("%", modulo, mu::prMUL_DIV, mu::oaLEFT, true);
    parser_->DefineInfixOprt("!", logical_not);
    for (std::size_t i = 0; i < names.size(); ++i) parser_->DefineVar(names[i], &values[i]);
    parser_->SetExpr(translate(text));
    parser_->Eval();  // compiles: unknown names and syntax errors surface here
    for (const auto& [name, address] : parser_->GetUsedVar())
      used_.push_back(static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin()));
    std::sort(used_.begin(), used_.end());
  } catch (const mu::Parser::exception_type& e) {
    std::vector<std::string> sorted = names;
    std::sort(sorted.begin(), sorted.end());
    throw Error(fmt::format("{} (parameters: {})", e.GetMsg(), join(sorted)));
  }
}

Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(Expression&&) noexcept = default;
Expression::~Expression() = default;

double Expression::evaluate() const {
  try {
    return parser_->Eval();
  } catch (const mu::Parser::exception_type& e) {
    throw Error(e.GetMsg());
  }
}

}  // namespace paratune::tune

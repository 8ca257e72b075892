// Expressions over named parameters, for search-space constraints (tune/space.h) and conditions
// (hpo/space.h): muparser (Debian libmuparser-dev) with + - * / ^ %, == != < <= > >=, and/&&,
// or/||, not/!, true/false, parentheses and muparser's functions (min, max, abs, ...). Booleans are
// 1 and 0; a string value and a quoted string literal ("adam" or 'adam') become the same number, so
// `optimizer == 'adam'` compares as intended (strings compare only for equality).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mu {
class Parser;
}

namespace paratune::tune {

class Expression {
 public:
  // Compiles `text` over the variables `names`, whose values evaluate() reads from `values`
  // (names.size() doubles that must stay where they are while the expression lives). Throws Error
  // with muparser's message and the valid names (the caller adds which file and field).
  Expression(std::string_view text, const std::vector<std::string>& names, double* values);
  Expression(Expression&&) noexcept;
  Expression& operator=(Expression&&) noexcept;
  ~Expression();

  // Its value for the current `values`; throws Error with muparser's message (e.g. division by zero).
  [[nodiscard]] double evaluate() const;
  // The indices (into `names`) of the variables it uses, ascending.
  [[nodiscard]] const std::vector<std::size_t>& used() const { return used_; }
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::unique_ptr<mu::Parser> parser_;
  std::vector<std::size_t> used_;
};

// A parameter value as an expression sees it: booleans 1/0, numbers as they are, a string the
// number it shares with the same quoted literal.
double expression_value(const nlohmann::json& scalar);

}  // namespace paratune::tune

// Command templates: `--command 'torchrun --nproc-per-node {gpus} train.py --tp {tp}'`.
//
// The template is split into arguments first (POSIX shell word rules for quoting only: blanks
// separate words, '...' is literal, "..." is literal but for \" \\ \$ \`, a backslash outside quotes
// escapes the next character; no expansion of any kind), then each {name} inside an argument is
// replaced by the parameter's value; {{ and }} are literal braces. Values therefore never pass
// through a shell: a value "a b; rm -rf /" stays one argument. A template that wants a shell says
// `bash -c '...'` itself.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace paratune::trial {

class CommandTemplate {
 public:
  // Throws OptionError naming the template (as the option `command` of the studies that run it)
  // and the problem (unbalanced quote, empty template, unclosed or empty placeholder, a
  // placeholder not in `known`).
  CommandTemplate(std::string_view text, const std::set<std::string>& known);

  // The arguments with every placeholder replaced. Throws OptionError (command) if a placeholder
  // has no value.
  [[nodiscard]] std::vector<std::string> render(const std::map<std::string, std::string>& values) const;
  [[nodiscard]] const std::set<std::string>& placeholders() const { return used_; }
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  // An argument as literal text pieces and placeholder names, in order.
  struct Piece {
    bool placeholder = false;
    std::string text;  // literal text, or the placeholder's name
  };
  std::string text_;
  std::vector<std::vector<Piece>> arguments_;
  std::set<std::string> used_;
};

// Splits `text` into words by the quoting rules above (exposed for tests).
std::vector<std::string> split_words(std::string_view text);

// Quotes an argument for display in a shell ('...' when needed), so a printed command can be pasted.
std::string shell_quote(std::string_view argument);

}  // namespace paratune::trial

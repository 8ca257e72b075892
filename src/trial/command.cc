#include "paratune/trial/command.h"

#include <fmt/format.h>

#include "paratune/spec/error.h"
#include "paratune/spec/option_error.h"

namespace paratune::trial {

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const std::size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) throw Error(fmt::format("unbalanced ' at character {}", i + 1));
      word.append(text.substr(i + 1, close - i - 1));
      i = close;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() && std::string_view("\"\\$`").find(text[j + 1]) != std::string_view::npos)
          ++j;
        word.push_back(text[j]);
      }
      if (j >= text.size()) throw Error(fmt::format("unbalanced \" at character {}", i + 1));
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) throw Error("a trailing backslash escapes nothing");
      word.push_back(text[++i]);
    } else {
      word.push_back(c);
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

CommandTemplate::CommandTemplate(std::string_view text, const std::set<std::string>& known) : text_(text) {
  auto fail = [&](const std::string& why) { return OptionError("command", fmt::format("'{}'", text), why); };
  std::vector<std::string> words;
  try {
    words = split_words(text);
  } catch (const Error& e) {
    throw fail(e.what());
  }
  if (words.empty()) throw fail("no program to run");
  for (const std::string& word : words) {
    std::vector<Piece> pieces;
    std::string literal;
    for (std::size_t i = 0; i < word.size(); ++i) {
      const char c = word[i];
      if ((c == '{' || c == '}') && i + 1 < word.size() && word[i + 1] == c) {
        literal.push_back(c);
        ++i;
      } else if (c == '{') {
        const std::size_t close = word.find('}', i);
        if (close == std::string::npos) throw fail(fmt::format("placeholder '{}' is not closed by }}", word.substr(i)));
        const std::string name = word.substr(i + 1, close - i - 1);
        if (name.empty()) throw fail("empty placeholder {}");
        if (!known.contains(name)) {
          const std::vector<std::string> valid(known.begin(), known.end());
          throw fail(unknown_name_message("placeholder", name, valid));
        }
        if (!literal.empty()) pieces.push_back({false, std::move(literal)});
        literal.clear();
        pieces.push_back({true, name});
        used_.insert(name);
        i = close;
      } else if (c == '}') {
        throw fail(fmt::format("a lone }} in argument '{}' (write }}}} for a literal brace)", word));
      } else {
        literal.push_back(c);
      }
    }
    if (!literal.empty() || pieces.empty()) pieces.push_back({false, std::move(literal)});
    arguments_.push_back(std::move(pieces));
  }
}

std::vector<std::string> CommandTemplate::render(const std::map<std::string, std::string>& values) const {
  std::vector<std::string> out;
  for (const std::vector<Piece>& pieces : arguments_) {
    std::string argument;
    for (const Piece& p : pieces) {
      if (!p.placeholder) {
        argument += p.text;
        continue;
      }
      const auto it = values.find(p.text);
      if (it == values.end()) throw OptionError("command", "", fmt::format("no value for placeholder {{{}}}", p.text));
      // A C string ends at a NUL: execve would silently pass a shorter argument.
      if (it->second.find('\0') != std::string::npos)
        throw OptionError("command", "",
                          fmt::format("the value of placeholder {{{}}} contains a NUL character, which a command "
                                      "argument cannot hold",
                                      p.text));
      argument += it->second;
    }
    out.push_back(std::move(argument));
  }
  return out;
}

std::string shell_quote(std::string_view argument) {
  const bool plain = !argument.empty() && argument.find_first_not_of(
                                              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                              "_-+=/.,:@%") == std::string_view::npos;
  if (plain) return std::string(argument);
  std::string out = "'";
  for (char c : argument) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}

}  // namespace paratune::trial

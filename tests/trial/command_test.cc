// Command templates: split first, substitute second, so values never meet a shell.
#include "paratune/trial/command.h"

#include <gtest/gtest.h>

#include "paratune/spec/error.h"

namespace paratune::trial {
namespace {

using Args = std::vector<std::string>;

TEST(Command, SplitsLikeAShellWithoutExpanding) {
  EXPECT_EQ(split_words("a  b\tc"), (Args{"a", "b", "c"}));
  EXPECT_EQ(split_words(R"(bash -c 'echo $HOME; ls' "x \"y\" \$z" back\ slash)"),
            (Args{"bash", "-c", "echo $HOME; ls", R"(x "y" $z)", "back slash"}));
  EXPECT_EQ(split_words(R"(''  "")"), (Args{"", ""}));
  EXPECT_THROW(split_words("'open"), Error);
  EXPECT_THROW(split_words("\"open"), Error);
  EXPECT_THROW(split_words("end\\"), Error);
}

TEST(Command, HostileValuesStayLiteralArguments) {
  const CommandTemplate t("torchrun --nproc-per-node {gpus} train.py --name={name} '{name}' {{literal}}",
                          {"gpus", "name", "tp"});
  EXPECT_EQ(t.placeholders(), (std::set<std::string>{"gpus", "name"}));
  const std::string hostile = R"(x'; rm -rf / #"$(touch pwned)`id` a b)";
  EXPECT_EQ(t.render({{"gpus", "8"}, {"name", hostile}}),
            (Args{"torchrun", "--nproc-per-node", "8", "train.py", "--name=" + hostile, hostile, "{literal}"}));
}

TEST(Command, BadTemplatesAreRejectedBeforeAnythingRuns) {
  auto message = [](const char* text) {
    try {
      CommandTemplate(text, {"tp", "pp"});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("train.py --tp {tpp}").find("unknown placeholder 'tpp'"), std::string::npos);
  EXPECT_NE(message("train.py --tp {tpp}").find("valid: pp, tp"), std::string::npos);
  EXPECT_NE(message("train.py --tp {tp").find("not closed"), std::string::npos);
  EXPECT_NE(message("train.py {}").find("empty placeholder"), std::string::npos);
  EXPECT_NE(message("train.py }").find("lone }"), std::string::npos);
  EXPECT_NE(message("   ").find("no program"), std::string::npos);
  EXPECT_NE(message("train.py 'x").find("unbalanced"), std::string::npos);
  const CommandTemplate t("run {tp}", {"tp", "pp"});
  EXPECT_THROW(t.render({{"pp", "2"}}), Error);
}

// Issue 39, item 8: a NUL in a value ended the C string execve was given, silently.
TEST(Command, AValueWithANulIsRefusedNamingThePlaceholder) {
  const CommandTemplate t("run --opt={opt} {tp}", {"tp", "opt"});
  try {
    (void)t.render({{"tp", "2"}, {"opt", std::string("adam\0--evil", 11)}});
    FAIL() << "a NUL passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the value of placeholder {opt} contains a NUL character"), std::string::npos)
        << e.what();
  }
}

TEST(Command, ShellQuoteRoundTrips) {
  for (const std::string& arg : {std::string("plain-1.0"), std::string("a b"), std::string("it's"), std::string(""),
                                 std::string("$(x)")})
    EXPECT_EQ(split_words(shell_quote(arg)), Args{arg}) << arg;
}

}  // namespace
}  // namespace paratune::trial

#include "paratune/spec/input_file.h"

#include <gtest/gtest.h>

#include "paratune/spec/error.h"

namespace paratune {
namespace {

std::string utf8_error(std::string_view text) {
  try {
    check_utf8(text, "f.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Utf8, AcceptsEveryLengthOfSequence) {
  EXPECT_EQ(first_non_utf8("ascii \x7F"), std::string_view::npos);
  EXPECT_EQ(first_non_utf8("caf\u00e9 \u2713 \U0001F600 \U0010FFFF"), std::string_view::npos);
  EXPECT_EQ(utf8_error("a\nb"), "");
}

// RFC 3629 section 4: overlong forms, surrogates, code points above U+10FFFF, stray continuation
// bytes and sequences cut short are not UTF-8.
TEST(Utf8, RejectsWhatRfc3629Excludes) {
  EXPECT_EQ(first_non_utf8("ab\xC0\xAF"), 2u);          // overlong '/'
  EXPECT_EQ(first_non_utf8("\xE0\x80\xAF"), 0u);        // overlong, three bytes
  EXPECT_EQ(first_non_utf8("x\xED\xA0\x80"), 1u);       // the surrogate U+D800
  EXPECT_EQ(first_non_utf8("\xF4\x90\x80\x80"), 0u);    // U+110000
  EXPECT_EQ(first_non_utf8("\xF5\x80\x80\x80"), 0u);
  EXPECT_EQ(first_non_utf8("ok \x80"), 3u);             // a continuation byte alone
  EXPECT_EQ(first_non_utf8("\xE2\x9C"), 0u);            // cut short at the end
  EXPECT_EQ(first_non_utf8("\xE2\x9Cx"), 0u);           // cut short by another character
  EXPECT_EQ(first_non_utf8("\xFF"), 0u);
}

TEST(Utf8, ErrorNamesTheLineColumnAndByte) {
  EXPECT_EQ(utf8_error("a: 1\nb: x\xFFy\n"),
            "f.yaml: line 2, column 5: byte 0xFF is not UTF-8 (paratune reads UTF-8 text)");
  EXPECT_EQ(utf8_error("\x80"), "f.yaml: line 1, column 1: byte 0x80 is not UTF-8 (paratune reads UTF-8 text)");
}

// A trial's stderr may hold any bytes: what a study stores and prints of it keeps valid UTF-8,
// shows each other byte as \xNN, and shows control characters rather than sending them to a terminal.
TEST(Utf8, PrintableTextKeepsUtf8AndShowsEveryOtherByte) {
  EXPECT_EQ(printable_text("caf\u00e9 \u2713 \U0001F600\tok\n"), "caf\u00e9 \u2713 \U0001F600\tok\n");
  EXPECT_EQ(printable_text("caf\xE9"), "caf\\xE9");                         // Latin-1
  EXPECT_EQ(printable_text("\xFF\xFE"), "\\xFF\\xFE");
  EXPECT_EQ(printable_text("\xE2\x9C"), "\\xE2\\x9C");                    // a sequence cut short
  EXPECT_EQ(printable_text("\x1B[31mred\r"), "\\x1B[31mred\\x0D");          // ESC, CR
  EXPECT_EQ(printable_text(std::string_view("a\0b\x7F", 4)), "a\\x00b\\x7F");  // NUL, DEL
  EXPECT_EQ(printable_text("\xC2\x9B" "2J"), "\\u009B2J");                 // the C1 control CSI
  EXPECT_EQ(printable_text(""), "");
  for (const std::string_view bytes : {"\xC0\xAF", "x\xED\xA0\x80y", "\x80\x80\x80", "ok \xF4\x90\x80\x80"})
    EXPECT_EQ(first_non_utf8(printable_text(bytes)), std::string_view::npos) << printable_text(bytes);
}

}  // namespace
}  // namespace paratune

#include "printable_text.h"

#include <gtest/gtest.h>

namespace leakwrap {
namespace {

TEST(PrintableText, PlainAndUtf8TextPassUnchanged) {
    EXPECT_EQ(printable("/usr/bin/puma -C config/puma.rb"), "/usr/bin/puma -C config/puma.rb");
    EXPECT_EQ(printable("≤32 B, café, 日本, 😀"), "≤32 B, café, 日本, 😀");
    EXPECT_EQ(printable(""), "");
}

TEST(PrintableText, ControlCharactersBecomeHexEscapes) {
    EXPECT_EQ(printable("a\x1b]0;owned\x07z"), "a\\x1b]0;owned\\x07z");
    EXPECT_EQ(printable("line\nnext\r\tend\x7f"), "line\\x0anext\\x0d\\x09end\\x7f");
    EXPECT_EQ(printable(std::string_view("nul\0byte", 8)), "nul\\x00byte");
    // C1 controls as UTF-8 (U+009B is CSI on terminals that honour C1).
    EXPECT_EQ(printable("\xc2\x9b"
                        "31m"),
              "\\xc2\\x9b31m");
    EXPECT_EQ(printable("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is printable
}

TEST(PrintableText, BytesThatAreNotUtf8BecomeHexEscapes) {
    EXPECT_EQ(printable("\x9b"
                        "2J"),
              "\\x9b2J");                                              // a lone C1 byte
    EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
    EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
    EXPECT_EQ(printable("\xe2\x89"), "\\xe2\\x89");                    // cut short
    EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

}  // namespace
}  // namespace leakwrap

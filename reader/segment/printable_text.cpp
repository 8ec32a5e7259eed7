#include "printable_text.h"

#include <cstdint>

namespace leakwrap {
namespace {

void append_escaped(std::string& out, uint8_t byte) {
    static constexpr char kDigits[] = "0123456789abcdef";
    out += "\\x";
    out += kDigits[byte >> 4];
    out += kDigits[byte & 0xf];
}

// Bytes in the UTF-8 sequence that starts at text[at], or 0 if none starts there: no overlong
// forms, no surrogates, nothing above U+10FFFF.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t i) { return static_cast<uint8_t>(text[at + i]); };
    const uint8_t lead = byte(0);
    std::size_t length = 0;
    uint8_t second_low = 0x80, second_high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf)
        length = 2;
    else if (lead >= 0xe0 && lead <= 0xef)
        length = 3;
    else if (lead >= 0xf0 && lead <= 0xf4)
        length = 4;
    if (lead == 0xe0) second_low = 0xa0;
    if (lead == 0xed) second_high = 0x9f;
    if (lead == 0xf0) second_low = 0x90;
    if (lead == 0xf4) second_high = 0x8f;
    if (length == 0 || text.size() - at < length) return 0;
    if (byte(1) < second_low || byte(1) > second_high) return 0;
    for (std::size_t i = 2; i < length; ++i)
        if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
    return length;
}

}  // namespace

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t at = 0; at < text.size();) {
        const auto byte = static_cast<uint8_t>(text[at]);
        if (byte < 0x80) {
            if (byte < 0x20 || byte == 0x7f)
                append_escaped(out, byte);
            else
                out += text[at];
            ++at;
            continue;
        }
        const std::size_t length = utf8_sequence_length(text, at);
        const bool c1_control = length == 2 && byte == 0xc2 && static_cast<uint8_t>(text[at + 1]) < 0xa0;
        if (length == 0) {
            append_escaped(out, byte);
            ++at;
        } else if (c1_control) {
            append_escaped(out, byte);
            append_escaped(out, static_cast<uint8_t>(text[at + 1]));
            at += 2;
        } else {
            out.append(text.substr(at, length));
            at += length;
        }
    }
    return out;
}

}  // namespace leakwrap

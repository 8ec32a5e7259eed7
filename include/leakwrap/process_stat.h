// How both sides read the identity a segment's header records (Header::start_time_ticks and
// Header::boot_id): the preload when it writes them and when it judges another process's
// segment, the reader when it tells whether a segment's process still runs. One parser, so
// the two can never disagree on which field is the start time.
//
// Header-only, constexpr and allocation-free: the preload calls it with its reentrancy guard
// held, on a line read into a stack buffer. Not installed: segment_layout.h is the contract,
// this is how its identity fields are derived.
#pragma once

#include <cstdint>
#include <string_view>

namespace leakwrap::proc {

// The kernel's id of this boot, a UUID and a newline.
inline constexpr const char* kBootIdPath = "/proc/sys/kernel/random/boot_id";

// What leakwrap takes from /proc/<pid>/stat.
struct StatFields {
    char state;                 // field 3: R, S, D, Z (zombie), X (dead), ...
    uint64_t start_time_ticks;  // field 22: start time after boot, in clock ticks
};

// Parses a /proc/<pid>/stat line. The command name in field 2 may contain spaces and
// parentheses, so fields are counted from the last ')'. False if the line is cut short before
// field 22 or that field is not a decimal number.
constexpr bool parse_stat(std::string_view line, StatFields* out) {
    const std::size_t name_end = line.rfind(')');
    if (name_end == std::string_view::npos) return false;
    std::string_view rest = line.substr(name_end + 1);
    auto next_field = [&rest]() {
        std::size_t start = 0;
        while (start < rest.size() && (rest[start] == ' ' || rest[start] == '\n')) ++start;
        std::size_t end = start;
        while (end < rest.size() && rest[end] != ' ' && rest[end] != '\n') ++end;
        const std::string_view field = rest.substr(start, end - start);
        rest = rest.substr(end);
        return field;
    };
    const std::string_view state = next_field();
    if (state.empty()) return false;
    for (int field = 4; field < 22; ++field)
        if (next_field().empty()) return false;
    const std::string_view start_time = next_field();
    if (start_time.empty()) return false;
    uint64_t ticks = 0;
    for (const char digit : start_time) {
        if (digit < '0' || digit > '9') return false;
        const uint64_t value = static_cast<uint64_t>(digit - '0');
        if (ticks > (UINT64_MAX - value) / 10) return false;
        ticks = ticks * 10 + value;
    }
    *out = StatFields{state.front(), ticks};
    return true;
}

// A /proc text without its trailing newline, spaces and NULs: the boot id as the header keeps
// it (a fixed field padded with NULs), a command line whose NULs became spaces.
constexpr std::string_view without_trailing_space(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0')) text.remove_suffix(1);
    return text;
}

}  // namespace leakwrap::proc

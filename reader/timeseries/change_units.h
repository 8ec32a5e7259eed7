// How time analysis writes changes and rates for people: "+12.0 KiB", "-3 B", "+4.1 MiB/h",
// "01:05".
#pragma once

#include <cstdint>
#include <string>

namespace leakwrap {

// A signed byte count in binary units, always with its sign: "+0 B", "+812 B", "-1.5 MiB".
std::string signed_human_bytes(double bytes);

// A growth rate: "+4.1 MiB/h".
std::string bytes_per_hour(double bytes_per_hour);

// Seconds since the first sample as m:ss (or h:mm:ss from an hour on), with tenths when the
// clock is that fine: "0:02.4", "12:00", "1:05:30".
std::string elapsed_clock(double seconds, bool with_tenths);

}  // namespace leakwrap

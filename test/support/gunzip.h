// What a gzip stream holds, for the tests of what serve gzips. Throws std::runtime_error for
// anything but one whole gzip stream.
#pragma once

#include <string>

namespace leakwrap {

std::string gunzip(const std::string& compressed);

}  // namespace leakwrap

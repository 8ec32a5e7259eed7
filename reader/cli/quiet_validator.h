// CLI11 prints each validator's description after an option's type name, which doubled them in
// --help ("--listen ADDR:PORT:ADDR:PORT", "--top INT:INT in [0 - 2147483647]"). Every option
// here names its type itself and says its range in its own text, so its checks stay silent.
#pragma once

#include <CLI/CLI.hpp>

namespace leakwrap {

inline CLI::Validator quiet(CLI::Validator validator) {
    validator.description("");
    return validator;
}

}  // namespace leakwrap

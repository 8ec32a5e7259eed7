// leakwrap as `cmake --install` lays it out under a fresh prefix: the tests use the installed
// files, never the build tree's, so that they check what users get.
#pragma once

#include "temporary_directory.h"

#include <filesystem>

namespace leakwrap::ecosystem {

class InstalledTree {
public:
    // Runs `cmake --install <build dir> --prefix <temporary dir>`; throws if it fails.
    InstalledTree();

    const std::filesystem::path& prefix() const { return prefix_.path(); }
    std::filesystem::path bin(const char* name) const;
    std::filesystem::path lib(const char* name) const;
    std::filesystem::path include(const char* name) const;
    std::filesystem::path man(const char* section_and_name) const;  // "man1/leakwrap.1"
    std::filesystem::path data(const char* name) const;

private:
    TemporaryDirectory prefix_;
};

}  // namespace leakwrap::ecosystem

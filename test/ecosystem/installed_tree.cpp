#include "installed_tree.h"

#include "harness.h"

#include <stdexcept>

namespace leakwrap::ecosystem {

InstalledTree::InstalledTree() {
    const e2e::Completed install =
        e2e::run({LEAKWRAP_CMAKE_COMMAND, "--install", LEAKWRAP_BUILD_DIR, "--prefix", prefix().string()},
                 e2e::Environment::bare());
    if (install.exit_code != 0) throw std::runtime_error("cmake --install failed: " + install.out + install.err);
}

std::filesystem::path InstalledTree::bin(const char* name) const { return prefix() / LEAKWRAP_INSTALL_BINDIR / name; }

std::filesystem::path InstalledTree::lib(const char* name) const { return prefix() / LEAKWRAP_INSTALL_LIBDIR / name; }

std::filesystem::path InstalledTree::include(const char* name) const {
    return prefix() / LEAKWRAP_INSTALL_INCLUDEDIR / name;
}

std::filesystem::path InstalledTree::man(const char* section_and_name) const {
    return prefix() / LEAKWRAP_INSTALL_MANDIR / section_and_name;
}

std::filesystem::path InstalledTree::data(const char* name) const { return prefix() / LEAKWRAP_INSTALL_DATADIR / name; }

}  // namespace leakwrap::ecosystem

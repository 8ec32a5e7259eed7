// The e2e tests' objcopy (binutils', found by CMake as LEAKWRAP_OBJCOPY; "" when there is none,
// and the tests that need it skip): to split a program's debug info off, and to read build-ids.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace leakwrap::e2e {

bool have_objcopy();

// Runs objcopy with `arguments`; throws with its stderr when it fails.
void objcopy(const std::vector<std::string>& arguments);

// The build-id of an ELF file, in hex, as debug files are found by (.build-id/ab/cdef….debug,
// debuginfod's /buildid/abcdef…). `scratch` is a directory for objcopy's output.
std::string build_id_hex(const std::filesystem::path& elf, const std::filesystem::path& scratch);

}  // namespace leakwrap::e2e

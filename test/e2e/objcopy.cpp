#include "objcopy.h"

#include "harness.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace leakwrap::e2e {

bool have_objcopy() { return !std::string(LEAKWRAP_OBJCOPY).empty(); }

void objcopy(const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{LEAKWRAP_OBJCOPY};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    const Completed completed = run(argv, Environment::bare());
    if (completed.exit_code != 0) throw std::runtime_error("objcopy failed: " + completed.err);
}

// The .note.gnu.build-id section is a 12-byte note header, "GNU\0", then the id.
std::string build_id_hex(const std::filesystem::path& elf, const std::filesystem::path& scratch) {
    const std::filesystem::path note = scratch / "build-id.note";
    objcopy({"--dump-section", ".note.gnu.build-id=" + note.string(), elf.string(), (scratch / "unused").string()});
    std::ifstream in(note, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (bytes.size() <= 16) throw std::runtime_error("no build-id in " + elf.string());
    std::string hex;
    for (std::size_t i = 16; i < bytes.size(); ++i) {
        char digits[3];
        std::snprintf(digits, sizeof(digits), "%02x", static_cast<unsigned char>(bytes[i]));
        hex += digits;
    }
    return hex;
}

}  // namespace leakwrap::e2e

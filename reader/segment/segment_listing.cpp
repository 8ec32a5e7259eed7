#include "segment_listing.h"

#include "printable_text.h"
#include "process_identity.h"
#include "segment_directory.h"

#include <iomanip>

namespace leakwrap {
namespace {

// COMMAND comes last, since it tells apart processes of one executable (puma workers, say) and
// is the longest.
void write_row(std::ostream& out, const std::string& pid, std::string_view state, const std::string& live_bytes,
               const std::string& live_blocks, const std::string& sites, const std::string& exe,
               const std::string& command) {
    out << std::left << std::setw(10) << pid << ' ' << std::setw(10) << state << ' ' << std::right << std::setw(16)
        << live_bytes << ' ' << std::setw(12) << live_blocks << ' ' << std::setw(8) << sites << "  " << std::left
        << std::setw(24) << exe << "  " << command << '\n';
}

// How the owner ended, as far as the segment tells: a normal exit either removes the segment or
// (LEAKWRAP_KEEP=1) marks it exited, so a gone owner without the mark skipped its exit path, as
// a signal (SIGTERM, SIGKILL, SIGPIPE) or a crash does. "?": a program exec'd without the
// preload ends unmarked too.
std::string_view listed_state(OwnerState state) {
    return state == OwnerState::dead ? "killed?" : owner_state_name(state);
}

}  // namespace

void list_segments(std::ostream& out, const std::filesystem::path& directory) {
    write_row(out, "PID", "STATE", "LIVE_BYTES", "LIVE_BLOCKS", "SITES", "EXE", "COMMAND");
    for (const auto& entry : find_segments(directory)) {
        const std::string pid = std::to_string(entry.pid);
        try {
            const auto snapshot = read_segment(entry);
            const OwnerState state = owner_state(snapshot);
            write_row(out, pid, listed_state(state), std::to_string(snapshot.totals.live_bytes()),
                      std::to_string(snapshot.totals.live_blocks()), std::to_string(snapshot.sites_in_use()),
                      printable(snapshot.exe), printable(current_command_line(snapshot, state)));
        } catch (const std::exception& error) {
            write_row(out, pid, "unreadable", "-", "-", "-", "-", "error: " + printable(error.what()));
        }
    }
}

}  // namespace leakwrap

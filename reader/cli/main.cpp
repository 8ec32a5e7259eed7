// leakwrap-report: shows where the still-live heap memory of a process started with
// LD_PRELOAD=libleakwrap.so was allocated, by reading its segment /dev/shm/leakwrap.<pid>.
#include "birth_options.h"
#include "focus_options.h"
#include "grouping_option.h"
#include "libc_lines_option.h"
#include "option_typos.h"
#include "output_file.h"
#include "printable_text.h"
#include "process_identity.h"
#include "process_tree.h"
#include "quiet_validator.h"
#include "report.h"
#include "segment_cleaning.h"
#include "segment_directory.h"
#include "segment_file.h"
#include "segment_listing.h"
#include "short_names.h"
#include "subcommands.h"

#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <stdexcept>

namespace {

using namespace leakwrap;

constexpr int kExitRuntimeError = 1;
constexpr int kExitUsageError = 2;

struct CommandLine {
    int64_t pid = 0;
    std::string segment;
    ReportOptions report;
    SymbolizerOptions symbolizer;
    bool children = false;  // merge the pid's descendants into its report
    bool list = false;
    bool clean = false;
    std::string output;  // -o: the report goes to this file instead of stdout
    FocusCommandLine focus;
    BirthCommandLine births;
};

// Scripts parse stderr line by line; a message must never span two.
int report_error(std::string_view message, int exit_code) {
    std::cerr << "leakwrap-report: error: " << printable(message) << '\n';
    return exit_code;
}

// Whether writing to FILE would write to a terminal (-o /dev/tty, say). Opened without
// creating, truncating or waiting (a FIFO without a reader fails), and closed again.
bool is_terminal(const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    const bool terminal = isatty(fd) != 0;
    ::close(fd);
    return terminal;
}

// CLI11 reports a mistyped option by what became of the words after it ("Could not convert: pid
// = json" for --formt json 1), and a mistyped subcommand as a pid. Say what was mistyped instead,
// with the name that was likely meant.
std::string usage_error_message(const CLI::App& app, const CLI::Option& pid, const CLI::ParseError& error) {
    const auto meant = [&](const std::string& typed) {
        const auto name = closest_name(app, typed);
        return name ? "; did you mean " + *name + "?" : "";
    };
    for (const std::string& typed : app.remaining(true)) {
        const bool option = typed.starts_with("--") || (typed.size() == 2 && typed[0] == '-' && std::isalpha(typed[1]));
        if (option) return "unknown option " + typed + meant(typed);
    }
    for (const std::string& typed : pid.results())
        if (typed.find_first_not_of("0123456789") != std::string::npos && closest_name(app, typed))
            return "unknown subcommand " + typed + meant(typed);
    // An option of one value given twice: CLI11 counts the values ("--top: At Most 1 required
    // but received 2"); say which option and that it is the repetition.
    const std::string what = error.what();
    if (const auto colon = what.find(": At Most 1 required"); colon != std::string::npos)
        return what.substr(0, colon) + " is given more than once; it takes one value";
    return what;
}

Snapshot read_by_pid(pid_t pid) {
    const SegmentEntry entry{pid, segment_path(pid)};
    try {
        Snapshot snapshot = read_segment(entry);
        if (owner_state(snapshot) == OwnerState::alive)
            snapshot.memory = read_process_memory(pid, entry.path, snapshot.writer_private_bytes.value_or(0));
        return snapshot;
    } catch (const SegmentFileError& error) {
        if (error.error_number() != ENOENT) throw;
        const std::string id = std::to_string(pid);
        if (process_exists(pid))
            throw std::runtime_error("process " + id +
                                     " has no leakwrap segment (was it started with "
                                     "LD_PRELOAD=libleakwrap.so? LEAKWRAP_DISABLE set?)");
        throw std::runtime_error("no process " + id + " and no segment " + entry.path.string() + " left behind");
    }
}

// The pid's snapshot, or with `children` that of the pid and every live descendant with a
// segment of its own (a worker that is not profiled, or exits meanwhile, is passed over).
Snapshot read_process(pid_t pid, bool children) {
    Snapshot root = read_by_pid(pid);
    if (!children) return root;
    return merge_process_tree(std::move(root), read_live_descendants(pid, read_by_pid));
}

int run(const CommandLine& command) {
    if (command.list) {
        list_segments(std::cout);
        return 0;
    }
    if (command.clean) return clean_segments(std::cout).failed == 0 ? 0 : kExitRuntimeError;

    Snapshot snapshot = command.segment.empty() ? read_process(static_cast<pid_t>(command.pid), command.children)
                                                : read_segment_file(command.segment);
    if (const auto warning = impossible_counts_warning(snapshot))
        std::cerr << "leakwrap-report: warning: " << *warning << '\n';
    if (const BirthWindow window = command.births.window(); window.any()) keep_births_within(snapshot, window);
    const OwnerState state = owner_state(snapshot);
    snapshot.command_line = current_command_line(snapshot, state);
    Symbolizer symbolizer(snapshot.modules, command.symbolizer);
    const ReportInput input{snapshot, state, symbolizer, command.report};
    if (command.output.empty()) {
        write_report(std::cout, input);
        return 0;
    }
    OutputFile file(command.output);
    write_report(file.stream(), input);
    file.close();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // Every block of 128 KiB or more its own mapping, given back when freed. glibc otherwise
    // raises this threshold to the largest block freed so far, so that the parse's large
    // temporary tables put the ranking's and the rows' in the heap, whose freed middle stays
    // resident.
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    std::ios::sync_with_stdio(false);
    CommandLine command;
    std::string sort = "live";
    std::string format = "text";
    std::string by = "native";

    CLI::App app(
        "Show where the still-live heap memory of a process running under "
        "LD_PRELOAD=libleakwrap.so was allocated.",
        "leakwrap-report");
    auto* pid = app.add_option("pid", command.pid, "Process to report on; reads /dev/shm/leakwrap.<pid>");
    auto* segment = app.add_option("--segment", command.segment,
                                   "Read this segment file instead of a pid's "
                                   "(post-mortem copies, tests)")
                        ->type_name("FILE");
    int64_t top = 20;
    app.add_option("--top", top, "Show the N rows ranked first; 0 shows all (default: 20)")
        ->check(quiet(CLI::Range(int64_t{0}, int64_t{INT_MAX})));
    app.add_option("--sort", sort,
                   "Rank rows by live (live bytes), allocs (allocation count) or bytes "
                   "(total bytes allocated) (default: live)")
        ->check(CLI::IsMember({"live", "allocs", "bytes"}));
    app.add_option("--format", format,
                   "Output as text, json, csv, folded (flame graph stacks), prometheus (the "
                   "Prometheus text format, for node_exporter's textfile collector), openmetrics "
                   "or pprof (gzipped protobuf for go tool pprof, Pyroscope, Parca); folded and "
                   "pprof always carry every row (default: text)")
        ->check(CLI::IsMember({"text", "json", "csv", "folded", "prometheus", "openmetrics", "pprof"}));
    std::string value = "live";
    app.add_option("--value", value,
                   "What a folded line counts: live (live bytes) or alloc (bytes ever "
                   "allocated) (default: live)")
        ->check(CLI::IsMember({"live", "alloc"}));
    app.add_option("-o,--output", command.output, "Write the report to FILE instead of stdout (default: stdout)")
        ->type_name("FILE");
    add_grouping_option(app, by);
    app.add_flag("--bins", command.report.bins,
                 "Show the exact size-class table instead of the rows: allocations, frees and "
                 "live blocks and bytes per class, each with its top 3 rows by live blocks; JSON "
                 "always has it as \"bins\" (default: off)");
    add_focus_options(app, command.focus,
                      "a native frame's function (demangled, in full), source file or module "
                      "path, or a Ruby frame's file:line");
    add_birth_options(app, command.births);
    int64_t site = -1;
    auto* site_option = app.add_option("--site", site,
                                       "Show this site alone and in full: every frame with its full name, the Ruby "
                                       "frames, every size class, and with --children each process's share; the "
                                       "id is the one reports, watch, suspects and top print (default: none)")
                            ->type_name("ID")
                            ->check(quiet(CLI::Range(int64_t{0}, int64_t{UINT32_MAX})))
                            ->excludes("--focus")
                            ->excludes("--ignore");
    app.add_flag("--hide-runtime", command.report.hide_runtime,
                 "Leave out of the stacks shown the frames of the C and C++ runtimes, of the Ruby "
                 "VM (libruby) and of the program's start (_start), in every format (default: off)");
    app.add_flag("--full-names", command.report.full_names,
                 "Text: show C++ names in full; by default a name longer than " + std::to_string(kShortNameLength) +
                     " characters has its template arguments, and if need be its parameters, "
                     "elided to ... (JSON and the tool formats always have them in full) "
                     "(default: off)");
    add_libc_lines_flag(app, command.symbolizer);
    app.add_flag("--children", command.children,
                 "With a pid: one report for the pid and its live descendants (puma's workers, "
                 "say), their rows merged where stacks and Ruby frames are equal; JSON gives each "
                 "row's split per process, text a line per process (default: off)")
        ->needs(pid);
    auto* list = app.add_flag("--list", command.list,
                              "List every segment in /dev/shm: PID, STATE, LIVE_BYTES, "
                              "LIVE_BLOCKS, SITES, EXE, COMMAND (default: off)");
    auto* clean = app.add_flag("--clean", command.clean,
                               "Remove the segments of dead, stale or exited processes, never a "
                               "live one's (default: off)");
    app.set_version_flag("--version", std::string("leakwrap-report ") + LEAKWRAP_VERSION);
    for (auto* mode : {pid, segment, list, clean})
        for (auto* other : {pid, segment, list, clean})
            if (mode != other) mode->excludes(other);
    // Time analysis or the HTTP server, instead of a report: at most one subcommand.
    app.require_subcommand(0, 1);
    const std::vector<Subcommand> subcommands = {add_watch_subcommand(app, read_process),
                                                 add_suspects_subcommand(app),
                                                 add_diff_subcommand(app),
                                                 add_plot_subcommand(app),
                                                 add_serve_subcommand(app),
                                                 add_top_subcommand(app, read_process)};

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForVersion& version) {
        return app.exit(version);
    } catch (const CLI::ParseError& error) {
        return report_error(usage_error_message(app, *pid, error) + " (see --help)", kExitUsageError);
    }
    const auto chosen = std::find_if(subcommands.begin(), subcommands.end(),
                                     [](const Subcommand& sub) { return sub.parser->parsed(); });
    const auto report_modes = pid->count() + segment->count() + list->count() + clean->count();
    if (chosen != subcommands.end() && report_modes > 0)
        return report_error(
            "a subcommand takes no pid, --segment, --list or --clean before it "
            "(see --help)",
            kExitUsageError);
    if (chosen == subcommands.end() && report_modes == 0)
        return report_error("give a pid, --segment FILE, --list or --clean (see --help)", kExitUsageError);
    if (pid->count() > 0 && (command.pid <= 0 || command.pid > INT_MAX))
        return report_error("pid must be between 1 and " + std::to_string(INT_MAX), kExitUsageError);
    command.report.top = static_cast<std::size_t>(top);
    command.report.sort = *sort_key_from_name(sort);
    command.report.format = *report_format_from_name(format);
    command.report.value = *value_kind_from_name(value);
    if (command.report.format == ReportFormat::pprof &&
        (command.output.empty() ? isatty(STDOUT_FILENO) != 0 : is_terminal(command.output)))
        return report_error(
            "pprof output is binary and would garble the terminal: give -o FILE "
            "or redirect stdout",
            kExitUsageError);
    command.report.by = *grouping_from_name(by);
    command.report.focus = command.focus.patterns();
    if (site_option->count() > 0) command.report.site = static_cast<uint32_t>(site);

    try {
        const int status = chosen != subcommands.end() ? chosen->run() : run(command);
        std::cout.flush();
        if (!std::cout) return report_error("cannot write the report to stdout", kExitRuntimeError);
        return status;
    } catch (const std::exception& error) {
        return report_error(error.what(), kExitRuntimeError);
    }
}

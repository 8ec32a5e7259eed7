#include "focus_options.h"
#include "quiet_validator.h"
#include "site_focus.h"
#include "snapshot_diff.h"
#include "snapshot_diff_output.h"
#include "subcommands.h"

#include <climits>
#include <iostream>
#include <memory>

namespace leakwrap {
namespace {

struct DiffCommandLine {
    std::vector<std::string> files;
    int64_t top = 20;
    double kept_percent = kDefaultKeptPercent;
    std::string format = "text";
    FocusCommandLine focus;
    bool full_names = false;
};

}  // namespace

Subcommand add_diff_subcommand(CLI::App& app) {
    auto line = std::make_shared<DiffCommandLine>();
    CLI::App* diff =
        app.add_subcommand("diff",
                           "Compare snapshots of a process, each a --format json report or one line of a watch "
                           "series. Two (A B): each site's and size class's change of live bytes and blocks, B - A, "
                           "most growth first. Three (A B C): the retained view, the sites and classes that grew "
                           "from A to B and still held at least --kept percent of that growth at C, that is "
                           "live(C) - live(A) >= kept/100 * (live(B) - live(A)); at 100, live(C) >= live(B). Sites "
                           "are matched by id when all snapshots are of one pid, else by their stack");
    diff->add_option("snapshots", line->files, "Two or three snapshot files: A B [C]")
        ->required()
        ->expected(2, 3)
        ->type_name("FILE")
        ->check(quiet(CLI::ExistingFile));
    diff->add_option("--top", line->top, "Show the N rows first in each table; 0 shows all (default: 20)")
        ->check(quiet(CLI::Range(int64_t{0}, int64_t{INT_MAX})));
    diff->add_option("--kept", line->kept_percent,
                     "With three snapshots: the share of the A-to-B growth, in percent, that C "
                     "must still hold (default: 100)")
        ->check(quiet(CLI::Range(0.0, 100.0)));
    diff->add_option("--format", line->format, "Output as text or json (default: text)")
        ->check(CLI::IsMember({"text", "json"}));
    add_focus_options(
        *diff, line->focus,
        "the site's label and its stack as the series keeps it: the functions, source files and Ruby file:line of its "
        "frames (a module only for a frame without a function); size classes and totals stay whole");
    diff->add_flag("--full-names", line->full_names,
                   "Text: show the sites' C++ names in full instead of shortened (default: off)");

    return {
        diff, [line] {
            auto labels = std::make_shared<DiffLabels>();
            std::vector<DiffSnapshot> snapshots;
            // Growing, the vector copied the snapshots read (a deque's move may throw): 3.6
            // MiB of a diff of two Rails series lines.
            snapshots.reserve(line->files.size());
            for (const std::string& file : line->files)
                snapshots.push_back(read_diff_snapshot(file, *labels, line->focus.patterns()));
            const SnapshotDiff aligned = align_snapshots(snapshots, std::move(labels));
            std::vector<DiffSnapshot>().swap(snapshots);  // the rows hold what is shown
            const DiffOutputOptions options{static_cast<std::size_t>(line->top), line->kept_percent, line->full_names};
            if (line->format == "json")
                std::cout << diff_json(aligned, options).dump(2) << '\n';
            else
                write_diff_text(std::cout, aligned, options);
            return 0;
        }};
}

}  // namespace leakwrap

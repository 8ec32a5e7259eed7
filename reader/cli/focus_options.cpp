#include "focus_options.h"
#include "quiet_validator.h"

namespace leakwrap {

void add_focus_options(CLI::App& app, FocusCommandLine& line, const std::string& matched) {
    const CLI::Validator regex(focus_pattern_error, "REGEX");
    // One pattern per occurrence: a list option would take the pid after it as a pattern.
    app.add_option("--focus", line.focus,
                   "Keep only the sites with a frame that this regular expression (ECMAScript, "
                   "searched anywhere: a word matches as a substring) matches in " +
                       matched +
                       "; repeat it to keep the sites any of them matches; applied before --top "
                       "(default: none)")
        ->type_name("REGEX")
        ->allow_extra_args(false)
        ->check(quiet(regex));
    app.add_option("--ignore", line.ignore,
                   "Leave out the sites with a frame that this regular expression matches, as "
                   "--focus does; repeatable (default: none)")
        ->type_name("REGEX")
        ->allow_extra_args(false)
        ->check(quiet(regex));
}

}  // namespace leakwrap

#include "runtime_frames.h"

#include "report_labels.h"

#include <numeric>

namespace leakwrap {

bool is_runtime_frame(const ResolvedFrame& frame) {
    // _start is linked into the executable itself, so its module does not tell.
    return is_runtime_module(frame.module.value_or("")) || (frame.function && frame.function->str() == "_start");
}

std::vector<std::size_t> shown_frame_indexes(const ReportRow& row, Symbolizer& symbolizer, bool hide_runtime) {
    std::vector<std::size_t> shown;
    if (!hide_runtime) {
        shown.resize(row.frames().size());
        std::iota(shown.begin(), shown.end(), std::size_t{0});
        return shown;
    }
    for (std::size_t i = 0; i < row.frames().size(); ++i)
        // The function holding the code: the frames of one address share its module.
        if (!is_runtime_frame(symbolizer.resolve(row.frames()[i], row.module_generation()).back())) shown.push_back(i);
    if (shown.empty() && !row.frames().empty() && row.ruby().empty()) shown.push_back(0);
    return shown;
}

}  // namespace leakwrap

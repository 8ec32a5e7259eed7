// What every format writer takes: one snapshot, what became of its process, and the options.
#pragma once

#include "process_identity.h"
#include "report_options.h"
#include "segment_snapshot.h"
#include "symbolizer.h"

namespace leakwrap {

struct ReportInput {
    const Snapshot& snapshot;
    OwnerState owner;
    Symbolizer& symbolizer;
    ReportOptions options;
};

}  // namespace leakwrap

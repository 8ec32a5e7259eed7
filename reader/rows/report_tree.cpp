#include "report_tree.h"

#include "sampling_estimate.h"

#include <algorithm>

namespace leakwrap {

std::vector<ProcessShare> row_split_by_process(const ReportRow& row, const Snapshot& snapshot) {
    std::vector<ProcessShare> shares;
    for (const TreeMember& member : snapshot.members) shares.push_back({member.pid, {}});
    if (shares.empty()) return shares;
    // A merged snapshot's records are in ascending id order: the root's slots, then each
    // descendant's past the previous ones.
    for (const Site* site : row.record_sites) {
        const uint32_t id = site->id;
        const auto member = std::find_if(snapshot.members.begin(), snapshot.members.end(),
                                         [id](const TreeMember& m) { return id < m.end_site_id; });
        if (member == snapshot.members.end()) continue;
        shares[static_cast<std::size_t>(member - snapshot.members.begin())].counters +=
            estimated_counters(site->counters(), snapshot.sample_interval);
    }
    std::erase_if(shares, [](const ProcessShare& share) { return share.counters.allocs == 0; });
    return shares;
}

}  // namespace leakwrap

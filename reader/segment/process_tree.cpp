#include "process_tree.h"

#include "process_identity.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace leakwrap {
namespace {

std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> children;
    std::error_code error;
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
        std::ifstream in(task.path() / "children");
        for (pid_t child; in >> child;) children.push_back(child);
    }
    return children;
}

bool same_module(const Module& a, const Module& b) {
    return a.path == b.path && a.start == b.start && a.load_bias == b.load_bias;
}

TreeMember member_of(const Snapshot& snapshot, uint64_t first_site_id, uint64_t end_site_id) {
    return {snapshot.pid, snapshot.command_line, snapshot.totals, snapshot.memory, first_site_id, end_site_id};
}

uint64_t end_of_ids(const Snapshot& snapshot) {
    uint64_t end = 0;
    for (const Site& site : snapshot.sites) end = std::max<uint64_t>(end, uint64_t{site.id} + 1);
    return end;
}

}  // namespace

std::vector<pid_t> descendants(pid_t root) {
    std::vector<pid_t> found;
    std::vector<pid_t> parents{root};
    while (!parents.empty()) {
        const pid_t parent = parents.back();
        parents.pop_back();
        for (const pid_t child : children_of(parent)) {
            if (std::find(found.begin(), found.end(), child) != found.end()) continue;
            found.push_back(child);
            parents.push_back(child);
        }
    }
    return found;
}

std::vector<Snapshot> read_live_descendants(pid_t root, const std::function<Snapshot(pid_t)>& read) {
    std::vector<Snapshot> snapshots;
    for (const pid_t descendant : descendants(root)) {
        try {
            Snapshot snapshot = read(descendant);
            if (owner_state(snapshot) == OwnerState::alive) snapshots.push_back(std::move(snapshot));
        } catch (const std::exception&) {
        }
    }
    return snapshots;
}

Snapshot merge_process_tree(Snapshot root, std::vector<Snapshot> others) {
    std::sort(others.begin(), others.end(), [](const Snapshot& a, const Snapshot& b) {
        return std::tie(a.start_time_ticks, a.pid) < std::tie(b.start_time_ticks, b.pid);
    });
    uint64_t next_id = end_of_ids(root);
    root.members.push_back(member_of(root, 0, next_id));
    for (Snapshot& other : others) {
        const uint64_t first = next_id;
        for (Site& site : other.sites) {
            site.id = static_cast<uint32_t>(first + site.id);
            root.sites.push_back(std::move(site));
        }
        root.stack_stores.insert(root.stack_stores.end(), other.stack_stores.begin(), other.stack_stores.end());
        next_id = first + end_of_ids(other);
        root.members.push_back(member_of(other, first, next_id));
        for (const Module& module : other.modules)
            if (std::none_of(root.modules.begin(), root.modules.end(),
                             [&](const Module& known) { return same_module(known, module); }))
                root.modules.push_back(module);
        if (root.bins.size() < other.bins.size()) root.bins.resize(other.bins.size());
        for (std::size_t size_class = 0; size_class < other.bins.size(); ++size_class)
            root.bins[size_class] += other.bins[size_class];
        root.totals += other.totals;
        root.sites_claimed += other.sites_claimed;
        root.lost_sites += other.lost_sites;
        root.reduced_stacks += other.reduced_stacks;
        // Forked workers keep their parent's birth grid; a process that exec'd has one of its own,
        // and cells of two grids are not the same times.
        if (root.births != other.births) root.births.reset();
        // Each process's allocator counts its own memory: one process's figures are not the tree's.
        root.allocator_statistics.reset();
        root.counted_at_allocator_reading.reset();
        if (root.memory && other.memory) {
            root.memory->rss_anon += other.memory->rss_anon;
            root.memory->rss_file += other.memory->rss_file;
            root.memory->rss_shmem += other.memory->rss_shmem;
            root.memory->segment_resident += other.memory->segment_resident;
            root.memory->leakwrap_private += other.memory->leakwrap_private;
            root.memory->pss += other.memory->pss;
        }
    }
    return root;
}

}  // namespace leakwrap

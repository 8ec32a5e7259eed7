#include "suspects_output.h"

#include "birth_window.h"
#include "change_units.h"
#include "memory_growth.h"
#include "report_labels.h"
#include "short_names.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>

namespace leakwrap {
namespace {

std::size_t shown(const std::vector<Suspect>& suspects, std::size_t top) {
    return top == 0 ? suspects.size() : std::min(top, suspects.size());
}

uint64_t whole_bytes(double bytes) { return static_cast<uint64_t>(std::llround(bytes)); }

std::string fixed(double value, int decimals) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.*f", decimals, value);
    return text;
}

// "1.2 M": the work clock, read at a glance.
std::string count_text(uint64_t count) {
    if (count < 10000) return std::to_string(count);
    if (count < 10'000'000) return fixed(static_cast<double>(count) / 1e3, 1) + " k";
    return fixed(static_cast<double>(count) / 1e6, 1) + " M";
}

nlohmann::json part_growth_json(const MemoryGrowth& growth) {
    if (growth.part_growth.empty()) return nullptr;
    nlohmann::json parts = nlohmann::json::object();
    for (const auto& [name, bytes] : growth.part_growth) parts[name] = bytes;
    return parts;
}

nlohmann::json allocator_growth_json(const std::optional<AllocatorGrowth>& growth) {
    if (!growth) return nullptr;
    nlohmann::json arenas = nlohmann::json::array();
    for (const ArenaGrowth& arena : growth->arenas)
        arenas.push_back(
            {{"arena", arena.index}, {"free_growth_bytes", arena.free}, {"returnable_growth_bytes", arena.returnable}});
    return {{"allocator", growth->allocator},
            {"first_taken_since_start_seconds", double(growth->first_taken_since_start_ns) / 1e9},
            {"last_taken_since_start_seconds", double(growth->last_taken_since_start_ns) / 1e9},
            {"in_use_growth_bytes", growth->in_use},
            {"free_growth_bytes", growth->free},
            {"returnable_growth_bytes", growth->returnable},
            {"arenas_free_grew_most", std::move(arenas)},
            {"more_arenas_free_grew", growth->more_arenas_grew}};
}

nlohmann::json memory_growth_json(const std::optional<MemoryGrowth>& growth) {
    if (!growth) return nullptr;
    nlohmann::json churning = nlohmann::json::array();
    for (const ChurningClass& entry : growth->churning) {
        const std::optional<uint64_t> limit = size_class_limit_bytes(entry.size_class);
        churning.push_back({{"class", entry.size_class},
                            {"limit", limit ? nlohmann::json(*limit) : nlohmann::json(nullptr)},
                            {"allocs", entry.allocs},
                            {"frees", entry.frees}});
    }
    return {{"rss_growth_bytes", growth->rss},
            {"rss_anon_growth_bytes", growth->rss_anon},
            {"pss_growth_bytes", growth->pss ? nlohmann::json(*growth->pss) : nlohmann::json(nullptr)},
            {"measured_by", growth->by_pss ? "pss" : "rss"},
            {"segment_growth_bytes", growth->segment},
            {"leakwrap_private_growth_bytes", growth->leakwrap_private},
            {"tracked_live_growth_bytes", growth->tracked_live},
            {"untracked", growth->untracked},
            {"churning_classes", std::move(churning)},
            {"parts_growth_bytes", part_growth_json(*growth)},
            {"allocator_growth", allocator_growth_json(growth->allocator)},
            {"findings", growth->last_findings}};
}

}  // namespace

std::array<std::string, kSuspectColumns.size()> suspect_cells(const Suspect& suspect, bool full_names) {
    return {
        std::string(trend_name(suspect.trend)),
        signed_human_bytes(suspect.growth_per_million_allocs),
        bytes_per_hour(suspect.growth_per_hour),
        fixed(suspect.r_squared, 2),
        suspect.retention.retained_share ? fixed(100 * *suspect.retention.retained_share, 0) + "%" : "-",
        human_bytes(whole_bytes(suspect.first_live_bytes)),
        human_bytes(whole_bytes(suspect.last_live_bytes)),
        (full_names ? suspect.label : short_site_label(suspect.label)) + "  [id " + std::to_string(suspect.id) + "]",
    };
}

std::string series_summary(const std::vector<Sample>& series, const SuspectRanking& ranking) {
    const double seconds = series.back().t - series.front().t;
    std::string summary = std::to_string(series.size()) + " samples of pid " + std::to_string(series.front().pid) +
                          " over " + elapsed_clock(seconds, seconds < 60) + "; ";
    if (ranking.process_allocs == 0)
        return summary + "the process allocated nothing, so no site can be judged by its work";
    return summary + "the process made " + count_text(ranking.process_allocs) + " allocations";
}

// Which parts of RSS explained grew, largest growth first, with what they say at the end.
std::string part_growth_note(const MemoryGrowth& growth) {
    if (growth.part_growth.empty()) return "";
    std::vector<std::pair<std::string, double>> parts = growth.part_growth;
    std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string note = " By part of RSS:";
    const char* separator = " ";
    for (const auto& [name, bytes] : parts) {
        note += separator + name + " " + signed_human_bytes(bytes);
        separator = ", ";
    }
    note += ".";
    for (const std::string& finding : growth.last_findings) note += " At the last sample, " + finding;
    return note;
}

// What the allocator's own count says grew, and in which arenas.
std::string allocator_growth_note(const std::optional<AllocatorGrowth>& growth) {
    if (!growth) return "";
    std::string note = " " + growth->allocator + "'s own count, read at " +
                       birth_time_text(growth->first_taken_since_start_ns) + " and at " +
                       birth_time_text(growth->last_taken_since_start_ns) + " since the start: in use " +
                       signed_human_bytes(growth->in_use) + ", free " + signed_human_bytes(growth->free) + " (" +
                       (growth->allocator == "glibc" ? "in whole pages " : "dirty pages ") +
                       signed_human_bytes(growth->returnable) + ")";
    if (growth->arenas.empty()) return note + ".";
    note += "; the arenas whose free memory grew most:";
    const char* separator = " ";
    for (const ArenaGrowth& arena : growth->arenas) {
        note += separator + arena_name(arena.index) + " " + signed_human_bytes(arena.free);
        separator = ", ";
    }
    if (growth->more_arenas_grew > 0) note += " and " + std::to_string(growth->more_arenas_grew) + " more";
    return note + ".";
}

std::string memory_note(const std::vector<Sample>& series) {
    const std::optional<MemoryGrowth> growth = memory_growth(series);
    if (!growth) return "";
    std::string note = "RSS " + signed_human_bytes(growth->rss) + " (anon " + signed_human_bytes(growth->rss_anon) +
                       "; leakwrap's segment " + signed_human_bytes(growth->segment) + " and tables " +
                       signed_human_bytes(growth->leakwrap_private) + ", left out), ";
    if (growth->by_pss)
        note += "PSS " + signed_human_bytes(*growth->pss) +
                " (the processes' RSS count a page they share in each; their PSS adds up), ";
    note += "tracked live bytes " + signed_human_bytes(growth->tracked_live) + ".";
    note += part_growth_note(*growth);
    note += allocator_growth_note(growth->allocator);
    if (!growth->untracked) return note;
    note += std::string(" ") + (growth->by_pss ? "PSS" : "RSS") +
            " grew while the tracked live bytes did not: that growth is not a leak at any "
            "call site, but fragmentation, the allocator keeping freed memory, or memory outside "
            "malloc (mmap, a runtime's own heap, pages a forked worker unshares).";
    if (growth->churning.empty()) return note;
    note += " The size classes that churned most, the likely fragmenters:";
    const char* separator = " ";
    for (const ChurningClass& entry : growth->churning) {
        note += separator + size_class_label(entry.size_class) + " (" + std::to_string(entry.frees) +
                " blocks freed, " + std::to_string(entry.allocs) + " allocated)";
        separator = ", ";
    }
    return note + ".";
}

void write_suspects_text(std::ostream& out, const std::vector<Sample>& series, const SuspectRanking& ranking,
                         std::size_t top, bool full_names) {
    const std::vector<Suspect>& suspects = ranking.suspects;
    out << series_summary(series, ranking) << "; " << suspects.size() << " sites, leaks first\n\n";
    constexpr std::array<int, kSuspectColumns.size() - 1> kWidths = {9, 13, 15, 6, 10, 12, 12};
    for (std::size_t column = 0; column < kWidths.size(); ++column)
        out << std::left << std::setw(kWidths[column]) << kSuspectColumns[column];
    out << kSuspectColumns.back() << '\n';
    for (std::size_t i = 0; i < shown(suspects, top); ++i) {
        const auto cells = suspect_cells(suspects[i], full_names);
        for (std::size_t column = 0; column < kWidths.size(); ++column)
            out << std::setw(kWidths[column]) << cells[column];
        out << cells.back() << '\n';
    }
    if (shown(suspects, top) < suspects.size())
        out << "… " << suspects.size() - shown(suspects, top) << " more (--top 0 shows all)\n";
    if (const std::string note = memory_note(series); !note.empty()) out << '\n' << note << '\n';
    out << '\n' << classification_rules() << '\n';
}

nlohmann::json suspects_json(const std::vector<Sample>& series, const SuspectRanking& ranking, std::size_t top) {
    nlohmann::json entries = nlohmann::json::array();
    for (std::size_t i = 0; i < shown(ranking.suspects, top); ++i) {
        const Suspect& suspect = ranking.suspects[i];
        entries.push_back({
            {"id", suspect.id},
            {"label", suspect.label},
            {"class", trend_name(suspect.trend)},
            {"growth_bytes_per_million_allocs", suspect.growth_per_million_allocs},
            {"recent_growth_bytes_per_million_allocs", suspect.recent_growth_per_million_allocs},
            {"growth_bytes_per_hour", suspect.growth_per_hour},
            {"r_squared", suspect.r_squared},
            {"allocs", suspect.retention.allocs},
            {"frees", suspect.retention.frees},
            {"retained_share", suspect.retention.retained_share ? nlohmann::json(*suspect.retention.retained_share)
                                                                : nlohmann::json(nullptr)},
            {"gives_back", give_back_name(suspect.give_back)},
            {"first_live_bytes", whole_bytes(suspect.first_live_bytes)},
            {"last_live_bytes", whole_bytes(suspect.last_live_bytes)},
        });
    }
    return {
        {"pid", series.front().pid},
        {"samples", series.size()},
        {"seconds", series.back().t - series.front().t},
        {"process_allocs", ranking.process_allocs},
        {"memory", memory_growth_json(memory_growth(series))},
        {"suspects", std::move(entries)},
    };
}

}  // namespace leakwrap

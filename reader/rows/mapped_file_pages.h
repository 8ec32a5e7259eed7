// This process's whole-file mappings of the files libdw opened to symbolize a module, taken out
// of its resident set once the module's first address is resolved (Symbolizer).
#pragma once

#include <string>
#include <vector>

namespace leakwrap {

// Drops from this process's page tables (MADV_DONTNEED) the pages of every mapping of one of
// `paths` that maps the whole file from its start (as libelf maps a file it reads; the loader
// maps a library segment by segment), unless one of its pages is a private copy made on write,
// which would be lost. Read again, a page comes back from the page cache. Does nothing where
// /proc/self/maps or /proc/self/pagemap cannot be read.
void drop_whole_file_mappings(const std::vector<std::string>& paths);

}  // namespace leakwrap

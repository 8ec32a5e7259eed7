// Demangled C++ names run to hundreds of characters (every template argument spelled out, the
// allocators included). Text output shows them short; JSON and the tool formats keep them whole.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace leakwrap {

// Names up to this many characters are shown as they are.
inline constexpr std::size_t kShortNameLength = 60;

// A longer name with its template argument lists elided to "<…>"; if that is still longer than
// max_length, its parameter lists too, "(…)" ("()" stays). Operators (operator<<, operator())
// and "(anonymous namespace)" are kept; a name whose brackets do not balance is left alone.
// std::vector<std::pair<int, std::string>, …>::_M_realloc_insert<…>(iterator, …) reads
// "std::vector<…>::_M_realloc_insert<…>(…)".
std::string short_function_name(std::string_view name, std::size_t max_length = kShortNameLength);

// A site label of time analysis, "function (file:line)" or "function (module)", with its
// function shortened; Ruby labels and "[overflow]" are returned as they are.
std::string short_site_label(std::string_view label, std::size_t max_length = kShortNameLength);

}  // namespace leakwrap

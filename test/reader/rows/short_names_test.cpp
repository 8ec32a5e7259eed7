// Short C++ names for text output: what is elided, what never is, and when nothing is.
#include "short_names.h"

#include <gtest/gtest.h>

namespace leakwrap {
namespace {

TEST(ShortNames, ShortNamesStayAsTheyAre) {
    EXPECT_EQ(short_function_name("leak_steadily()"), "leak_steadily()");
    EXPECT_EQ(short_function_name("std::vector<int>::push_back(int const&)"),
              "std::vector<int>::push_back(int const&)");
}

TEST(ShortNames, TemplateArgumentsGoFirstAndParametersOnlyIfStillTooLong) {
    const std::string vector =
        "std::vector<std::pair<int, std::__cxx11::basic_string<char>>, "
        "std::allocator<std::pair<int, std::__cxx11::basic_string<char>>>>";
    EXPECT_EQ(short_function_name(vector + "::push_back(int)"), "std::vector<…>::push_back(int)");
    EXPECT_EQ(short_function_name(vector + "::_M_realloc_insert<int>(" + vector + "::iterator, int&&)"),
              "std::vector<…>::_M_realloc_insert<…>(…)");
    // A limit of its own: the template-less form fits, so the parameters stay.
    EXPECT_EQ(short_function_name("ns::Registry<std::map<int, int>>::remember(int, long)", 40),
              "ns::Registry<…>::remember(int, long)");
    EXPECT_EQ(short_function_name("ns::Registry<std::map<int, int>>::remember(int, long)", 20),
              "ns::Registry<…>::remember(…)");
}

TEST(ShortNames, OperatorsAnonymousNamespacesAndEmptyParametersAreKept) {
    const std::string padding(60, 'x');
    EXPECT_EQ(short_function_name("std::ostream& operator<< <char>(std::ostream&, " + padding + ")", 30),
              "std::ostream& operator<< <…>(…)");
    EXPECT_EQ(short_function_name("(anonymous namespace)::Pool<" + padding + ">::operator()()", 30),
              "(anonymous namespace)::Pool<…>::operator()()");
    EXPECT_EQ(short_function_name("a::b<" + padding + ">::operator->()", 20), "a::b<…>::operator->()");
    EXPECT_EQ(short_function_name("a::b<" + padding + ">::operator<(a::b<int> const&)", 20), "a::b<…>::operator<(…)");
}

TEST(ShortNames, UnbalancedBracketsLeaveTheNameAlone) {
    const std::string odd = "weird<" + std::string(80, 'y') + "(int";
    EXPECT_EQ(short_function_name(odd), odd);
}

TEST(ShortNames, SiteLabelsShortenOnlyTheirFunction) {
    const std::string function = "ns::Map<" + std::string(70, 'k') + ">::insert(int)";
    EXPECT_EQ(short_site_label(function + " (map.h:12)"), "ns::Map<…>::insert(int) (map.h:12)");
    EXPECT_EQ(short_site_label(function + " (libfoo.so)"), "ns::Map<…>::insert(int) (libfoo.so)");
    EXPECT_EQ(short_site_label(function), "ns::Map<…>::insert(int)");
    EXPECT_EQ(short_site_label("ruby app/models/" + std::string(80, 'r') + ".rb:3"),
              "ruby app/models/" + std::string(80, 'r') + ".rb:3");
    EXPECT_EQ(short_site_label("[overflow]"), "[overflow]");
}

}  // namespace
}  // namespace leakwrap

// The examples leak what their READMEs promise, and the report puts that leak on top.
#include <gtest/gtest.h>

#include "harness.h"

namespace leakwrap::e2e {
namespace {

struct ExampleLeak {
    const char* program;
    const char* count;
    const char* leaking_function;  // as a fragment: C++ names may carry their parameters
    Counters top_site;
};

void expect_top_site(const ExampleLeak& example) {
    Target target({paths::example(example.program), example.count, "--wait-enter"}, Environment::profiled());
    target.wait_ready(" ready");
    const nlohmann::json report = report_json(target.pid(), {"--sort", "live"});
    ASSERT_FALSE(report.at("sites").empty());
    const nlohmann::json top_only = {{"sites", {report.at("sites")[0]}}};
    const SiteMatch top = sites_calling_function_containing(top_only, example.leaking_function, 3);
    EXPECT_EQ(top.sites, 1u) << "top site: " << report.at("sites")[0].dump(2);
    EXPECT_EQ(top.counters, example.top_site);
    EXPECT_EQ(target.release_and_wait(), 0);
}

TEST(Examples, LeakyCacheLeaksTheBodiesOfRejectedRequests) {
    // Every request's body comes from read_request_body; only the 900 accepted ones are freed.
    expect_top_site({"leaky_cache", "1000", "read_request_body", {100, 100 * 512, 1000, 900}});
}

TEST(Examples, LeakySessionsLeaksTheSessionsOfRefusedLogins) {
    // open_session allocates all 400 sessions at that one `new`; the 350 authorized ones are freed.
    expect_top_site({"leaky_sessions", "400", "open_session", {50, 50 * 4096, 400, 350}});
}

}  // namespace
}  // namespace leakwrap::e2e

// A real Ruby job behaves exactly the same under the preload: same stdout, same exit code.
#include <gtest/gtest.h>

#include "ruby_support.h"

namespace leakwrap::e2e::ruby {
namespace {

TEST(RubyJob, ErbAndJsonOverGeneratedOrdersPrintTheSameUnderThePreload) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    const std::vector<std::string> job{paths::ruby, paths::source("test/ruby/programs/erb_json_job.rb")};

    const Completed bare = run(job, Environment::bare());
    ASSERT_EQ(bare.exit_code, 0) << "the job itself fails:\n" << bare.err;
    ASSERT_NE(bare.out.find("sha256 of all pages: "), std::string::npos) << bare.out;
    const Completed profiled = run(job, Environment::profiled());
    EXPECT_EQ(profiled.exit_code, bare.exit_code) << profiled.err;
    EXPECT_EQ(profiled.out, bare.out);
}

}  // namespace
}  // namespace leakwrap::e2e::ruby

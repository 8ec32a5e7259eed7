// examples/rails: a Rails 6.1 app in puma whose controller leaks the 384-byte state of the C
// extension TableOfContents once per request, and leakwrap finds exactly that among the more
// than 100000 call sites that booting Rails makes.
#include <gtest/gtest.h>

#include <fstream>

#include "ruby_support.h"

namespace leakwrap::e2e::ruby {
namespace {

constexpr long long kRequests = 200;
constexpr long long kStateSize = 384;  // sizeof(struct toc_state) in table_of_contents.c
constexpr const char* kExtension = "/table_of_contents.so";

void require_rails_and_extension() {
    ASSERT_FALSE(paths::puma.empty()) << "puma is not installed (scripts/setup.sh installs it)";
    ASSERT_TRUE(std::ifstream(paths::extension_dir + kExtension).good())
        << "table_of_contents.so was not built: install ruby-dev (scripts/setup.sh) and reconfigure";
    const char* gems = "require 'action_controller/railtie'; require 'redcarpet'; require 'nokogiri'";
    const Completed loaded = run({paths::ruby, "-e", gems}, Environment::bare());
    ASSERT_EQ(loaded.exit_code, 0) << "Rails, redcarpet or nokogiri is missing (scripts/setup.sh installs them)\n"
                                   << loaded.err;
}

TEST(RubyRails, EveryRequestLeaksOneTableOfContentsStateAtTheControllerLine) {
    LEAKWRAP_SKIP_WITHOUT_RUBY();
    ASSERT_NO_FATAL_FAILURE(require_rails_and_extension());
    const std::string controller = paths::source("examples/rails/app/controllers/notes_controller.rb");
    const int leak_line = line_containing(controller, "TableOfContents.render(");

    Puma puma({"-C", paths::source("examples/rails/config/puma.rb"), paths::source("examples/rails/config.ru")});
    send_requests(puma.url(), kRequests);
    const nlohmann::json report = report_json(puma.pid());

    // One state per request, none freed, each made on behalf of the controller's line.
    const std::vector<nlohmann::json> states = rows_allocated_by(report, kExtension, "toc_state_new");
    EXPECT_EQ(sum_of(states), (Counters{kRequests, kRequests * kStateSize, kRequests, 0}));
    for (const auto& row : states) EXPECT_TRUE(at_ruby_line(row, controller, leak_line)) << row.dump(2);

    EXPECT_EQ(puma.stop(), 0);
    EXPECT_FALSE(segment_exists(puma.pid())) << "a clean exit removes the segment";
}

}  // namespace
}  // namespace leakwrap::e2e::ruby

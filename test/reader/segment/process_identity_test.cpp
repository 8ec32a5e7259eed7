#include "process_identity.h"
#include "segment_builder.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

namespace leakwrap {
namespace {

Snapshot snapshot_of_this_process() {
    Snapshot snapshot;
    snapshot.pid = ::getpid();
    snapshot.start_time_ticks = process_start_time_ticks(::getpid()).value();
    snapshot.boot_id = current_boot_id();
    return snapshot;
}

TEST(ProcessIdentity, RecognizesThisProcessAsAlive) {
    EXPECT_EQ(owner_state(snapshot_of_this_process()), OwnerState::alive);
}

TEST(ProcessIdentity, CallsAReusedPidStale) {
    auto snapshot = snapshot_of_this_process();
    snapshot.start_time_ticks += 1;
    EXPECT_EQ(owner_state(snapshot), OwnerState::stale);
}

TEST(ProcessIdentity, CallsASegmentFromAnotherBootStale) {
    auto snapshot = snapshot_of_this_process();
    snapshot.boot_id = "00000000-0000-0000-0000-000000000000";
    EXPECT_EQ(owner_state(snapshot), OwnerState::stale);
}

TEST(ProcessIdentity, CallsAMissingProcessDead) {
    auto snapshot = snapshot_of_this_process();
    snapshot.pid = testing::kAbsentPid;
    EXPECT_EQ(owner_state(snapshot), OwnerState::dead);
}

TEST(ProcessIdentity, CallsAZombieDead) {
    const pid_t child = ::fork();
    if (child == 0) ::_exit(0);
    ASSERT_GT(child, 0);
    // Not reaped yet, so the pid still answers kill(pid, 0).
    Snapshot snapshot;
    snapshot.pid = child;
    snapshot.boot_id = current_boot_id();
    for (int attempt = 0; attempt < 1000 && owner_state(snapshot) != OwnerState::dead; ++attempt) {
        snapshot.start_time_ticks = process_start_time_ticks(child).value_or(0);
        ::usleep(1000);
    }
    EXPECT_TRUE(process_exists(child));
    EXPECT_EQ(owner_state(snapshot), OwnerState::dead);
    ::waitpid(child, nullptr, 0);
}

TEST(ProcessIdentity, TrustsTheExitMarkOverARunningPid) {
    auto snapshot = snapshot_of_this_process();
    snapshot.process_state = layout::kProcessExited;
    EXPECT_EQ(owner_state(snapshot), OwnerState::exited);
}

TEST(ProcessIdentity, NeverTreatsGroupPidsAsProcesses) {
    EXPECT_FALSE(process_exists(0));
    EXPECT_FALSE(process_exists(-1));
    EXPECT_TRUE(process_exists(1));
    EXPECT_FALSE(process_start_time_ticks(testing::kAbsentPid).has_value());
}

TEST(ProcessIdentity, ReadsTheBootIdWithoutItsNewline) {
    const auto boot_id = current_boot_id();
    EXPECT_EQ(boot_id.size(), 36u);
    EXPECT_EQ(boot_id.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace leakwrap

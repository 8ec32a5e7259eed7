// What lifecycle.cpp defines, for test programs that link the preload's recording objects
// (leakwrap_recording_objects) without it: its constructor would start the preload's own
// tracking in the test process, and it interposes _exit. Tracking is on, as in the preload once
// started; each test makes its own segment.
#include "lifecycle.h"

namespace leakwrap {
constinit ModePage g_mode_page{kTracking};
constinit uint64_t g_tag_secret = 0x5bd1e9955bd1e995ull;
constinit Config g_config{};
}  // namespace leakwrap

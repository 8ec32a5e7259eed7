#include "thread_state.h"

namespace leakwrap {

__thread ThreadState t_thread = {};

}  // namespace leakwrap

// Loads torture_plugin from the path it is given and keeps the texts it hands out, so that live
// blocks are allocated in the plugin's code; then waits for the release. The test may replace
// the plugin's file meanwhile: the process keeps its mapping.
//
//   plugin_leak <path of libtorture_plugin.so>
#include <dlfcn.h>

#include <cstdio>

#include "ground_truth.h"
#include "handshake.h"

namespace {

char* volatile g_texts[ground_truth::plugin_leak::kTexts];  // never freed: the leak

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <libtorture_plugin.so>\n", argv[0]);
        return 2;
    }
    void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (plugin == nullptr) fail(dlerror());
    auto* describe = reinterpret_cast<char* (*)(unsigned)>(dlsym(plugin, "plugin_describe"));
    if (describe == nullptr) fail("plugin_describe missing");
    for (unsigned number = 0; number < ground_truth::plugin_leak::kTexts; ++number) g_texts[number] = describe(number);
    announce_ready_and_wait_for_release();
    return 0;
}

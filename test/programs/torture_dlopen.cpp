// Loads torture_plugin and calls into it, then unloads it, over and over: `loop` with ordinary
// dlopen/dlclose, `deepbind` with one RTLD_DEEPBIND load whose blocks are freed here. Prints a
// checksum of everything the plugin computed, so a run under the preload must print the same.
//
//   torture_dlopen <path of libtorture_plugin.so> loop|deepbind
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "handshake.h"

namespace {

constexpr unsigned kLoads = 300;
constexpr unsigned kCallsPerLoad = 20;

struct Plugin {
    void* handle;
    unsigned long (*churn)(unsigned);
    char* (*describe)(unsigned);
};

Plugin load(const char* path, int flags) {
    void* handle = dlopen(path, flags);
    if (handle == nullptr) fail(dlerror());
    Plugin plugin{handle, reinterpret_cast<unsigned long (*)(unsigned)>(dlsym(handle, "plugin_churn")),
                  reinterpret_cast<char* (*)(unsigned)>(dlsym(handle, "plugin_describe"))};
    if (plugin.churn == nullptr || plugin.describe == nullptr) fail("plugin symbols missing");
    return plugin;
}

void unload(const Plugin& plugin) {
    if (dlclose(plugin.handle) != 0) fail(dlerror());
}

// Frees the caller-owned text here, with whatever free this program is bound to.
unsigned long call(const Plugin& plugin, unsigned number) {
    char* text = plugin.describe(number);
    const unsigned long checksum = plugin.churn(number % 97) + std::strlen(text);
    std::free(text);
    return checksum;
}

}  // namespace

int main(int argc, char** argv) {
    const bool deepbind = argc == 3 && std::strcmp(argv[2], "deepbind") == 0;
    if (argc != 3 || (!deepbind && std::strcmp(argv[2], "loop") != 0)) {
        std::fprintf(stderr, "usage: %s <plugin.so> loop|deepbind\n", argv[0]);
        return 2;
    }
    unsigned long checksum = 0;
    if (deepbind) {
        const Plugin plugin = load(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
        for (unsigned number = 0; number < kLoads * kCallsPerLoad; ++number) checksum += call(plugin, number);
        unload(plugin);
    } else {
        for (unsigned loaded = 0; loaded < kLoads; ++loaded) {
            const Plugin plugin = load(argv[1], RTLD_NOW | RTLD_LOCAL);
            for (unsigned call_number = 0; call_number < kCallsPerLoad; ++call_number)
                checksum += call(plugin, loaded * kCallsPerLoad + call_number);
            unload(plugin);
        }
    }
    std::printf("%s: %u calls, checksum %lu\n", argv[2], kLoads * kCallsPerLoad, checksum);
    return 0;
}

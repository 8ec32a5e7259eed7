// A private copy of torture_plugin, loaded as a module of its own: each copy's code is new to
// the process (its frames unknown to the preload until first called).
#pragma once

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <vector>

#include "handshake.h"

using PluginChurn = unsigned long (*)(unsigned);

// Copies the plugin to `path`, loads the copy and returns its plugin_churn.
inline PluginChurn load_plugin_copy(const std::string& plugin, const std::string& path) {
    std::error_code error;
    if (!std::filesystem::copy_file(plugin, path, std::filesystem::copy_options::overwrite_existing, error))
        fail("cannot copy the plugin");
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) fail(dlerror());
    const auto churn = reinterpret_cast<PluginChurn>(dlsym(handle, "plugin_churn"));
    if (churn == nullptr) fail("plugin_churn missing");
    return churn;
}

// `count` copies, directory/plugin_0.so and on: their plugin_churn functions, in order.
inline std::vector<PluginChurn> load_plugin_copies(const std::string& plugin, const std::string& directory, int count) {
    std::vector<PluginChurn> churns;
    for (int copy = 0; copy < count; ++copy)
        churns.push_back(load_plugin_copy(plugin, directory + "/plugin_" + std::to_string(copy) + ".so"));
    return churns;
}

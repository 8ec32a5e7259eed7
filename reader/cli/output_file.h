// A file a command writes its output to (-o, watch --out, plot's files), opened as open(2) with
// O_CREAT | O_TRUNC would, but never through another user's planted link in a sticky,
// world-writable directory such as /tmp: a link there is followed only if this user or the
// directory's owner owns it, the rule the kernel's fs.protected_symlinks applies, kept where
// that sysctl is off. A name that is no link yet is created without following one planted
// meanwhile.
#pragma once

#include <ext/stdio_filebuf.h>

#include <memory>
#include <ostream>
#include <string>

namespace leakwrap {

class OutputFile {
public:
    // Throws std::runtime_error saying why the file cannot be opened.
    explicit OutputFile(const std::string& path);
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    std::ostream& stream() { return stream_; }
    // Flushes and closes; throws std::runtime_error if what was written did not all get there.
    void close();

private:
    std::string path_;
    __gnu_cxx::stdio_filebuf<char> buffer_;
    std::ostream stream_;
};

}  // namespace leakwrap

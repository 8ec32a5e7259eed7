// Gzip written to a stream as it comes: pprof profiles, and serve's answers to clients that
// accept gzip. zlib's output depends on the bytes and the level only, not on how they are handed
// in, so writing in parts gives what compressing the whole at once would.
#pragma once

#include <zlib.h>

#include <ostream>
#include <string_view>

namespace leakwrap {

class GzipWriter {
public:
    // kSmallest for files kept or fetched once (profiles), kFast for answers made again and again.
    static constexpr int kSmallest = Z_BEST_COMPRESSION;
    static constexpr int kFast = Z_BEST_SPEED;

    GzipWriter(std::ostream& out, int level);
    GzipWriter(const GzipWriter&) = delete;
    GzipWriter& operator=(const GzipWriter&) = delete;
    ~GzipWriter();

    void write(std::string_view data);
    // Writes the trailer; nothing may be written after.
    void finish();

private:
    int deflate_all(std::string_view data, int flush);

    std::ostream& out_;
    z_stream stream_{};
    char buffer_[1 << 16];
};

}  // namespace leakwrap

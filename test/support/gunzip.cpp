#include "gunzip.h"

#include <zlib.h>

#include <stdexcept>

namespace leakwrap {

std::string gunzip(const std::string& compressed) {
    z_stream stream{};
    // 16 + MAX_WBITS: a gzip header and trailer around the deflate stream.
    if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error("inflateInit2 failed");
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
    stream.avail_in = static_cast<uInt>(compressed.size());
    std::string plain;
    int status = Z_OK;
    while (status == Z_OK) {
        char chunk[1 << 16];
        stream.next_out = reinterpret_cast<Bytef*>(chunk);
        stream.avail_out = sizeof(chunk);
        status = inflate(&stream, Z_NO_FLUSH);
        plain.append(chunk, sizeof(chunk) - stream.avail_out);
    }
    inflateEnd(&stream);
    if (status != Z_STREAM_END) throw std::runtime_error("not one whole gzip stream");
    return plain;
}

}  // namespace leakwrap

#include "gzip_writer.h"

#include <stdexcept>

namespace leakwrap {

GzipWriter::GzipWriter(std::ostream& out, int level) : out_(out) {
    // 15 bits of window, +16: a gzip header and trailer instead of zlib's.
    if (deflateInit2(&stream_, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("cannot initialize zlib");
}

GzipWriter::~GzipWriter() { deflateEnd(&stream_); }

void GzipWriter::write(std::string_view data) { deflate_all(data, Z_NO_FLUSH); }

void GzipWriter::finish() {
    if (deflate_all({}, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("cannot finish the gzip stream");
}

int GzipWriter::deflate_all(std::string_view data, int flush) {
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream_.avail_in = static_cast<uInt>(data.size());
    int status = Z_OK;
    do {
        stream_.next_out = reinterpret_cast<Bytef*>(buffer_);
        stream_.avail_out = sizeof(buffer_);
        status = deflate(&stream_, flush);
        if (status == Z_STREAM_ERROR) throw std::runtime_error("cannot gzip");
        out_.write(buffer_, static_cast<std::streamsize>(sizeof(buffer_) - stream_.avail_out));
    } while (stream_.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
    return status;
}

}  // namespace leakwrap

#pragma once
// The load generator's HTTP/1.1 response reader: incremental (bytes arrive as the socket gives
// them), allocation-free on the hot path, and only as much of HTTP as framing needs.

#include <cstddef>
#include <cstring>
#include <string>

namespace wopbridge::bench {

inline bool iequals_prefix(const char* p, const char* end, const char* name) {
    for (; *name; ++p, ++name) {
        if (p == end || (*p | 0x20) != *name) {
            return false;
        }
    }
    return true;
}

inline bool icontains(const char* p, const char* end, const char* word) {
    const std::size_t n = std::strlen(word);
    for (; p + n <= end; ++p) {
        if (iequals_prefix(p, p + n, word)) {
            return true;
        }
    }
    return false;
}

// Reads one HTTP/1.1 response: status line, the framing headers, the body (counted, and the
// first 1 KiB kept when asked). Everything else is skipped.
class response_parser {
  public:
    int status = 0;
    bool close = false; // Connection: close, HTTP/1.0, or a body delimited by the close
    bool complete = false;
    bool until_close = false; // no length: the body ends when the server closes
    std::string body;         // first 1 KiB, when keep_body

    void reset(bool keep_body) {
        status = 0;
        close = false;
        complete = false;
        until_close = false;
        keep_body_ = keep_body;
        body.clear();
        head_.clear();
        state_ = st::head;
    }

    // Consumes bytes; returns false on a response it cannot read.
    bool feed(const char* p, std::size_t n) {
        const char* end = p + n;
        while (p < end && !complete) {
            switch (state_) {
            case st::head: {
                std::size_t from = head_.size() >= 3 ? head_.size() - 3 : 0;
                head_.append(p, end);
                auto at = head_.find("\r\n\r\n", from);
                if (at == std::string::npos) {
                    if (head_.size() > 65536) {
                        return false;
                    }
                    return true;
                }
                std::size_t used = at + 4 - (head_.size() - static_cast<std::size_t>(end - p));
                p += used;
                if (!parse_head(at + 2)) {
                    return false;
                }
                break;
            }
            case st::length: {
                std::size_t take =
                    std::min<std::size_t>(remaining_, static_cast<std::size_t>(end - p));
                keep(p, take);
                p += take;
                remaining_ -= take;
                if (remaining_ == 0) {
                    complete = true;
                }
                break;
            }
            case st::chunk_size: {
                char c = *p++;
                if (c == '\n') {
                    if (!size_digits_) {
                        return false;
                    }
                    state_ = remaining_ == 0 ? st::trailer : st::chunk_data;
                    line_len_ = 0;
                } else if (c == ';') {
                    in_ext_ = true;
                } else if (c != '\r' && !in_ext_) {
                    int v = (c >= '0' && c <= '9')   ? c - '0'
                            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                     : -1;
                    if (v < 0) {
                        return false;
                    }
                    remaining_ = remaining_ * 16 + static_cast<std::size_t>(v);
                    size_digits_ = true;
                }
                break;
            }
            case st::chunk_data: {
                std::size_t take =
                    std::min<std::size_t>(remaining_, static_cast<std::size_t>(end - p));
                keep(p, take);
                p += take;
                remaining_ -= take;
                if (remaining_ == 0) {
                    state_ = st::chunk_crlf;
                }
                break;
            }
            case st::chunk_crlf:
                if (*p++ == '\n') {
                    start_chunk();
                }
                break;
            case st::trailer: {
                char c = *p++;
                if (c == '\n') {
                    if (line_len_ == 0) {
                        complete = true;
                    }
                    line_len_ = 0;
                } else if (c != '\r') {
                    ++line_len_;
                }
                break;
            }
            case st::to_close:
                keep(p, static_cast<std::size_t>(end - p));
                p = end;
                break;
            }
        }
        return true;
    }

    // The server closed the connection: completes a body delimited by the close.
    bool on_eof() {
        if (state_ == st::to_close) {
            complete = true;
        }
        return complete;
    }

  private:
    enum class st { head, length, chunk_size, chunk_data, chunk_crlf, trailer, to_close };

    void keep(const char* p, std::size_t n) {
        if (keep_body_ && body.size() < 1024) {
            body.append(p, std::min<std::size_t>(n, 1024 - body.size()));
        }
    }

    void start_chunk() {
        state_ = st::chunk_size;
        remaining_ = 0;
        size_digits_ = false;
        in_ext_ = false;
    }

    // head_[0, head_end) is the status line and the header lines, each ending in CRLF.
    bool parse_head(std::size_t head_end) {
        const char* h = head_.data();
        const char* e = h + head_end;
        if (head_end < 12 || std::memcmp(h, "HTTP/1.", 7) != 0) {
            return false;
        }
        bool http10 = h[7] == '0';
        status = std::atoi(h + 9);
        long long length = -1;
        bool chunked = false;
        const char* line = static_cast<const char*>(std::memchr(h, '\n', head_end)) + 1;
        while (line < e) {
            const char* nl = static_cast<const char*>(
                std::memchr(line, '\n', static_cast<std::size_t>(e - line)));
            if (!nl) {
                break;
            }
            if (iequals_prefix(line, nl, "content-length:")) {
                length = std::atoll(line + 15);
            } else if (iequals_prefix(line, nl, "transfer-encoding:")) {
                chunked = icontains(line + 18, nl, "chunked");
            } else if (iequals_prefix(line, nl, "connection:")) {
                if (icontains(line + 11, nl, "close")) {
                    close = true;
                } else if (icontains(line + 11, nl, "keep-alive")) {
                    http10 = false;
                }
            }
            line = nl + 1;
        }
        close = close || http10;
        if (status >= 100 && status < 200) { // an interim response: the real one follows
            head_.clear();
            status = 0;
            close = false;
            state_ = st::head;
            return true;
        }
        if (status == 204 || status == 304 || length == 0) {
            complete = true;
        } else if (chunked) {
            start_chunk();
        } else if (length > 0) {
            remaining_ = static_cast<std::size_t>(length);
            state_ = st::length;
        } else {
            until_close = true;
            close = true;
            state_ = st::to_close;
        }
        head_.clear();
        return true;
    }

    st state_ = st::head;
    std::string head_;
    std::size_t remaining_ = 0;
    std::size_t line_len_ = 0;
    bool size_digits_ = false;
    bool in_ext_ = false;
    bool keep_body_ = false;
};

} // namespace wopbridge::bench

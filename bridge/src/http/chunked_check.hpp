#pragma once
// A strict reading of a chunked body's framing (RFC 9112 §7.1), run over the bytes as they
// arrive, beside Beast's parser. Beast waits for more on some broken framings (a bare-LF last
// chunk waits for a CRLF CRLF that never comes) and the client then sees a timeout, not a
// refusal; this names the error as soon as the byte that makes it is read.
//
// Accepted: chunk-size 1*16 HEXDIG; extensions `[BWS];name[=token|quoted-string]` without CR or LF
// (a quoted CRLF is a broken line); every line ending in CRLF; chunk data followed by CRLF; a
// trailer of `name: value` lines without the framing fields (Content-Length, Transfer-Encoding,
// RFC 9110 §6.5.1), ended by an empty line.

#include <cstddef>
#include <string>
#include <string_view>

namespace wopbridge::http {

class chunked_check {
  public:
    enum class verdict { more, complete, malformed };

    // Reads the next bytes of the body. After `complete`, the rest is another request's: not read.
    verdict feed(std::string_view bytes);
    verdict state() const noexcept { return verdict_; }

  private:
    enum class at { size, size_ws, extension, quoted, quoted_escape, size_lf, data, data_cr, data_lf,
                    trailer_line, trailer_lf, done };
    bool end_trailer_line();

    verdict verdict_ = verdict::more;
    at at_ = at::size;
    int digits_ = 0;
    unsigned long long remaining_ = 0;
    std::string line_;             // the trailer line being read (bounded)
};

} // namespace wopbridge::http

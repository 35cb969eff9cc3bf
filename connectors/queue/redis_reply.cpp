#include "queue/redis_reply.hpp"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <charconv>

namespace wopbridge::queue {

namespace {

// hiredis' default reply builders (a static table inside libhiredis), as every reader starts.
const ::redisReplyObjectFunctions& default_functions() {
    static const ::redisReplyObjectFunctions* const fns = [] {
        ::redisReader* r = ::redisReaderCreate();
        const ::redisReplyObjectFunctions* f = r != nullptr ? r->fn : nullptr;
        if (r != nullptr) {
            ::redisReaderFree(r);
        }
        return f;
    }();
    return *fns;
}

void* bounded_array(const ::redisReadTask* task, int elements) {
    if (elements < 0 || static_cast<std::size_t>(elements) > reply_limits::max_array_elements) {
        return nullptr; // hiredis: "Out of memory", the reader is unusable from here
    }
    return default_functions().createArray(task, elements);
}

::redisReplyObjectFunctions* bounded_functions() {
    static ::redisReplyObjectFunctions fns = [] {
        ::redisReplyObjectFunctions f = default_functions();
        f.createArray = bounded_array;
        return f;
    }();
    return &fns;
}

} // namespace

std::string reader_error(const ::redisReader& reader) {
    if (reader.err == REDIS_ERR_OOM) {
        return "out of memory, or an array of more than " +
               std::to_string(reply_limits::max_array_elements) + " elements";
    }
    return reader.errstr;
}

void bound_reader(::redisReader& reader) noexcept {
    if (reader.fn == &default_functions()) {
        reader.fn = bounded_functions();
    }
}

bool pending_within_limits(const ::redisReader& reader, std::string& error) {
    if (reader.buf == nullptr) {
        return true;
    }
    const std::string_view rest(reader.buf + reader.pos, reader.len - reader.pos);
    const std::size_t eol = rest.substr(0, reply_limits::max_line_bytes).find("\r\n");
    if (eol == std::string_view::npos) {
        if (rest.size() > reply_limits::max_line_bytes) {
            error = "a reply line longer than " + std::to_string(reply_limits::max_line_bytes) +
                    " bytes";
            return false;
        }
        return true; // the line is still arriving
    }
    // hiredis has taken the type byte of the reply in progress (rstack[ridx].type) but consumes a
    // bulk string's length line only with its body: check the declared length now, before the
    // body is buffered.
    constexpr int depth = sizeof reader.rstack / sizeof reader.rstack[0];
    if (reader.ridx >= 0 && reader.ridx < depth &&
        reader.rstack[reader.ridx].type == REDIS_REPLY_STRING) {
        long long n = 0;
        const auto [p, ec] = std::from_chars(rest.data(), rest.data() + eol, n);
        if (ec == std::errc{} && p == rest.data() + eol && n > 0 &&
            static_cast<unsigned long long>(n) > reply_limits::max_bulk_bytes) {
            error = "a bulk string of " + std::to_string(n) + " bytes";
            return false;
        }
    }
    return true;
}

std::string_view resp_value::error_code() const noexcept {
    if (type != kind::error) {
        return {};
    }
    const std::string_view t(text);
    return t.substr(0, t.find(' '));
}

resp_value value_of(const ::redisReply& reply) {
    resp_value v;
    const auto text = [&] {
        return reply.str != nullptr ? std::string(reply.str, reply.len) : std::string();
    };
    switch (reply.type) {
    case REDIS_REPLY_STATUS:
        v.type = resp_value::kind::simple;
        v.text = text();
        break;
    case REDIS_REPLY_ERROR:
        v.type = resp_value::kind::error;
        v.text = text();
        break;
    case REDIS_REPLY_STRING:
        v.type = resp_value::kind::bulk;
        v.text = text();
        break;
    case REDIS_REPLY_INTEGER:
        v.type = resp_value::kind::integer;
        v.integer = reply.integer;
        break;
    case REDIS_REPLY_ARRAY:
        v.type = resp_value::kind::array;
        v.elements.reserve(reply.elements);
        for (std::size_t i = 0; i < reply.elements; ++i) {
            if (reply.element[i] != nullptr) {
                v.elements.push_back(value_of(*reply.element[i]));
            } else {
                v.elements.emplace_back();
            }
        }
        break;
    default: // REDIS_REPLY_NIL: a null bulk string or a null array
        v.type = resp_value::kind::null;
        break;
    }
    return v;
}

reply_reader::reply_reader() : reader_(::redisReaderCreate()) {
    if (reader_ != nullptr) {
        bound_reader(*reader_);
    }
}

reply_reader::~reply_reader() {
    if (reader_ != nullptr) {
        ::redisReaderFree(reader_);
    }
}

bool reply_reader::feed(std::string_view bytes) {
    return reader_ != nullptr &&
           ::redisReaderFeed(reader_, bytes.data(), bytes.size()) == REDIS_OK;
}

std::size_t reply_reader::buffered() const noexcept {
    return reader_ != nullptr ? reader_->len - reader_->pos : 0;
}

reply_reader::state reply_reader::next(resp_value& out, std::string& error) {
    if (reader_ == nullptr) {
        error = "out of memory";
        return state::error;
    }
    void* reply = nullptr;
    if (::redisReaderGetReply(reader_, &reply) != REDIS_OK) {
        error = reader_error(*reader_);
        return state::error;
    }
    if (reply == nullptr) {
        return pending_within_limits(*reader_, error) ? state::incomplete : state::error;
    }
    out = value_of(*static_cast<const ::redisReply*>(reply));
    ::freeReplyObject(reply);
    return state::value;
}

} // namespace wopbridge::queue

#include "rabbitmq/amqp_link.hpp"

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>

#include <sys/time.h>

namespace wopbridge::rabbitmq {

namespace {

constexpr amqp_channel_t channel = 1;

timeval to_timeval(std::int64_t ms) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
    return tv;
}

std::string bytes(amqp_bytes_t b) {
    return b.len == 0 || b.bytes == nullptr ? std::string()
                                            : std::string(static_cast<const char*>(b.bytes), b.len);
}

// A reply in one line: the broker's code and text, or the client's status text.
std::string reply_text(const amqp_rpc_reply_t& r) {
    switch (r.reply_type) {
    case AMQP_RESPONSE_NORMAL:
        return "ok";
    case AMQP_RESPONSE_NONE:
        return "no reply";
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
        return amqp_error_string2(r.library_error);
    case AMQP_RESPONSE_SERVER_EXCEPTION:
        if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD && r.reply.decoded != nullptr) {
            const auto* m = static_cast<const amqp_connection_close_t*>(r.reply.decoded);
            return "connection closed by the broker: " + std::to_string(m->reply_code) + " " +
                   bytes(m->reply_text);
        }
        if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD && r.reply.decoded != nullptr) {
            const auto* m = static_cast<const amqp_channel_close_t*>(r.reply.decoded);
            return "channel closed by the broker: " + std::to_string(m->reply_code) + " " +
                   bytes(m->reply_text);
        }
        return "broker error (method " + std::to_string(r.reply.id) + ")";
    }
    return "unknown reply";
}

amqp_socket_t* make_socket(amqp_connection_state_t conn, const connector_settings& s,
                           std::string& error) {
    if (!s.tls) {
        amqp_socket_t* sock = amqp_tcp_socket_new(conn);
        if (sock == nullptr) {
            error = "cannot create a TCP socket";
        }
        return sock;
    }
    amqp_socket_t* sock = amqp_ssl_socket_new(conn);
    if (sock == nullptr) {
        error = "cannot create a TLS socket";
        return nullptr;
    }
    amqp_ssl_socket_set_verify_peer(sock, s.tls_verify_peer ? 1 : 0);
    amqp_ssl_socket_set_verify_hostname(sock, s.tls_verify_hostname ? 1 : 0);
    if (!s.tls_ca.empty() && amqp_ssl_socket_set_cacert(sock, s.tls_ca.c_str()) != AMQP_STATUS_OK) {
        error = "tlsCa: cannot load the CA file";
        return nullptr;
    }
    if (!s.tls_cert.empty() &&
        amqp_ssl_socket_set_key(sock, s.tls_cert.c_str(), s.tls_key.c_str()) != AMQP_STATUS_OK) {
        error = "tlsCert/tlsKey: cannot load the client certificate or key";
        return nullptr;
    }
    return sock;
}

} // namespace

bool check_tls_files(const connector_settings& s, std::string& error) {
    if (!s.tls) {
        return true;
    }
    amqp_connection_state_t conn = amqp_new_connection();
    if (conn == nullptr) {
        error = "settings: cannot create a client connection";
        return false;
    }
    std::string why;
    const bool ok = make_socket(conn, s, why) != nullptr;
    amqp_destroy_connection(conn);
    if (!ok) {
        error = "settings: " + why;
    }
    return ok;
}

std::unique_ptr<amqp_link> amqp_link::open(const connector_settings& s,
                                           const subscription_settings& sub, std::string& error,
                                           open_failure& why) {
    why = open_failure::unreachable;
    amqp_connection_state_t conn = amqp_new_connection();
    if (conn == nullptr) {
        error = "cannot create a client connection";
        return nullptr;
    }
    std::unique_ptr<amqp_link> link(new amqp_link(conn));
    amqp_socket_t* sock = make_socket(conn, s, error);
    if (sock == nullptr) {
        why = open_failure::refused;
        return nullptr;
    }
    timeval connect_tv = to_timeval(s.connect_timeout_ms);
    const int st = amqp_socket_open_noblock(sock, s.host.c_str(), s.port, &connect_tv);
    if (st != AMQP_STATUS_OK) {
        error = std::string("connect: ") + amqp_error_string2(st);
        return nullptr;
    }
    // Bounds the login and every synchronous call (qos, consume, close).
    timeval rpc_tv = to_timeval(std::max<std::int64_t>(s.connect_timeout_ms, 1000));
    amqp_set_handshake_timeout(conn, &rpc_tv);
    amqp_set_rpc_timeout(conn, &rpc_tv);
    // consumer_cancel_notify: the broker tells us (basic.cancel) when our queue is deleted,
    // instead of leaving a consumer that silently never receives again.
    amqp_table_entry_t caps[1];
    caps[0].key = amqp_cstring_bytes("consumer_cancel_notify");
    caps[0].value.kind = AMQP_FIELD_KIND_BOOLEAN;
    caps[0].value.value.boolean = 1;
    amqp_table_entry_t props[2];
    props[0].key = amqp_cstring_bytes("connection_name");
    props[0].value.kind = AMQP_FIELD_KIND_UTF8;
    props[0].value.value.bytes = amqp_cstring_bytes(s.name.c_str());
    props[1].key = amqp_cstring_bytes("capabilities");
    props[1].value.kind = AMQP_FIELD_KIND_TABLE;
    props[1].value.value.table = amqp_table_t{1, caps};
    amqp_table_t table{2, props};
    const auto login = amqp_login_with_properties(
        conn, s.vhost.c_str(), 0, AMQP_DEFAULT_FRAME_SIZE, s.heartbeat_seconds, &table,
        AMQP_SASL_METHOD_PLAIN, s.user.c_str(), s.password.c_str());
    if (login.reply_type != AMQP_RESPONSE_NORMAL) {
        // A refused login mostly shows as the broker closing the socket (it says why in its own
        // log): the same class of failure as an unreachable broker for the caller's backoff.
        error = "login to vhost '" + s.vhost + "' as '" + s.user + "': " + reply_text(login);
        why = login.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION ? open_failure::refused
                                                                 : open_failure::unreachable;
        return nullptr;
    }
    link->open_ = true;
    // The heartbeat the broker and we agreed on in connection.tune.
    link->heartbeat_ = std::chrono::milliseconds(1000LL * amqp_get_heartbeat(conn));
    link->last_sent_ = link->last_heard_ = std::chrono::steady_clock::now();
    why = open_failure::refused;
    amqp_channel_open(conn, channel);
    auto r = amqp_get_rpc_reply(conn);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        error = "channel.open: " + reply_text(r);
        link->channel_closed_by_broker(r);
        return nullptr;
    }
    amqp_basic_qos(conn, channel, 0,
                   static_cast<std::uint16_t>(std::min<std::size_t>(s.prefetch, 65535)), 0);
    r = amqp_get_rpc_reply(conn);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        error = "basic.qos: " + reply_text(r);
        link->channel_closed_by_broker(r);
        return nullptr;
    }
    amqp_basic_consume(
        conn, channel, amqp_cstring_bytes(sub.queue.c_str()),
        sub.consumer_tag.empty() ? amqp_empty_bytes : amqp_cstring_bytes(sub.consumer_tag.c_str()),
        0 /* no_local */, 0 /* no_ack: we ack */, 0 /* exclusive */, amqp_empty_table);
    r = amqp_get_rpc_reply(conn);
    if (r.reply_type != AMQP_RESPONSE_NORMAL) {
        error = "basic.consume: " + reply_text(r);
        link->channel_closed_by_broker(r);
        return nullptr;
    }
    return link;
}

amqp_link::~amqp_link() {
    close();
    if (conn_ != nullptr) {
        amqp_destroy_connection(conn_);
    }
}

int amqp_link::fd() const {
    return amqp_get_sockfd(conn_);
}

bool amqp_link::buffered() const {
    return amqp_frames_enqueued(conn_) != 0 || amqp_data_in_buffer(conn_) != 0;
}

amqp_link::next_result amqp_link::next() {
    next_result out;
    amqp_maybe_release_buffers(conn_);
    amqp_envelope_t env;
    timeval zero{0, 0};
    const auto r = amqp_consume_message(conn_, &env, &zero, 0);
    if (r.reply_type == AMQP_RESPONSE_NORMAL) {
        out.kind = next_kind::message;
        out.message.tag = env.delivery_tag;
        out.message.redelivered = env.redelivered != 0;
        out.message.exchange = bytes(env.exchange);
        out.message.routing_key = bytes(env.routing_key);
        const auto& p = env.message.properties;
        if ((p._flags & AMQP_BASIC_MESSAGE_ID_FLAG) != 0) {
            out.message.message_id = bytes(p.message_id);
        }
        out.message.body = bytes(env.message.body);
        amqp_destroy_envelope(&env);
        return out;
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && r.library_error == AMQP_STATUS_TIMEOUT) {
        return out; // nothing
    }
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        r.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
        // A frame other than basic.deliver: read it and see whether it ends the consumer.
        amqp_frame_t frame;
        const int st = amqp_simple_wait_frame_noblock(conn_, &frame, &zero);
        if (st == AMQP_STATUS_TIMEOUT) {
            return out;
        }
        if (st != AMQP_STATUS_OK) {
            out.kind = next_kind::closed;
            out.why = amqp_error_string2(st);
            open_ = false;
            return out;
        }
        if (frame.frame_type != AMQP_FRAME_METHOD) {
            return out; // a stray header/body frame: nothing to act on
        }
        const auto id = frame.payload.method.id;
        if (id == AMQP_CHANNEL_CLOSE_METHOD) {
            const auto* m = static_cast<const amqp_channel_close_t*>(frame.payload.method.decoded);
            out.why = "channel closed by the broker: " + std::to_string(m->reply_code) + " " +
                      bytes(m->reply_text);
            amqp_channel_close_ok_t ok{};
            amqp_send_method(conn_, frame.channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
            channel_open_ = false; // close() then closes the connection only
            out.kind = next_kind::closed;
        } else if (id == AMQP_CONNECTION_CLOSE_METHOD) {
            const auto* m =
                static_cast<const amqp_connection_close_t*>(frame.payload.method.decoded);
            out.why = "connection closed by the broker: " + std::to_string(m->reply_code) + " " +
                      bytes(m->reply_text);
            amqp_connection_close_ok_t ok{};
            amqp_send_method(conn_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
            open_ = false;
            out.kind = next_kind::closed;
        } else if (id == AMQP_BASIC_CANCEL_METHOD) {
            out.why = "consumer cancelled by the broker (queue deleted?)";
            out.kind = next_kind::closed;
        }
        return out;
    }
    out.kind = next_kind::closed;
    out.why = reply_text(r);
    open_ = false;
    return out;
}

void amqp_link::channel_closed_by_broker(const amqp_rpc_reply_t& r) {
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        // The broker closed the channel (404 no queue, 403 access refused): confirm it, so
        // close() does not ask to close it again.
        amqp_channel_close_ok_t ok{};
        amqp_send_method(conn_, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok);
        channel_open_ = false;
    }
}

bool amqp_link::keepalive(bool readable, std::string& why) {
    if (heartbeat_.count() <= 0) {
        return true;
    }
    const auto now = std::chrono::steady_clock::now();
    if (readable) {
        last_heard_ = now; // the broker's heartbeats (every heartbeat/2) keep the socket readable
    }
    if (now - last_heard_ > heartbeat_ * 2) {
        why = "no heartbeat from the broker for " + std::to_string(heartbeat_.count() * 2) + " ms";
        open_ = false;
        return false;
    }
    if (now - last_sent_ >= heartbeat_ / 2) {
        amqp_frame_t hb{};
        hb.frame_type = AMQP_FRAME_HEARTBEAT;
        hb.channel = 0;
        const int st = amqp_send_frame(conn_, &hb);
        if (st != AMQP_STATUS_OK) {
            why = std::string("heartbeat: ") + amqp_error_string2(st);
            open_ = false;
            return false;
        }
        last_sent_ = now;
    }
    return true;
}

bool amqp_link::ack(std::uint64_t tag, std::string& error) {
    const int st = amqp_basic_ack(conn_, channel, tag, 0);
    if (st != AMQP_STATUS_OK) {
        error = amqp_error_string2(st);
        return false;
    }
    return true;
}

bool amqp_link::reject(std::uint64_t tag, bool requeue, std::string& error) {
    const int st = amqp_basic_reject(conn_, channel, tag, requeue ? 1 : 0);
    if (st != AMQP_STATUS_OK) {
        error = amqp_error_string2(st);
        return false;
    }
    return true;
}

void amqp_link::close() {
    if (!open_) {
        return;
    }
    open_ = false;
    if (channel_open_) {
        amqp_channel_close(conn_, channel, AMQP_REPLY_SUCCESS);
    }
    amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
}

} // namespace wopbridge::rabbitmq

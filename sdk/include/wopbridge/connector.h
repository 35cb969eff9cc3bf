/* wopbridge connector plugin interface: the C ABI between the host and a connector module (.so).
 *
 * Rules of the boundary
 *  - A module exports exactly one symbol, WOPBRIDGE_ENTRY_SYMBOL, returning a pointer to a static,
 *    const wb_connector_descriptor that lives as long as the module is loaded.
 *  - No C++ type, exception, RTTI or heap ownership crosses this header. Strings are wb_str
 *    (pointer + length, UTF-8, not NUL-dependent). Functions return wb_status; a C++ module catches
 *    everything at its edge (the header-only wrapper in connector.hpp does this for you).
 *  - Ownership is written on every pointer: "borrowed" = valid only for the duration of the call;
 *    "copied" = the receiver copies what it needs before returning; "static" = lives as long as the
 *    module (descriptor strings) or the host (the host API table).
 *  - Versioning: a host loads a module when abi_major equals the host's and abi_minor is not newer than
 *    the host's. Structs start with struct_size; the host API table and the descriptor only ever grow
 *    at the end (append-only), so a module checks api->struct_size before using a newer function.
 *  - Time is int64 milliseconds since the Unix epoch, UTC.
 *  - Threads: the host calls lifecycle functions from one control thread, in order
 *    describe -> validate -> create -> start -> subscribe/unsubscribe* -> stop -> destroy.
 *    on_http_request is called from host I/O threads, concurrently, and must not block: finish the
 *    request later with api->respond. Host API functions may be called from any thread.
 */
#ifndef WOPBRIDGE_CONNECTOR_H
#define WOPBRIDGE_CONNECTOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WOPBRIDGE_ABI_MAJOR 1
#define WOPBRIDGE_ABI_MINOR 0
#define WOPBRIDGE_ENTRY_SYMBOL "wopbridge_connector_entry_v1"

#if defined(__GNUC__)
#define WOPBRIDGE_EXPORT __attribute__((visibility("default")))
#else
#define WOPBRIDGE_EXPORT
#endif

typedef struct wb_str {
    const char* data; /* may be NULL when size == 0 */
    size_t size;
} wb_str;

typedef enum wb_status {
    WB_OK = 0,
    WB_ERR_INVALID = 1,     /* bad argument or config */
    WB_ERR_UNSUPPORTED = 2, /* not provided by this side */
    WB_ERR_INTERNAL = 3,    /* a bug or an exception caught at the edge */
    WB_ERR_BUSY = 4,        /* try again later */
    WB_ERR_STATE = 5        /* called in the wrong lifecycle state */
} wb_status;

typedef enum wb_log_level { WB_LOG_DEBUG = 0, WB_LOG_INFO = 1, WB_LOG_WARN = 2, WB_LOG_ERROR = 3 } wb_log_level;

typedef struct wb_header {
    wb_str name; /* lower-case */
    wb_str value;
} wb_header;

/* Opaque handles. */
typedef struct wb_host wb_host;               /* the host's context for one connector instance */
typedef struct wb_connector wb_connector;     /* the module's instance */
typedef struct wb_request_ctx wb_request_ctx; /* one inbound HTTP request awaiting its response */

/* An inbound HTTP request for one of the connector's subscriptions (POST or GET /v1/ingest/{id}...).
 * Borrowed: valid only during on_http_request; copy what you keep. */
typedef struct wb_http_request {
    uint32_t struct_size;
    wb_str subscription_id;
    wb_str method;
    wb_str target;     /* path and query exactly as received */
    wb_str public_url; /* server.publicUrl + target: the URL the provider signed (Twilio) */
    const wb_header* headers;
    size_t header_count;
    wb_str body; /* raw bytes; verify signatures on these, never on a re-serialization */
    wb_str remote_address;
    int64_t received_at_ms;
} wb_http_request;

/* The response to an inbound request. Copied by the host during respond(). */
typedef struct wb_http_response {
    uint32_t struct_size;
    int status;
    const wb_header* headers;
    size_t header_count;
    wb_str body;
} wb_http_response;

/* An inbound event, verified and parsed by the connector. Copied by the host during submit().
 * The host derives the opaque dedup key from (subscription id, provider_event_id), assigns the delivery
 * id, runs retries and stamps causation: a connector cannot forget or forge them. */
typedef struct wb_inbound_event {
    uint32_t struct_size;
    wb_str subscription_id;
    wb_str provider_event_id; /* the provider's stable id for this event (Slack event_id, MessageSid,
                                 Message-ID...); a content hash when the provider has none */
    int64_t received_at_ms;
    int verified;             /* 1 when the connector verified the request's authenticity */
    wb_str content_json;      /* a JSON object with exactly one per-source key, e.g. {"email":{...}};
                                 handed to the run as the TriggerEvent, never event-logged */
} wb_inbound_event;

typedef enum wb_submit_status {
    WB_SUBMIT_ACCEPTED = 0,  /* durably committed; run_id names the run the delivery starts */
    WB_SUBMIT_DUPLICATE = 1, /* seen within the dedup retention; run_id is the prior run */
    WB_SUBMIT_HELD = 2,      /* committed, delivered when the subscription is active again */
    WB_SUBMIT_REFUSED = 3    /* not committed; see reason */
} wb_submit_status;

/* Borrowed: valid only during the completion callback. */
typedef struct wb_submit_outcome {
    uint32_t struct_size;
    wb_submit_status status;
    wb_str run_id;      /* empty when refused */
    wb_str delivery_id; /* empty when refused */
    wb_str reason;      /* when refused: "subscription_not_active", "not_found", "overloaded",
                           "store_unavailable", "invalid" */
    int retry_after_seconds; /* when refused for overload or store trouble, else 0 */
} wb_submit_outcome;

/* Called exactly once per submit, on a host thread, only after the durable commit (or refusal). */
typedef void (*wb_submit_done_fn)(void* user, const wb_submit_outcome* outcome);

/* A subscription handed to the connector. Borrowed during subscribe(). */
typedef struct wb_subscription {
    uint32_t struct_size;
    wb_str id;
    wb_str source;        /* "webhook", "email", "form", "queue", "schedule" */
    wb_str workflow_id;
    wb_str settings_json; /* per-subscription settings object, validated against the descriptor's
                             subscription_schema_json */
    wb_str ingest_url;    /* absolute URL of POST /v1/ingest/{id} */
} wb_subscription;

/* A subscription the connector discovered and asks the host to register (e.g. a mailbox found in
 * the provider's account). Copied by the host. */
typedef struct wb_subscription_request {
    uint32_t struct_size;
    wb_str id;            /* requested id; must be unique on the host */
    wb_str source;
    wb_str workflow_id;
    wb_str settings_json;
} wb_subscription_request;

typedef void (*wb_task_fn)(void* user);

/* The host's function table. Static for the life of the connector instance. Append-only. */
typedef struct wb_host_api {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;

    /* Structured log line from the connector; never put secrets or inbound content in it. */
    void (*log)(wb_host* host, wb_log_level level, wb_str message);
    int64_t (*now_ms)(wb_host* host);
    /* Cryptographically strong random bytes. */
    wb_status (*random_bytes)(wb_host* host, uint8_t* out, size_t n);

    /* Submits an inbound event. Returns WB_OK when `done` will be called (exactly once, after the
     * commit or refusal); any other status means `done` will not be called. */
    wb_status (*submit)(wb_host* host, const wb_inbound_event* event, wb_submit_done_fn done, void* user);

    /* Completes an inbound HTTP request. Exactly once per wb_request_ctx; the ctx is invalid after. */
    wb_status (*respond)(wb_host* host, wb_request_ctx* ctx, const wb_http_response* response);

    /* Registers a subscription the connector discovered. The host calls subscribe() for it. */
    wb_status (*register_subscription)(wb_host* host, const wb_subscription_request* request,
                                       char* error_buf, size_t error_buf_size);

    /* Runs fn(user) on a host worker thread after delay_ms (0 = soon). Tasks still queued at stop()
     * are run with the host shutting down; fn must cope. */
    wb_status (*post_task)(wb_host* host, int64_t delay_ms, wb_task_fn fn, void* user);

    /* Is the bridge able to accept more work now? 0 = saturated (queue-like sources stop reading). */
    int (*has_capacity)(wb_host* host);

    /* Stores an attachment (an email part, an uploaded file) durably (fsynced) in the host's blob
     * store and writes its opaque reference ("att_<hex>", NUL-terminated) to ref_buf. Events carry
     * the reference, never the bytes (TriggerEvent AttachmentRef). `bytes` is copied. */
    wb_status (*store_attachment)(wb_host* host, wb_str bytes, char* ref_buf, size_t ref_buf_size);
} wb_host_api;

/* Capability bits of a connector (descriptor.capabilities). */
#define WB_CAP_HTTP_INGEST 0x1u /* serves requests on POST /v1/ingest/{id} */
#define WB_CAP_LISTENER 0x2u    /* runs its own listener or poller (SMTP, queue consumer) */
#define WB_CAP_TOKEN_GET 0x4u   /* serves GET /v1/ingest/{id}/... (e.g. form tokens) */

/* What a module exports. Static; strings are NUL-terminated static UTF-8. Append-only. */
typedef struct wb_connector_descriptor {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
    const char* name;             /* e.g. "slack" */
    const char* version;          /* the module's own version, e.g. "1.0.0" */
    const char* status;           /* "stable" | "alpha" | "wip" */
    const char* security_posture; /* one line: what it verifies and what it trusts */
    const char* sdk_build_id;     /* WOPBRIDGE_SDK_BUILD_ID of the SDK it was built with */
    const char* source;           /* the closest trigger source kind: "webhook" "email" "form" "queue" */
    const char* config_schema_json;       /* JSON Schema of the connector's settings */
    const char* subscription_schema_json; /* JSON Schema of per-subscription settings */
    uint64_t capabilities;

    /* Validates settings without side effects. error_buf gets a one-line reason (NUL-terminated,
     * truncated) on failure. */
    wb_status (*validate)(wb_str config_json, char* error_buf, size_t error_buf_size);
    wb_status (*create)(const wb_host_api* api, wb_host* host, wb_str config_json, wb_connector** out,
                        char* error_buf, size_t error_buf_size);
    wb_status (*start)(wb_connector* self);
    /* Idempotent: subscribing an id twice updates its settings. */
    wb_status (*subscribe)(wb_connector* self, const wb_subscription* sub, char* error_buf,
                           size_t error_buf_size);
    /* Idempotent: unknown ids are WB_OK. */
    wb_status (*unsubscribe)(wb_connector* self, wb_str subscription_id);
    /* May be NULL when the connector has no WB_CAP_HTTP_INGEST. Must eventually call api->respond. */
    void (*on_http_request)(wb_connector* self, wb_request_ctx* ctx, const wb_http_request* request);
    /* Stops listeners and finishes in-flight work before deadline_ms (absolute). */
    wb_status (*stop)(wb_connector* self, int64_t deadline_ms);
    void (*destroy)(wb_connector* self);
} wb_connector_descriptor;

typedef const wb_connector_descriptor* (*wb_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WOPBRIDGE_CONNECTOR_H */

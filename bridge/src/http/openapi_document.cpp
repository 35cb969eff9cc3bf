// Generated from schemas/openapi.json by embed_openapi.cmake. Do not edit.
#include "http/openapi_document.hpp"

namespace wopbridge::http {

namespace {
const char document[] = R"openapi_json({
  "openapi": "3.1.0",
  "info": {
    "title": "wopbridge HTTP API",
    "version": "0.1.0",
    "description": "The HTTP surface of `wopbridge serve`: OpenWOP discovery, trigger subscriptions (openwop-trigger-bridge), signed ingest, run reads, conformance seams. Errors use the closed envelope {error, message, details?}."
  },
  "servers": [
    {
      "url": "https://{host}",
      "variables": {
        "host": {
          "default": "localhost:8080"
        }
      }
    }
  ],
  "security": [
    {
      "ApiKeyAuth": []
    }
  ],
  "paths": {
    "/.well-known/openwop": {
      "get": {
        "operationId": "getCapabilities",
        "summary": "Discovery document (CONTRACT (a))",
        "security": [],
        "responses": {
          "200": {
            "description": "Capabilities",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Capabilities"
                }
              }
            }
          },
          "503": {
            "description": "Capabilities cannot be computed",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/openapi.json": {
      "get": {
        "operationId": "getOpenApi",
        "summary": "This document",
        "security": [],
        "responses": {
          "200": {
            "description": "OpenAPI 3.1 document",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          }
        }
      }
    },
    "/healthz": {
      "get": {
        "operationId": "getHealth",
        "summary": "Liveness: 200 while the process serves",
        "security": [],
        "responses": {
          "200": {
            "description": "Serving",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "status": {
                      "const": "ok"
                    }
                  }
                }
              }
            }
          }
        }
      }
    },
    "/readyz": {
      "get": {
        "operationId": "getReady",
        "summary": "Readiness: the store is reachable",
        "security": [],
        "responses": {
          "200": {
            "description": "Ready",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "status": {
                      "const": "ready"
                    }
                  }
                }
              }
            }
          },
          "503": {
            "description": "Not ready (`service_unavailable`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/trigger-subscriptions": {
      "post": {
        "operationId": "createTriggerSubscription",
        "summary": "Register a trigger subscription (RFC 0099 \u00a7F.2 + wopbridge extensions)",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/TriggerSubscriptionRegistration"
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Created. binding.signingSecret is returned here and never again",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/RegistrationResponse"
                }
              }
            }
          },
          "400": {
            "description": "Invalid registration (`validation_error`, details.field names the field)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "description": "Body too large (`payload_too_large`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      },
      "get": {
        "operationId": "listTriggerSubscriptions",
        "summary": "The caller tenant's subscriptions",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "responses": {
          "200": {
            "description": "Subscriptions",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "subscriptions"
                  ],
                  "additionalProperties": false,
                  "properties": {
                    "subscriptions": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/TriggerSubscription"
                      }
                    }
                  }
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/trigger-subscriptions/{subscriptionId}": {
      "parameters": [
        {
          "name": "subscriptionId",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string"
          }
        }
      ],
      "get": {
        "operationId": "getTriggerSubscription",
        "summary": "One subscription and its recent deliveries (content-free)",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "responses": {
          "200": {
            "description": "Subscription",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "subscription",
                    "deliveries"
                  ],
                  "additionalProperties": false,
                  "properties": {
                    "subscription": {
                      "$ref": "#/components/schemas/TriggerSubscription"
                    },
                    "deliveries": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/DeliverySummary"
                      }
                    }
                  }
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "Unknown or another tenant's (`not_found`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      },
      "patch": {
        "operationId": "patchTriggerSubscription",
        "summary": "Pause or resume (non-normative, as the reference host)",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "additionalProperties": false,
                "required": [
                  "state"
                ],
                "properties": {
                  "state": {
                    "enum": [
                      "paused",
                      "active"
                    ]
                  }
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "Updated",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "subscription"
                  ],
                  "additionalProperties": false,
                  "properties": {
                    "subscription": {
                      "$ref": "#/components/schemas/TriggerSubscription"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "`validation_error`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "409": {
            "description": "Refused transition (`invalid_state_transition`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      },
      "delete": {
        "operationId": "deleteTriggerSubscription",
        "summary": "Delete a subscription",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "responses": {
          "204": {
            "description": "Deleted"
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/trigger-subscriptions/{subscriptionId}/deliveries": {
      "get": {
        "operationId": "listTriggerDeliveries",
        "summary": "Deliveries, newest first (content-free)",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "parameters": [
          {
            "name": "subscriptionId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "limit",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": 1
            },
            "description": "Clamped to triggerBridge.deadLetter.maxPageSize."
          },
          {
            "name": "cursor",
            "in": "query",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 2048
            }
          }
        ],
        "responses": {
          "200": {
            "description": "A page",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "deliveries"
                  ],
                  "additionalProperties": false,
                  "properties": {
                    "deliveries": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/DeliverySummary"
                      }
                    },
                    "nextCursor": {
                      "type": "string",
                      "minLength": 1,
                      "maxLength": 2048
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "Bad limit or foreign cursor (`validation_error`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/trigger-subscriptions/{subscriptionId}/dead-letters": {
      "get": {
        "operationId": "listTriggerDeadLetters",
        "summary": "Dead-lettered deliveries (RFC 0232)",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "parameters": [
          {
            "name": "subscriptionId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "limit",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": 1
            },
            "description": "Clamped to triggerBridge.deadLetter.maxPageSize."
          },
          {
            "name": "cursor",
            "in": "query",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 2048
            }
          }
        ],
        "responses": {
          "200": {
            "description": "TriggerDeadLetterPage",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/TriggerDeadLetterPage"
                }
              }
            }
          },
          "400": {
            "description": "Bad limit or foreign cursor (`validation_error`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/ingest/{subscriptionId}": {
      "post": {
        "security": [],
        "parameters": [
          {
            "name": "subscriptionId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "Duplicate webhook-id within retention: the prior run",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/IngestOutcome"
                }
              }
            }
          },
          "202": {
            "description": "Committed; the run starts from this delivery",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/IngestOutcome"
                }
              }
            }
          },
          "400": {
            "description": "Malformed request (`validation_error`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Signature refused (`signature_invalid`); a verification_failed dead letter is recorded",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "Unknown subscription (`not_found`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "409": {
            "description": "The subscription is not active (`subscription_not_active`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "413": {
            "description": "Body past ingestion.maxBodyBytes (`payload_too_large`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "503": {
            "description": "Overloaded or the store cannot commit (`service_unavailable`, Retry-After)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        },
        "operationId": "ingestTriggerEvent",
        "summary": "Signed inbound ingest (RFC 0230), no bearer credential; connector-backed subscriptions are answered by their connector",
        "requestBody": {
          "required": true,
          "description": "Raw body, signed with Standard Webhooks headers webhook-id / webhook-timestamp / webhook-signature",
          "content": {
            "*/*": {
              "schema": {}
            }
          }
        }
      },
      "get": {
        "operationId": "ingestConnectorGet",
        "summary": "Connector-served GET (e.g. form pages, verification challenges); the connector writes the reply",
        "security": [],
        "parameters": [
          {
            "name": "subscriptionId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The connector's reply"
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "405": {
            "description": "Webhook subscriptions accept POST only (`method_not_allowed`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/ingest/{subscriptionId}/{connectorPath}": {
      "parameters": [
        {
          "name": "subscriptionId",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string"
          }
        },
        {
          "name": "connectorPath",
          "in": "path",
          "required": true,
          "schema": {
            "type": "string"
          },
          "description": "The rest of the path (may contain '/'), handed to the connector"
        }
      ],
      "post": {
        "operationId": "ingestConnectorPathPost",
        "summary": "Connector-served POST below the ingest URL",
        "security": [],
        "requestBody": {
          "content": {
            "*/*": {
              "schema": {}
            }
          }
        },
        "responses": {
          "200": {
            "description": "The connector's reply"
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "405": {
            "description": "`method_not_allowed`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "503": {
            "description": "Connector unavailable (`service_unavailable`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      },
      "get": {
        "operationId": "ingestConnectorPathGet",
        "summary": "Connector-served GET below the ingest URL",
        "security": [],
        "responses": {
          "200": {
            "description": "The connector's reply"
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "405": {
            "description": "`method_not_allowed`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "503": {
            "description": "Connector unavailable (`service_unavailable`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/webhooks": {
      "post": {
        "operationId": "registerWebhook",
        "summary": "Register an outbound run-event webhook (webhooks.md v1.2); the secret is returned once",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "additionalProperties": false,
                "required": [
                  "url",
                  "events"
                ],
                "properties": {
                  "url": {
                    "type": "string",
                    "description": "https only; private, loopback, link-local and metadata destinations are refused"
                  },
                  "events": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                      "type": "string"
                    },
                    "description": "RunEventType values"
                  },
                  "tenantId": {
                    "type": "string",
                    "description": "The workspace (webhooks.md); must be the caller's own; defaults to it"
                  },
                  "tags": {
                    "type": "array",
                    "items": {
                      "type": "string"
                    }
                  },
                  "secret": {
                    "type": "string",
                    "description": "Optional subscriber whsec_ secret: Standard Webhooks headers are sent as well"
                  }
                }
              }
            }
          }
        },
        "responses": {
          "201": {
            "description": "Registered",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "additionalProperties": false,
                  "required": [
                    "webhookId",
                    "secret",
                    "secretFingerprint"
                  ],
                  "properties": {
                    "webhookId": {
                      "type": "string"
                    },
                    "secret": {
                      "type": "string",
                      "pattern": "^[0-9a-f]{64}$"
                    },
                    "secretFingerprint": {
                      "type": "string",
                      "pattern": "^[0-9a-f]{8}$"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "Invalid body or refused URL (`validation_error`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope, or tenantId is not the caller's workspace (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      },
      "get": {
        "operationId": "listWebhooks",
        "summary": "The caller's outbound webhooks (content-free: no secret, URL without query)",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "responses": {
          "200": {
            "description": "Webhook list",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "webhooks"
                  ],
                  "properties": {
                    "webhooks": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "properties": {
                          "webhookId": {
                            "type": "string"
                          },
                          "url": {
                            "type": "string"
                          },
                          "events": {
                            "type": "array",
                            "items": {
                              "type": "string"
                            }
                          },
                          "tags": {
                            "type": "array",
                            "items": {
                              "type": "string"
                            }
                          },
                          "state": {
                            "enum": [
                              "active",
                              "paused",
                              "failed",
                              "dead-lettered"
                            ]
                          },
                          "secretFingerprint": {
                            "type": "string"
                          },
                          "createdAt": {
                            "type": "string",
                            "format": "date-time"
                          }
                        }
                      }
                    }
                  }
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope, or tenantId is not the caller's workspace (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/webhooks/{webhookId}": {
      "delete": {
        "operationId": "unregisterWebhook",
        "summary": "Unregister an outbound webhook",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "parameters": [
          {
            "name": "webhookId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "tenantId",
            "in": "query",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "204": {
            "description": "Deleted"
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope, or tenantId is not the caller's workspace (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/webhooks/{webhookId}/dead-letters": {
      "get": {
        "operationId": "listWebhookDeadLetters",
        "summary": "Dead-lettered outbound deliveries (webhooks.durable), newest first",
        "security": [
          {
            "ApiKeyAuth": [
              "webhooks:manage"
            ]
          }
        ],
        "parameters": [
          {
            "name": "webhookId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "limit",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": 1
            }
          },
          {
            "name": "cursor",
            "in": "query",
            "schema": {
              "type": "string",
              "minLength": 1,
              "maxLength": 2048
            }
          }
        ],
        "responses": {
          "200": {
            "description": "Dead-letter page",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "deadLetters"
                  ],
                  "properties": {
                    "deadLetters": {
                      "type": "array",
                      "items": {
                        "type": "object",
                        "properties": {
                          "webhookId": {
                            "type": "string"
                          },
                          "deliveryId": {
                            "type": "string"
                          },
                          "runId": {
                            "type": "string"
                          },
                          "sequence": {
                            "type": "integer"
                          },
                          "eventType": {
                            "type": "string"
                          },
                          "attempts": {
                            "type": "integer"
                          },
                          "reason": {
                            "const": "retries_exhausted"
                          },
                          "lastError": {
                            "type": "string"
                          },
                          "deadLetteredAt": {
                            "type": "string",
                            "format": "date-time"
                          },
                          "expiresAt": {
                            "type": "string",
                            "format": "date-time"
                          },
                          "stateChange": {
                            "type": "object"
                          }
                        }
                      }
                    },
                    "nextCursor": {
                      "type": "string"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "Bad limit or foreign cursor (`validation_error`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope, or tenantId is not the caller's workspace (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/runs/{runId}": {
      "get": {
        "operationId": "getRun",
        "summary": "RunSnapshot",
        "security": [
          {
            "ApiKeyAuth": [
              "runs:read"
            ]
          }
        ],
        "parameters": [
          {
            "name": "runId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "The run",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/RunSnapshot"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "Unknown or another tenant's (`not_found`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/runs/{runId}/events/poll": {
      "get": {
        "operationId": "pollRunEvents",
        "summary": "Long poll: answers at once when events after lastSequence exist, else waits up to timeout seconds",
        "security": [
          {
            "ApiKeyAuth": [
              "runs:read"
            ]
          }
        ],
        "parameters": [
          {
            "name": "runId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "lastSequence",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": -1
            },
            "description": "Events with a larger sequence are returned; absent = from the start"
          },
          {
            "name": "timeout",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": 1,
              "maximum": 60,
              "default": 30
            }
          }
        ],
        "responses": {
          "200": {
            "description": "Events",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "events",
                    "isComplete"
                  ],
                  "additionalProperties": false,
                  "properties": {
                    "events": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/RunEventDoc"
                      }
                    },
                    "isComplete": {
                      "type": "boolean"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "`validation_error`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/runs/{runId}/events": {
      "get": {
        "operationId": "streamRunEvents",
        "summary": "Server-Sent Events: id = sequence, event = type, data = RunEventDoc; keep-alive comment every 15 s; closes after a terminal event",
        "security": [
          {
            "ApiKeyAuth": [
              "runs:read"
            ]
          }
        ],
        "parameters": [
          {
            "name": "runId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "Last-Event-ID",
            "in": "header",
            "schema": {
              "type": "string"
            },
            "description": "Resume after this sequence"
          },
          {
            "name": "lastSequence",
            "in": "query",
            "schema": {
              "type": "integer",
              "minimum": -1
            }
          },
          {
            "name": "streamMode",
            "in": "query",
            "schema": {
              "enum": [
                "updates"
              ]
            }
          }
        ],
        "responses": {
          "200": {
            "description": "Event stream",
            "content": {
              "text/event-stream": {
                "schema": {
                  "type": "string"
                }
              }
            }
          },
          "400": {
            "description": "`validation_error` / `unsupported_stream_mode`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "`not_found`",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/host/sample/trigger-bridge/deliver": {
      "post": {
        "operationId": "seamDeliver",
        "summary": "Conformance seam (only with test seams enabled; 404 otherwise)",
        "security": [
          {
            "ApiKeyAuth": [
              "runs:create"
            ]
          }
        ],
        "requestBody": {
          "required": true,
          "content": {
            "application/json": {
              "schema": {
                "type": "object",
                "required": [
                  "scenario"
                ],
                "properties": {
                  "scenario": {
                    "enum": [
                      "dedup",
                      "exhaust",
                      "deliver"
                    ]
                  },
                  "dedupKey": {
                    "type": "string",
                    "minLength": 1
                  },
                  "source": {
                    "enum": [
                      "webhook",
                      "schedule",
                      "queue",
                      "email",
                      "form"
                    ]
                  }
                }
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "Done",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "properties": {
                    "runId": {
                      "type": "string"
                    },
                    "subscriptionId": {
                      "type": "string"
                    },
                    "outcome": {
                      "type": "string"
                    },
                    "deliveredCount": {
                      "type": "integer"
                    }
                  }
                }
              }
            }
          },
          "400": {
            "description": "Unknown scenario (`validation_error`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "Seams disabled",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/host/sample/test/runs/{runId}/events": {
      "get": {
        "operationId": "seamRunEvents",
        "summary": "Conformance seam: a run's (or carrier id's) event log; unknown ids answer an empty list",
        "security": [
          {
            "ApiKeyAuth": [
              "runs:read"
            ]
          }
        ],
        "parameters": [
          {
            "name": "runId",
            "in": "path",
            "required": true,
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "type",
            "in": "query",
            "schema": {
              "type": "string"
            }
          },
          {
            "name": "causationId",
            "in": "query",
            "schema": {
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "description": "Events",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object",
                  "required": [
                    "events"
                  ],
                  "properties": {
                    "events": {
                      "type": "array",
                      "items": {
                        "$ref": "#/components/schemas/RunEventDoc"
                      }
                    }
                  }
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "Seams disabled",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    },
    "/v1/host/sample/test/reset": {
      "post": {
        "operationId": "seamReset",
        "summary": "Conformance seam: clear what the seams created",
        "security": [
          {
            "ApiKeyAuth": [
              "runs:create"
            ]
          }
        ],
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "type": "object"
              }
            }
          }
        },
        "responses": {
          "200": {
            "description": "Reset",
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            }
          },
          "401": {
            "description": "Missing or unknown API key (`unauthenticated`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "403": {
            "description": "The key lacks the scope (`forbidden`)",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          },
          "404": {
            "description": "Seams disabled",
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            }
          }
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "ApiKeyAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "API key from the config file; scopes runs:create, runs:read, webhooks:manage"
      }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "required": [
          "error",
          "message"
        ],
        "additionalProperties": false,
        "properties": {
          "error": {
            "type": "string",
            "description": "unauthenticated, forbidden, not_found, validation_error, method_not_allowed, payload_too_large, signature_invalid, subscription_not_active, invalid_state_transition, conflict, capability_not_provided, service_unavailable, rate_limited, internal_error"
          },
          "message": {
            "type": "string"
          },
          "details": {
            "type": "object"
          }
        }
      },
      "Capabilities": {
        "type": "object",
        "required": [
          "protocolVersion",
          "supportedEnvelopes",
          "schemaVersions",
          "limits"
        ],
        "description": "capabilities.schema.json plus triggerBridge.ingestion.inboundSigning (RFC 0230) and triggerBridge.deadLetter (RFC 0232)"
      },
      "TriggerSubscription": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "subscriptionId",
          "source",
          "state"
        ],
        "properties": {
          "subscriptionId": {
            "type": "string",
            "minLength": 1
          },
          "source": {
            "enum": [
              "webhook",
              "schedule",
              "queue",
              "email",
              "form"
            ]
          },
          "state": {
            "enum": [
              "active",
              "paused",
              "failed",
              "dead-lettered"
            ]
          },
          "dedupEnabled": {
            "type": "boolean"
          },
          "retryPolicy": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "maxAttempts": {
                "type": "integer",
                "minimum": 1
              },
              "backoff": {
                "enum": [
                  "none",
                  "fixed",
                  "exponential"
                ]
              }
            }
          },
          "webhookId": {
            "type": "string",
            "minLength": 1
          },
          "secretFingerprint": {
            "type": "string",
            "minLength": 1,
            "maxLength": 32
          }
        }
      },
      "TriggerSubscriptionRegistration": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "source",
          "workflowId"
        ],
        "properties": {
          "source": {
            "enum": [
              "webhook",
              "schedule",
              "queue",
              "email",
              "form"
            ]
          },
          "workflowId": {
            "type": "string",
            "minLength": 1
          },
          "dedupEnabled": {
            "type": "boolean",
            "default": true
          },
          "retryPolicy": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "maxAttempts": {
                "type": "integer",
                "minimum": 1
              },
              "backoff": {
                "enum": [
                  "none",
                  "fixed",
                  "exponential"
                ]
              }
            }
          },
          "verification": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
              "mode": {
                "enum": [
                  "required",
                  "best-effort",
                  "none"
                ],
                "default": "required"
              }
            }
          },
          "inputMapping": {
            "type": "object",
            "description": "Non-normative host hint; accepted and ignored"
          },
          "schedule": {
            "type": "object",
            "additionalProperties": false,
            "required": [
              "cron"
            ],
            "description": "wopbridge extension, source schedule only",
            "properties": {
              "cron": {
                "type": "string",
                "minLength": 1,
                "description": "5-field cron or '@every <duration>'"
              },
              "timeZone": {
                "type": "string",
                "description": "IANA name; default UTC"
              }
            }
          },
          "connector": {
            "type": "string",
            "minLength": 1,
            "description": "wopbridge extension: the loaded connector instance that serves this subscription (required for email/form/queue)"
          },
          "settings": {
            "type": "object",
            "description": "wopbridge extension: per-subscription connector settings, validated by the connector; never echoed"
          }
        }
      },
      "RegistrationResponse": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "subscription",
          "binding"
        ],
        "properties": {
          "subscription": {
            "$ref": "#/components/schemas/TriggerSubscription"
          },
          "binding": {
            "type": "object",
            "properties": {
              "ingestUrl": {
                "type": "string"
              },
              "secretFingerprint": {
                "type": "string",
                "maxLength": 32
              },
              "signingSecret": {
                "type": "string",
                "pattern": "^whsec_",
                "description": "Returned exactly once"
              }
            }
          }
        }
      },
      "DeliverySummary": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "deliveryId",
          "subscriptionId",
          "status",
          "attempts",
          "receivedAt"
        ],
        "description": "schemas/wopbridge/deliveries-page.schema.json#/$defs/delivery (content-free)",
        "properties": {
          "deliveryId": {
            "type": "string"
          },
          "subscriptionId": {
            "type": "string"
          },
          "dedupKey": {
            "type": "string",
            "description": "host-opaque"
          },
          "status": {
            "enum": [
              "pending",
              "in_flight",
              "delivered",
              "dead_lettered",
              "held"
            ]
          },
          "attempts": {
            "type": "integer",
            "minimum": 0
          },
          "runId": {
            "type": "string"
          },
          "receivedAt": {
            "type": "string",
            "format": "date-time"
          },
          "updatedAt": {
            "type": "string",
            "format": "date-time"
          },
          "dueAt": {
            "type": "string",
            "format": "date-time"
          },
          "lastError": {
            "type": "string",
            "maxLength": 256
          }
        }
      },
      "TriggerDeadLetterPage": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "deliveries"
        ],
        "properties": {
          "deliveries": {
            "type": "array",
            "items": {
              "$ref": "#/components/schemas/DeadLetteredTriggerDelivery"
            }
          },
          "nextCursor": {
            "type": "string",
            "minLength": 1,
            "maxLength": 2048
          }
        }
      },
      "DeadLetteredTriggerDelivery": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "subscriptionId",
          "attemptEventId",
          "attempt",
          "reason",
          "deadLetteredAt",
          "expiresAt"
        ],
        "properties": {
          "subscriptionId": {
            "type": "string",
            "minLength": 1
          },
          "attemptEventId": {
            "type": "string",
            "minLength": 1
          },
          "attempt": {
            "type": "object",
            "required": [
              "subscriptionId",
              "dedupKey",
              "attempt",
              "outcome"
            ],
            "properties": {
              "subscriptionId": {
                "type": "string",
                "minLength": 1
              },
              "dedupKey": {
                "type": "string",
                "minLength": 1
              },
              "attempt": {
                "type": "integer",
                "minimum": 1
              },
              "outcome": {
                "const": "dead-lettered"
              }
            }
          },
          "stateChange": {
            "type": "object",
            "required": [
              "subscriptionId",
              "source",
              "fromState",
              "toState"
            ],
            "properties": {
              "subscriptionId": {
                "type": "string"
              },
              "source": {
                "enum": [
                  "webhook",
                  "schedule",
                  "queue",
                  "email",
                  "form"
                ]
              },
              "fromState": {
                "enum": [
                  "active",
                  "paused",
                  "failed",
                  "dead-lettered"
                ]
              },
              "toState": {
                "enum": [
                  "active",
                  "paused",
                  "failed",
                  "dead-lettered"
                ]
              },
              "reason": {
                "type": "string"
              }
            }
          },
          "reason": {
            "enum": [
              "verification_failed",
              "retries_exhausted"
            ]
          },
          "deadLetteredAt": {
            "type": "string",
            "format": "date-time"
          },
          "expiresAt": {
            "type": "string",
            "format": "date-time"
          }
        }
      },
      "RunSnapshot": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "runId",
          "workflowId",
          "status",
          "createdAt",
          "updatedAt",
          "subscriptionId",
          "deliveryId"
        ],
        "properties": {
          "runId": {
            "type": "string"
          },
          "workflowId": {
            "type": "string"
          },
          "status": {
            "enum": [
              "pending",
              "running",
              "completed",
              "failed"
            ]
          },
          "createdAt": {
            "type": "string",
            "format": "date-time"
          },
          "updatedAt": {
            "type": "string",
            "format": "date-time"
          },
          "subscriptionId": {
            "type": "string"
          },
          "deliveryId": {
            "type": "string"
          },
          "upstreamRunId": {
            "type": "string"
          }
        }
      },
      "RunEventDoc": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "eventId",
          "runId",
          "type",
          "payload",
          "timestamp",
          "sequence"
        ],
        "properties": {
          "eventId": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128
          },
          "runId": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128
          },
          "type": {
            "type": "string"
          },
          "payload": {},
          "timestamp": {
            "type": "string",
            "format": "date-time"
          },
          "sequence": {
            "type": "integer",
            "minimum": 0
          },
          "causationId": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128
          }
        }
      },
      "IngestOutcome": {
        "type": "object",
        "additionalProperties": false,
        "required": [
          "outcome",
          "runId"
        ],
        "properties": {
          "outcome": {
            "enum": [
              "delivered",
              "duplicate",
              "held"
            ]
          },
          "runId": {
            "type": "string"
          },
          "deliveryId": {
            "type": "string"
          }
        }
      }
    }
  }
}
)openapi_json";
} // namespace

std::string_view openapi_document() noexcept {
    return std::string_view(document, sizeof(document) - 1);
}

} // namespace wopbridge::http

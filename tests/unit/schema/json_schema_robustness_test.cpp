// Random, mostly malformed schemas and instances: the validator must return (never throw, never
// crash) and every error must say something. Deterministic seeds, so a failure reproduces.
#include "contract/json_schema.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <random>
#include <string>

namespace wopbridge {
namespace {

namespace json = boost::json;

class JsonSchemaRobustnessTest : public ::testing::Test {
protected:
    std::mt19937 rng_{20261130};

    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

    json::value scalar() {
        switch (pick(9)) {
        case 0:
            return nullptr;
        case 1:
            return pick(2) == 0;
        case 2:
            return pick(7) - 3;
        case 3:
            return static_cast<double>(pick(100)) / 7.0 - 5;
        case 4:
            return json::string(std::string(static_cast<std::size_t>(pick(6)), 'a'));
        case 5:
            return "#/$defs/a";
        case 6:
            return "(";
        case 7:
            return -1e300;
        default:
            return "date-time";
        }
    }

    json::value schema(int depth) {
        static const char* const keywords[] = {
            "type",
            "enum",
            "const",
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
            "minLength",
            "maxLength",
            "pattern",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "if",
            "then",
            "else",
            "dependentRequired",
            "dependentSchemas",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "$ref",
            "$defs",
            "$id",
            "$anchor",
            "format",
        };
        static const char* const refs[] = {
            "#",           "#/$defs/a", "#/$defs/b", "#/properties/a", "#a",       "other.json",
            "#/$defs/a~2", "%%",        "#/allOf/0", "http://[x",      "urn:x#/y",
        };
        if (depth > 4 || pick(5) == 0) {
            return pick(3) == 0 ? json::value(pick(2) == 0) : scalar();
        }
        json::object o;
        int n = pick(5) + 1;
        for (int i = 0; i < n; ++i) {
            const char* k = keywords[pick(static_cast<int>(std::size(keywords)))];
            json::value v;
            switch (pick(5)) {
            case 0:
                v = scalar();
                break;
            case 1:
                v = schema(depth + 1);
                break;
            case 2: {
                json::array a;
                for (int j = pick(3); j >= 0; --j) {
                    a.push_back(pick(2) == 0 ? schema(depth + 1) : scalar());
                }
                v = std::move(a);
                break;
            }
            case 3: {
                json::object m;
                m["a"] = schema(depth + 1);
                m["^b"] = pick(2) == 0 ? schema(depth + 1) : scalar();
                v = std::move(m);
                break;
            }
            default:
                v = refs[pick(static_cast<int>(std::size(refs)))];
                break;
            }
            o[k] = std::move(v);
        }
        if (pick(3) == 0) {
            o["$defs"] = json::object{{"a", schema(depth + 1)}, {"b", json::object{{"$ref", "#"}}}};
        }
        return o;
    }

    json::value instance(int depth) {
        if (depth > 3 || pick(3) == 0) {
            return scalar();
        }
        if (pick(2) == 0) {
            json::array a;
            for (int j = pick(4); j > 0; --j) {
                a.push_back(instance(depth + 1));
            }
            return a;
        }
        json::object o;
        for (const char* k : {"a", "b", "bb", "c"}) {
            if (pick(2) == 0) {
                o[k] = instance(depth + 1);
            }
        }
        return o;
    }
};

TEST_F(JsonSchemaRobustnessTest, RandomSchemasNeverThrowAndAlwaysExplain) {
    int with_errors = 0;
    for (int round = 0; round < 3000; ++round) {
        auto s = schema(0);
        auto inst = instance(0);
        std::vector<validation_error> errors;
        ASSERT_NO_THROW(errors = validate_against(inst, s)) << json::serialize(s);
        for (const auto& e : errors) {
            ASSERT_FALSE(e.message.empty()) << json::serialize(s);
        }
        with_errors += errors.empty() ? 0 : 1;
    }
    // The generator must actually exercise error paths (and valid ones).
    EXPECT_GT(with_errors, 300);
    EXPECT_LT(with_errors, 2900);
}

TEST_F(JsonSchemaRobustnessTest, RegistryWithRandomDocumentsNeverThrows) {
    schema_registry reg;
    for (int i = 0; i < 50; ++i) {
        auto doc = schema(0);
        if (doc.is_object() && pick(2) == 0) {
            doc.as_object()["$id"] = "https://example.com/d" + std::to_string(i % 10) + ".json";
        }
        (void)reg.add(std::move(doc), "d" + std::to_string(i) + ".json");
    }
    for (int i = 0; i < 500; ++i) {
        auto ref = "d" + std::to_string(pick(60)) + ".json" + (pick(2) == 0 ? "#/$defs/a" : "");
        ASSERT_NO_THROW((void)reg.validate(instance(0), ref));
    }
}

} // namespace
} // namespace wopbridge

#include "contract/json_schema.hpp"

#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

namespace wopbridge {
namespace {

namespace json = boost::json;

class JsonSchemaTest : public ::testing::Test {
protected:
    // Validates instance text against schema text.
    static std::vector<validation_error> check(std::string_view schema, std::string_view instance) {
        return validate_against(json::parse(instance), json::parse(schema));
    }
    static bool valid(std::string_view schema, std::string_view instance) {
        auto errors = check(schema, instance);
        return !has_errors(errors);
    }
    static bool has_kind(const std::vector<validation_error>& errors, schema_error_kind k) {
        for (const auto& e : errors) {
            if (e.kind == k) {
                return true;
            }
        }
        return false;
    }
};

TEST_F(JsonSchemaTest, TypeDistinguishesIntegerFromNumber) {
    EXPECT_TRUE(valid(R"({"type":"integer"})", "3"));
    EXPECT_TRUE(valid(R"({"type":"integer"})", "3.0"));
    EXPECT_FALSE(valid(R"({"type":"integer"})", "3.5"));
    EXPECT_TRUE(valid(R"({"type":"number"})", "3.5"));
    EXPECT_FALSE(valid(R"({"type":"number"})", R"("3")"));
    EXPECT_TRUE(valid(R"({"type":["string","null"]})", "null"));
    EXPECT_FALSE(valid(R"({"type":["string","null"]})", "{}"));
    EXPECT_TRUE(valid(R"({"type":"integer"})", "18446744073709551615"));
}

TEST_F(JsonSchemaTest, EnumAndConstCompareNumbersByValue) {
    EXPECT_TRUE(valid(R"({"enum":[1,"a",{"x":[1]}]})", "1.0"));
    EXPECT_TRUE(valid(R"({"enum":[1,"a",{"x":[1]}]})", R"({"x":[1.0]})"));
    EXPECT_FALSE(valid(R"({"enum":[1,"a"]})", R"("b")"));
    EXPECT_TRUE(valid(R"({"const":{"a":1,"b":2}})", R"({"b":2,"a":1})"));
    EXPECT_FALSE(valid(R"({"const":false})", "0"));
}

TEST_F(JsonSchemaTest, PropertiesRequiredAndAdditionalProperties) {
    const char* s = R"({"type":"object","required":["a"],"properties":{"a":{"type":"string"}},
                        "patternProperties":{"^x-":{"type":"integer"}},
                        "additionalProperties":false})";
    EXPECT_TRUE(valid(s, R"({"a":"v","x-n":1})"));
    EXPECT_FALSE(valid(s, R"({"x-n":1})"));
    EXPECT_FALSE(valid(s, R"({"a":"v","x-n":"1"})"));
    auto errors = check(s, R"({"a":"v","b":1})");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].instance_path, "/b");
    EXPECT_EQ(errors[0].schema_path, "/additionalProperties");
    EXPECT_TRUE(valid(R"({"additionalProperties":{"type":"integer"}})", R"({"a":1})"));
    EXPECT_FALSE(valid(R"({"additionalProperties":{"type":"integer"}})", R"({"a":"1"})"));
}

TEST_F(JsonSchemaTest, InstancePathsEscapeTildeAndSlash) {
    auto errors = check(R"({"properties":{"a/b~c":{"type":"string"}}})", R"({"a/b~c":1})");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].instance_path, "/a~1b~0c");
    EXPECT_EQ(errors[0].schema_path, "/properties/a~1b~0c/type");
}

TEST_F(JsonSchemaTest, ItemsPrefixItemsAndArrayBounds) {
    const char* s = R"({"prefixItems":[{"type":"string"}],"items":{"type":"integer"},
                        "minItems":1,"maxItems":3})";
    EXPECT_TRUE(valid(s, R"(["a",1,2])"));
    EXPECT_FALSE(valid(s, R"(["a","b"])"));
    EXPECT_FALSE(valid(s, R"([1])"));
    EXPECT_FALSE(valid(s, "[]"));
    EXPECT_FALSE(valid(s, R"(["a",1,2,3])"));
    auto errors = check(R"({"items":[{"type":"string"}]})", "[1]");
    EXPECT_TRUE(has_kind(errors, schema_error_kind::bad_schema));
}

TEST_F(JsonSchemaTest, UniqueItemsUsesJsonEquality) {
    EXPECT_TRUE(valid(R"({"uniqueItems":true})", R"([1,"1",[1],{"a":1}])"));
    EXPECT_FALSE(valid(R"({"uniqueItems":true})", "[1,1.0]"));
    EXPECT_FALSE(valid(R"({"uniqueItems":true})", R"([{"a":1,"b":2},{"b":2,"a":1}])"));
    EXPECT_TRUE(valid(R"({"uniqueItems":false})", "[1,1]"));
}

TEST_F(JsonSchemaTest, ContainsWithMinAndMaxContains) {
    EXPECT_TRUE(valid(R"({"contains":{"const":2}})", "[1,2]"));
    EXPECT_FALSE(valid(R"({"contains":{"const":2}})", "[1,3]"));
    EXPECT_FALSE(valid(R"({"contains":{"const":2},"minContains":2})", "[2,3]"));
    EXPECT_FALSE(valid(R"({"contains":{"const":2},"maxContains":1})", "[2,2]"));
    EXPECT_TRUE(valid(R"({"contains":{"const":2},"minContains":0})", "[]"));
}

TEST_F(JsonSchemaTest, StringLengthCountsCodePoints) {
    EXPECT_TRUE(valid(R"({"maxLength":2})", "\"\xc3\xa9\xf0\x9f\x98\x80\"")); // é + emoji
    EXPECT_FALSE(valid(R"({"minLength":3})", "\"\xc3\xa9\xf0\x9f\x98\x80\""));
    EXPECT_FALSE(valid(R"({"maxLength":32})", std::string("\"") + std::string(64, 'a') + "\""));
}

TEST_F(JsonSchemaTest, PatternIsUnanchoredEcmaScript) {
    EXPECT_TRUE(valid(R"({"pattern":"b+"})", R"("abbbc")"));
    EXPECT_FALSE(valid(R"({"pattern":"^b+$"})", R"("abbbc")"));
    EXPECT_TRUE(valid(R"({"pattern":"^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$"})", R"("1.0")"));
    EXPECT_FALSE(valid(R"({"pattern":"^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)$"})", R"("1.0.0")"));
}

TEST_F(JsonSchemaTest, InvalidPatternIsASchemaErrorNotACrash) {
    auto errors = check(R"({"pattern":"(unclosed"})", R"("x")");
    ASSERT_FALSE(errors.empty());
    EXPECT_TRUE(has_kind(errors, schema_error_kind::bad_schema));
    errors = check(R"({"patternProperties":{"[z-a]":true}})", R"({"x":1})");
    EXPECT_TRUE(has_kind(errors, schema_error_kind::bad_schema));
}

TEST_F(JsonSchemaTest, LongSubjectsAreNotFedToTheRegexEngine) {
    std::string big = "\"" + std::string(100000, 'a') + "\"";
    auto errors = check(R"({"pattern":"(a|b)*c"})", big);
    EXPECT_TRUE(has_kind(errors, schema_error_kind::limit));
    // Subject x pattern beyond the big-stack budget is refused too.
    std::string long_pattern = "^(" + std::string(300, 'a') + ")*$";
    errors = check(R"({"pattern":")" + long_pattern + "\"}", "\"" + std::string(8000, 'a') + "\"");
    EXPECT_TRUE(has_kind(errors, schema_error_kind::limit));
}

TEST_F(JsonSchemaTest, DeepRegexRecursionRunsOnABigStack) {
    // Overflows an 8 MiB stack when matched inline with libstdc++ (measured): must not crash.
    const char* s = R"({"pattern":"^((((((((((a))))))))))*$"})";
    std::string subject = "\"" + std::string(6000, 'a') + "\"";
    EXPECT_EQ(format_errors(check(s, subject)), "");
    subject = "\"" + std::string(6000, 'a') + "b\"";
    auto errors = check(s, subject);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].kind, schema_error_kind::invalid);
    // The same through patternProperties / additionalProperties on a long key.
    std::string key(6000, 'a');
    auto inst = json::object{{key, 1}};
    auto pp = json::parse(R"({"patternProperties":{"^((((((((((a))))))))))*$":{"type":"integer"}},
                              "additionalProperties":false})");
    EXPECT_TRUE(validate_against(inst, pp).empty());
}

TEST_F(JsonSchemaTest, CatastrophicBacktrackingStopsAtTheMatchLimit) {
    // Exponential for a backtracking engine without a limit: must end soon with a `limit` error.
    const char* s = R"({"pattern":"^(a+)+$"})";
    std::string subject = "\"" + std::string(4000, 'a') + "b\"";
    auto started = std::chrono::steady_clock::now();
    auto errors = check(s, subject);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
    ASSERT_EQ(errors.size(), 1u) << format_errors(errors);
    EXPECT_EQ(errors[0].kind, schema_error_kind::limit);
    EXPECT_EQ(errors[0].message, "pattern matching stopped at the regex engine's backtracking limit");
    // A key of the same shape under patternProperties reports the same limit.
    auto pp = json::parse(R"({"patternProperties":{"^(a+)+$":true}})");
    errors = validate_against(json::object{{std::string(4000, 'a') + "b", 1}}, pp);
    EXPECT_TRUE(has_kind(errors, schema_error_kind::limit));
}

TEST_F(JsonSchemaTest, PatternsMatchCodePointsAndEcmaScriptEscapes) {
    EXPECT_TRUE(valid(R"({"pattern":"^.$"})", "\"\xc3\xa9\"")); // one code point, two bytes
    EXPECT_TRUE(valid(R"({"pattern":"^caf\\u00e9$"})", "\"caf\xc3\xa9\""));
    EXPECT_FALSE(valid(R"({"pattern":"^a$"})", R"("a\n")")); // `$` is the end, not a last newline
}

TEST_F(JsonSchemaTest, NumericBoundsAndMultipleOf) {
    EXPECT_TRUE(valid(R"({"minimum":1,"maximum":3})", "3"));
    EXPECT_FALSE(valid(R"({"minimum":1})", "0.5"));
    EXPECT_FALSE(valid(R"({"exclusiveMaximum":3})", "3"));
    EXPECT_FALSE(valid(R"({"exclusiveMinimum":1})", "1.0"));
    EXPECT_TRUE(valid(R"({"multipleOf":0.01})", "19.99"));
    EXPECT_FALSE(valid(R"({"multipleOf":2})", "-7"));
    EXPECT_TRUE(valid(R"({"multipleOf":2})", "-8"));
    EXPECT_TRUE(valid(R"({"maximum":-1})", "-9223372036854775808"));
    EXPECT_TRUE(has_kind(check(R"({"multipleOf":0})", "1"), schema_error_kind::bad_schema));
}

TEST_F(JsonSchemaTest, CombinatorsAndConditionals) {
    EXPECT_TRUE(valid(R"({"allOf":[{"type":"integer"},{"minimum":2}]})", "2"));
    EXPECT_FALSE(valid(R"({"allOf":[{"type":"integer"},{"minimum":2}]})", "1"));
    EXPECT_TRUE(valid(R"({"anyOf":[{"type":"string"},{"minimum":2}]})", "3"));
    EXPECT_FALSE(valid(R"({"anyOf":[{"type":"string"},{"minimum":2}]})", "1"));
    EXPECT_FALSE(valid(R"({"oneOf":[{"type":"integer"},{"minimum":2}]})", "3"));
    EXPECT_TRUE(valid(R"({"oneOf":[{"type":"integer"},{"minimum":2}]})", "1"));
    EXPECT_FALSE(valid(R"({"not":{"type":"null"}})", "null"));
    const char* cond = R"({"if":{"properties":{"source":{"const":"webhook"}}},
                           "then":{"required":["webhook"]},
                           "else":{"not":{"required":["webhook"]}}})";
    EXPECT_TRUE(valid(cond, R"({"source":"webhook","webhook":{}})"));
    EXPECT_FALSE(valid(cond, R"({"source":"webhook"})"));
    EXPECT_FALSE(valid(cond, R"({"source":"email","webhook":{}})"));
    auto errors = check(cond, R"({"source":"webhook"})");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].schema_path, "/then/required");
}

TEST_F(JsonSchemaTest, DependentRequiredAndPropertyCounts) {
    const char* s =
        R"({"dependentRequired":{"webhookId":["secretFingerprint"]},"maxProperties":2})";
    EXPECT_TRUE(valid(s, R"({"webhookId":"w","secretFingerprint":"f"})"));
    EXPECT_FALSE(valid(s, R"({"webhookId":"w"})"));
    EXPECT_TRUE(valid(s, R"({"other":1})"));
    EXPECT_FALSE(valid(s, R"({"a":1,"b":2,"c":3})"));
    EXPECT_FALSE(valid(R"({"propertyNames":{"maxLength":3}})", R"({"long":1})"));
}

TEST_F(JsonSchemaTest, FormatsAreAsserted) {
    const char* dt = R"({"format":"date-time"})";
    EXPECT_TRUE(valid(dt, R"("2026-11-30T05:44:31Z")"));
    EXPECT_TRUE(valid(dt, R"("2026-11-30t05:44:31.123+01:00")"));
    EXPECT_TRUE(valid(dt, R"("2016-12-31T23:59:60Z")"));
    EXPECT_FALSE(valid(dt, R"("2026-11-30T05:44:31")"));
    EXPECT_FALSE(valid(dt, R"("2026-02-30T05:44:31Z")"));
    EXPECT_FALSE(valid(dt, R"("2026-11-30 05:44:31Z")"));
    EXPECT_FALSE(valid(dt, R"("2026-11-30T12:00:60Z")"));
    EXPECT_TRUE(valid(R"({"format":"date"})", R"("2024-02-29")"));
    EXPECT_FALSE(valid(R"({"format":"date"})", R"("2023-02-29")"));
    EXPECT_TRUE(valid(R"({"format":"uri"})", R"("https://example.com/a?b#c")"));
    EXPECT_FALSE(valid(R"({"format":"uri"})", R"("/relative/path")"));
    EXPECT_TRUE(valid(R"({"format":"uri-reference"})", R"("/relative/path")"));
    EXPECT_TRUE(valid(R"({"format":"email"})", R"("not checked")")); // annotation only
    EXPECT_TRUE(valid(R"({"format":"date-time"})", "42"));           // applies to strings only
}

TEST_F(JsonSchemaTest, AnnotationsAndUnknownKeywordsAreIgnored) {
    EXPECT_TRUE(valid(R"({"$comment":"c","title":"t","description":"d","default":1,
                          "examples":[1],"x-openwop-seeded-from":"y","type":"integer"})",
                      "1"));
}

TEST_F(JsonSchemaTest, BooleanSchemas) {
    EXPECT_TRUE(valid("true", "{}"));
    EXPECT_FALSE(valid("false", "{}"));
    EXPECT_FALSE(valid(R"({"properties":{"a":false}})", R"({"a":1})"));
}

TEST_F(JsonSchemaTest, LocalRefsWithPointerEscapesAndSiblings) {
    const char* s = R"({"$defs":{"a/b":{"type":"integer"},"t~x":{"minimum":5},
                                 "pct%":{"type":"string"}},
                        "properties":{"p":{"$ref":"#/$defs/a~1b","maximum":10},
                                      "q":{"$ref":"#/$defs/t~0x"},
                                      "r":{"$ref":"#/$defs/pct%25"}}})";
    EXPECT_TRUE(valid(s, R"({"p":3,"q":6,"r":"s"})"));
    EXPECT_FALSE(valid(s, R"({"p":"3"})"));
    EXPECT_FALSE(valid(s, R"({"p":11})")); // 2020-12: keywords beside $ref apply
    EXPECT_FALSE(valid(s, R"({"q":4})"));
    EXPECT_FALSE(valid(s, R"({"r":1})"));
    auto errors = check(s, R"({"p":"3"})");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].schema_path, "/properties/p/$ref/type");
}

TEST_F(JsonSchemaTest, AnchorsAndEmbeddedIds) {
    const char* s = R"({"$id":"https://example.com/root.json",
                        "$defs":{"n":{"$anchor":"num","type":"number"},
                                 "emb":{"$id":"nested/inner.json","$defs":{"s":{"type":"string"}}}},
                        "properties":{"a":{"$ref":"#num"},
                                      "b":{"$ref":"nested/inner.json#/$defs/s"}}})";
    EXPECT_TRUE(valid(s, R"({"a":1,"b":"x"})"));
    EXPECT_FALSE(valid(s, R"({"a":"1"})"));
    EXPECT_FALSE(valid(s, R"({"b":1})"));
}

TEST_F(JsonSchemaTest, CrossDocumentRefsResolveAgainstTheReferringBase) {
    schema_registry reg;
    ASSERT_TRUE(reg.add(json::parse(R"({"$id":"https://openwop.dev/spec/v1/payloads.json",
        "$defs":{"x":{"type":"object","required":["id"]}}})"),
                        "payloads.json"));
    ASSERT_TRUE(reg.add(json::parse(R"({"$id":"https://openwop.dev/spec/v1/page.json",
        "properties":{"item":{"$ref":"payloads.json#/$defs/x"}}})"),
                        "page.json"));
    EXPECT_TRUE(reg.validate(json::parse(R"({"item":{"id":1}})"), "page.json").empty());
    auto errors = reg.validate(json::parse(R"({"item":{}})"), "page.json");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].instance_path, "/item");
    EXPECT_EQ(errors[0].schema_path, "/properties/item/$ref/required");
    // Lookup by name with a fragment, and by absolute URI.
    EXPECT_TRUE(reg.contains("payloads.json#/$defs/x"));
    EXPECT_TRUE(reg.contains("https://openwop.dev/spec/v1/payloads.json#/$defs/x"));
    EXPECT_FALSE(reg.contains("payloads.json#/$defs/y"));
    EXPECT_FALSE(reg.validate(json::parse("{}"), "payloads.json#/$defs/x").empty());
}

TEST_F(JsonSchemaTest, DocumentsWithoutIdResolveByFileName) {
    schema_registry reg;
    ASSERT_TRUE(
        reg.add(json::parse(R"({"$defs":{"e":{"type":"string"}}})"), "wopbridge/common.json"));
    ASSERT_TRUE(reg.add(json::parse(R"({"$ref":"common.json#/$defs/e"})"), "wopbridge/user.json"));
    EXPECT_TRUE(reg.validate(json::parse(R"("s")"), "wopbridge/user.json").empty());
    EXPECT_FALSE(reg.validate(json::parse("1"), "wopbridge/user.json").empty());
}

TEST_F(JsonSchemaTest, UnresolvedRefIsReportedDistinctlyAndTheRestStillChecked) {
    const char* s = R"({"$id":"https://openwop.dev/spec/v2/x.json","type":"object",
                        "properties":{"id":{"$ref":"ids.schema.json#/$defs/runId"},
                                      "n":{"type":"integer"}}})";
    auto errors = check(s, R"({"id":"r","n":1})");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].kind, schema_error_kind::unresolved_ref);
    EXPECT_NE(errors[0].message.find("https://openwop.dev/spec/v2/ids.schema.json"),
              std::string::npos);
    EXPECT_TRUE(has_errors(errors));
    EXPECT_FALSE(has_errors(errors, /*tolerate_unresolved_refs=*/true));
    errors = check(s, R"({"id":"r","n":"1"})");
    EXPECT_TRUE(has_errors(errors, true));
    // A missing pointer inside a known document is a schema error, not an unresolved ref.
    errors = check(R"({"$ref":"#/$defs/missing"})", "1");
    EXPECT_TRUE(has_kind(errors, schema_error_kind::bad_schema));
}

TEST_F(JsonSchemaTest, RecursiveRefsStopAtTheDepthLimit) {
    auto errors = check(R"({"$ref":"#"})", "1");
    EXPECT_TRUE(has_kind(errors, schema_error_kind::limit));
    errors = check(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},
                       "$ref":"#/$defs/a"})",
                   "1");
    EXPECT_TRUE(has_kind(errors, schema_error_kind::limit));
    // Legitimate recursion over a finite instance is fine.
    const char* tree =
        R"({"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#"}}}})";
    EXPECT_TRUE(valid(tree, R"({"kids":[{"kids":[{}]},{}]})"));
    EXPECT_FALSE(valid(tree, R"({"kids":[{"kids":[1]}]})"));
}

TEST_F(JsonSchemaTest, ExponentialSchemasHitTheWorkBudget) {
    // Each level fails both branches, so evaluation doubles per level up to the depth limit.
    const char* s = R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"}]}},
                        "$ref":"#/$defs/a"})";
    auto errors = check(s, "1");
    EXPECT_TRUE(has_kind(errors, schema_error_kind::limit));
    EXPECT_LT(errors.size(), 10000u);
}

TEST_F(JsonSchemaTest, MalformedSchemasYieldErrorsNotCrashes) {
    const char* hostile[] = {
        R"({"type":"strnig"})",
        R"({"type":7})",
        R"({"enum":"x"})",
        R"({"required":"a"})",
        R"({"required":[1]})",
        R"({"properties":[]})",
        R"({"properties":{"a":3}})",
        R"({"minLength":-1})",
        R"({"maxItems":"2"})",
        R"({"allOf":[]})",
        R"({"anyOf":{}})",
        R"({"$ref":7})",
        R"({"$ref":"http://[bad"})",
        R"({"$ref":"#/a~2"})",
        R"({"$id":5})",
        R"({"minimum":"0"})",
        R"({"dependentRequired":{"a":"b"}})",
        R"({"pattern":5})",
        R"({"$ref":"#%zz"})",
        R"({"prefixItems":{}})",
        R"({"if":3,"then":4})",
    };
    for (const char* s : hostile) {
        EXPECT_TRUE(has_kind(check(s, "{\"a\":\"x\"}"), schema_error_kind::bad_schema) ||
                    has_kind(check(s, "\"str\""), schema_error_kind::bad_schema) ||
                    has_kind(check(s, "[1]"), schema_error_kind::bad_schema) ||
                    has_kind(check(s, "1"), schema_error_kind::bad_schema))
            << s;
    }
    // A non-schema document is refused by the registry.
    schema_registry reg;
    EXPECT_FALSE(reg.add(json::parse("[1]"), "a.json"));
    EXPECT_FALSE(reg.add(json::parse(R"({"$id":"::::"})"), "b.json"));
    EXPECT_TRUE(reg.add(json::parse("{}"), "c.json"));
    EXPECT_FALSE(reg.add(json::parse("{}"), "c.json")); // name taken
    auto errors = reg.validate(json::parse("1"), "nope.json");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].kind, schema_error_kind::unresolved_ref);
}

TEST_F(JsonSchemaTest, DeeplyNestedInstanceIsBounded) {
    json::value v = json::array();
    json::value* cur = &v;
    for (int i = 0; i < 1000; ++i) {
        cur->as_array().push_back(json::array());
        cur = &cur->as_array().back();
    }
    auto errors =
        check(R"({"$defs":{"n":{"items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"})", "[[[]]]");
    EXPECT_TRUE(errors.empty());
    errors = validate_against(v, json::parse(R"({"$defs":{"n":{"items":{"$ref":"#/$defs/n"}}},
                                                 "$ref":"#/$defs/n"})"));
    EXPECT_TRUE(has_kind(errors, schema_error_kind::limit));
}

TEST_F(JsonSchemaTest, MessagesNeverQuoteInstanceValues) {
    const char* secret = "whsec_c2VjcmV0LXZhbHVlLWRvLW5vdC1sb2c=";
    std::string inst = std::string(R"({"k":")") + secret + "\"}";
    const char* schemas[] = {
        R"({"properties":{"k":{"maxLength":3}}})",
        R"({"properties":{"k":{"pattern":"^x$"}}})",
        R"({"properties":{"k":{"enum":["a"]}}})",
        R"({"properties":{"k":{"const":"a"}}})",
        R"({"properties":{"k":{"format":"date-time"}}})",
        R"({"properties":{"k":{"type":"integer"}}})",
        R"({"additionalProperties":false})",
    };
    for (const char* s : schemas) {
        auto errors = check(s, inst);
        ASSERT_FALSE(errors.empty()) << s;
        EXPECT_EQ(format_errors(errors).find("whsec_"), std::string::npos) << s;
    }
}

TEST_F(JsonSchemaTest, AddDirectoryNamesFilesByRelativePath) {
    testing::temp_dir dir;
    std::filesystem::create_directories(dir.path() / "v2");
    std::ofstream(dir.path() / "a.schema.json") << R"({"type":"string"})";
    std::ofstream(dir.path() / "v2" / "b.schema.json") << R"({"$ref":"../a.schema.json"})";
    std::ofstream(dir.path() / "openapi.json") << R"({"openapi":"3.1.0"})";
    schema_registry reg;
    auto n = reg.add_directory(dir.path());
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 2u);
    EXPECT_TRUE(reg.validate(json::parse(R"("s")"), "v2/b.schema.json").empty());
    EXPECT_FALSE(reg.validate(json::parse("1"), "v2/b.schema.json").empty());
    EXPECT_FALSE(reg.contains("openapi.json"));
    std::ofstream(dir.path() / "bad.schema.json") << "{not json";
    schema_registry reg2;
    EXPECT_FALSE(reg2.add_directory(dir.path()));
}

} // namespace
} // namespace wopbridge

// Decoding YAML into options structs: every supported type, strict type errors with file:line:col
// and key path, unknown / duplicate / missing keys, enum names, checks, and path resolution.
#include "common/config/decode.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/config/load.h"
#include "tests/config/sample_options.h"

namespace dice::config::testing {
namespace {

Result<SampleOptions> load(const std::string& text,
                           const std::vector<std::string>& overrides = {}) {
  return load_config_text<SampleOptions>(text, "t.yaml", overrides, "/base");
}

// The error message of a load that must fail.
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  Result<SampleOptions> result = load(text, overrides);
  EXPECT_FALSE(result.ok()) << "loaded although it should not:\n" << text;
  if (result.ok()) return "";
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  return result.status().message();
}

TEST(ConfigDecodeTest, DecodesEveryFieldType) {
  Result<SampleOptions> r = load(R"(
name: run7
flag: true
count: 12
port: 65535
big: -9000000000
ratio: 0.25
rate: 2.5e-3
text: "two words"
mode: slow
color: blue
ids: [4, 5, 6]
weights: {a: 1.5, b: 2}
inner: {x: 7, label: deep}
inners:
  - x: 2
  - label: second
limit: 9
extra: {x: 3}
)");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const SampleOptions& o = *r;
  EXPECT_EQ(o.name, "run7");
  EXPECT_TRUE(o.flag);
  EXPECT_EQ(o.count, 12);
  EXPECT_EQ(o.port, 65535);
  EXPECT_EQ(o.big, -9000000000LL);
  EXPECT_FLOAT_EQ(o.ratio, 0.25f);
  EXPECT_DOUBLE_EQ(o.rate, 2.5e-3);
  EXPECT_EQ(o.text, "two words");
  EXPECT_EQ(o.mode, "slow");
  EXPECT_EQ(o.color, Color::kBlue);
  EXPECT_EQ(o.ids, (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(o.weights.size(), 2u);
  EXPECT_DOUBLE_EQ(o.weights.at("a"), 1.5);
  EXPECT_EQ(o.inner.x, 7);
  EXPECT_EQ(o.inner.label, "deep");
  ASSERT_EQ(o.inners.size(), 2u);
  EXPECT_EQ(o.inners[0].x, 2);
  EXPECT_EQ(o.inners[0].label, "a");  // a list element starts from the struct's defaults
  EXPECT_EQ(o.inners[1].label, "second");
  ASSERT_TRUE(o.limit.has_value());
  EXPECT_EQ(*o.limit, 9);
  ASSERT_TRUE(o.extra.has_value());
  EXPECT_EQ(o.extra->x, 3);
}

TEST(ConfigDecodeTest, AbsentKeysKeepDefaultsAndNullClearsOptionals) {
  Result<SampleOptions> r = load("name: n\nlimit: null\nextra: ~\ninner:\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->count, 3);
  EXPECT_EQ(r->mode, "fast");
  EXPECT_EQ(r->color, Color::kRed);
  EXPECT_EQ(r->inner.x, 1);  // an empty section keeps its defaults
  EXPECT_FALSE(r->limit.has_value());
  EXPECT_FALSE(r->extra.has_value());
}

TEST(ConfigDecodeTest, MalformedYamlNamesFileLineAndColumn) {
  std::string message = error_of("name: n\ncount: 3\nids: [1, 2\n");
  EXPECT_NE(message.find("t.yaml:4:1: invalid YAML"), std::string::npos) << message;

  message = error_of("name: n\n  count: 3\n");
  EXPECT_NE(message.find("t.yaml:2:8: invalid YAML"), std::string::npos) << message;
}

TEST(ConfigDecodeTest, TextTheParserCannotAdvanceOnIsAnErrorNotAHang) {
  // yaml-cpp's own LoadAll never returns on these.
  EXPECT_EQ(error_of(","), "t.yaml:1:1: invalid YAML: text here is neither a key nor a value");
  EXPECT_EQ(error_of("name: n\n...\n,\n"),
            "t.yaml:3:1: invalid YAML: text here is neither a key nor a value");
  std::string junk =
      ",`\xc1\x81\xb6"
      "1\x16m\xb2xM'\xd5\xa4({Tm";
  EXPECT_NE(error_of(junk).find("invalid YAML"), std::string::npos);
}

TEST(ConfigDecodeTest, WrongTypesNameKeyPathPositionAndExpectation) {
  EXPECT_EQ(error_of("name: n\ncount: abc\n"), "t.yaml:2:8: count: expected an integer, got 'abc'");
  EXPECT_EQ(error_of("name: n\ninner:\n  x: 1.5\n"),
            "t.yaml:3:6: inner.x: expected an integer, got '1.5'");
  EXPECT_EQ(error_of("name: n\nrate: fast\n"), "t.yaml:2:7: rate: expected a number, got 'fast'");
  EXPECT_EQ(error_of("name: n\nflag: maybe\n"),
            "t.yaml:2:7: flag: expected true or false, got 'maybe'");
  EXPECT_EQ(error_of("name: n\ntext: {a: 1}\n"), "t.yaml:2:7: text: expected a string, got a map");
  EXPECT_EQ(error_of("name: n\nids: 3\n"), "t.yaml:2:6: ids: expected a list, got '3'");
  EXPECT_EQ(error_of("name: n\ninner: [1]\n"),
            "t.yaml:2:8: inner: expected a map of keys, got a list");
  EXPECT_EQ(error_of("name: n\nweights: {a: x}\n"),
            "t.yaml:2:11: weights.a: expected a number, got 'x'");
  EXPECT_EQ(error_of("name: n\ninners:\n  - x: 1\n  - x: no\n"),
            "t.yaml:4:8: inners[1].x: expected an integer, got 'no'");
}

TEST(ConfigDecodeTest, IntegersMustFitTheirType) {
  EXPECT_EQ(error_of("name: n\nport: 70000\n"),
            "t.yaml:2:7: port: expected an integer in [0, 65535], got '70000'");
  EXPECT_EQ(error_of("name: n\nport: -1\n"),
            "t.yaml:2:7: port: expected an integer in [0, 65535], got '-1'");
  EXPECT_NE(error_of("name: n\ncount: 99999999999\n").find("expected an integer in [-2147483648"),
            std::string::npos);
  EXPECT_NE(error_of("name: n\ncount: 0x10\n").find("expected an integer, got '0x10'"),
            std::string::npos);
}

// Whole numbers past the 64-bit range are out of range like any other. Found by config_fuzz: the
// check converted them to long long first, which is undefined behaviour (on x86 they became
// INT64_MIN, and the message said "expected an integer").
TEST(ConfigDecodeTest, HugeWholeNumbersAreOutOfRange) {
  EXPECT_NE(error_of("name: n\ncount: 16999999999999999999999999999\n")
                .find("expected an integer in [-2147483648, 2147483647], got '1699"),
            std::string::npos);
  EXPECT_NE(
      error_of("name: n\nport: 1e300\n").find("expected an integer in [0, 65535], got '1e300'"),
      std::string::npos);
  EXPECT_NE(error_of("name: n\ncount: -1e30\n").find("expected an integer in [-2147483648"),
            std::string::npos);
}

TEST(ConfigDecodeTest, UnknownKeysAreErrorsWithSuggestions) {
  EXPECT_EQ(error_of("name: n\ncuont: 3\n"),
            "t.yaml:2:1: cuont: unknown key 'cuont' (did you mean 'count'?)");
  EXPECT_EQ(error_of("name: n\ninner:\n  lable: q\n"),
            "t.yaml:3:3: inner.lable: unknown key 'lable' (did you mean 'label'?)");
  // Nothing close: list what is allowed instead of guessing.
  EXPECT_EQ(error_of("name: n\ninner:\n  zzzzzz: q\n"),
            "t.yaml:3:3: inner.zzzzzz: unknown key 'zzzzzz' (known keys: x, label)");
}

TEST(ConfigDecodeTest, DuplicateKeysAreErrors) {
  EXPECT_EQ(error_of("name: n\ncount: 1\ncount: 2\n"),
            "t.yaml:3:1: count: duplicate key 'count' (first given at line 2)");
}

TEST(ConfigDecodeTest, MissingRequiredKeysAreErrors) {
  EXPECT_EQ(error_of("count: 1\n"), "t.yaml:1:1: name: missing required key 'name'");
  EXPECT_EQ(error_of(""), "t.yaml: name: missing required key 'name'");
  // Present but null is not the same as absent: it is the wrong type.
  EXPECT_EQ(error_of("name:\n"),
            "t.yaml:1:1: name: expected a string, got null (write \"\" for an empty string)");
}

TEST(ConfigDecodeTest, EnumsAreReadByName) {
  Result<SampleOptions> r = load("name: n\ncolor: green\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->color, Color::kGreen);
  EXPECT_EQ(error_of("name: n\ncolor: purple\n"),
            "t.yaml:2:8: color: expected one of red, green, blue, got 'purple'");
  EXPECT_EQ(
      error_of("name: n\ncolor: gren\n"),
      "t.yaml:2:8: color: expected one of red, green, blue, got 'gren' (did you mean 'green'?)");
  EXPECT_EQ(error_of("name: n\ncolor: 1\n"),
            "t.yaml:2:8: color: expected one of red, green, blue, got '1'");
}

TEST(ConfigDecodeTest, ChecksReportRangesAndChoices) {
  EXPECT_EQ(error_of("name: n\ninner: {x: 11}\n"),
            "t.yaml:2:12: inner.x: must be in [0, 10], got 11");
  EXPECT_EQ(error_of("name: n\nrate: 0\n"), "t.yaml:2:7: rate: must be > 0, got 0");
  EXPECT_EQ(error_of("name: n\nratio: 1.5\n"), "t.yaml:2:8: ratio: must be in [0, 1], got 1.5");
  EXPECT_EQ(error_of("name: n\nids: [1, -2]\n"), "t.yaml:2:10: ids[1]: must be >= 0, got -2");
  EXPECT_EQ(error_of("name: n\nweights: {a: 1, b: -1}\n"),
            "t.yaml:2:17: weights.b: must be > 0, got -1");
  EXPECT_EQ(error_of("name: n\nlimit: 0\n"), "t.yaml:2:8: limit: must be >= 1, got 0");
  EXPECT_EQ(error_of("name: n\nmode: slwo\n"),
            "t.yaml:2:7: mode: must be one of fast, slow, got 'slwo' (did you mean 'slow'?)");
  EXPECT_EQ(error_of("name: \"\"\n"), "t.yaml:1:7: name: must not be empty");
  EXPECT_EQ(error_of("name: n\nflag: true\n"),
            "t.yaml:1:1: ids: must not be empty when flag is true");
  // Boundaries are inside the range.
  EXPECT_TRUE(load("name: n\ninner: {x: 10}\nratio: 0\n").ok());
}

TEST(ConfigDecodeTest, ReportsEveryDecodeErrorInOnePass) {
  std::string message = error_of("name: n\ncount: abc\ncolor: pink\nbogus: 1\n");
  EXPECT_NE(message.find("t.yaml:2:8: count:"), std::string::npos) << message;
  EXPECT_NE(message.find("t.yaml:3:8: color:"), std::string::npos) << message;
  EXPECT_NE(message.find("t.yaml:4:1: bogus:"), std::string::npos) << message;
}

TEST(ConfigDecodeTest, TopLevelMustBeAMap) {
  EXPECT_EQ(error_of("- a\n- b\n"), "t.yaml:1:1: expected a map of keys, got a list");
  EXPECT_EQ(error_of("a: 1\n---\nb: 2\n"),
            "t.yaml: expected one YAML document, found more (separated by ---)");
}

TEST(ConfigDecodeTest, RelativePathsResolveAgainstTheFileDirectory) {
  Result<SampleOptions> r =
      load("name: n\nfile: data/x.json\nfiles: [a.txt, /abs/b.txt, ../c.txt]\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->file, "/base/data/x.json");
  EXPECT_EQ(r->files, (std::vector<std::string>{"/base/a.txt", "/abs/b.txt", "/c.txt"}));
}

TEST(ConfigDecodeTest, DefaultAndOverridePathsResolveAgainstTheWorkingDirectory) {
  std::string cwd = working_directory();
  Result<SampleOptions> r = load("name: n\n");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->file, cwd + "/default.txt");
  r = load("name: n\nfile: in_file.txt\n", {"file=from_cli.txt"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->file, cwd + "/from_cli.txt");
}

TEST(ConfigDecodeTest, FileNotFoundNamesTheFile) {
  Result<SampleOptions> r = load_config_file<SampleOptions>("/nonexistent/dir/x.yaml", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "/nonexistent/dir/x.yaml: no such config file");
}

TEST(ConfigDecodeTest, ValidateConfigChecksHandBuiltOptions) {
  SampleOptions options;
  options.name = "n";
  EXPECT_TRUE(validate_config(options).ok());
  options.inner.x = 42;
  options.ids = {1, -5};
  Status status = validate_config(options);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "ids[1]: must be >= 0, got -5\ninner.x: must be in [0, 10], got 42");
}

}  // namespace
}  // namespace dice::config::testing

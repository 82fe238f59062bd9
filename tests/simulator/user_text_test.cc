// simulator/user_text.h: user strings in error messages and log lines are
// escaped and bounded.
#include "simulator/user_text.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/spec.h"

namespace shardplan::simulator {
namespace {

using ::testing::HasSubstr;

TEST(UserTextTest, ShortTextIsQuotedWhole) {
  EXPECT_EQ(QuoteUserText("llama"), "\"llama\"");
  EXPECT_EQ(QuoteUserText(""), "\"\"");
}

TEST(UserTextTest, LongTextIsCutToAPrefixAndItsSize) {
  const std::string quoted = QuoteUserText(std::string(100000, 'x'));
  EXPECT_EQ(quoted, absl::StrCat("\"", std::string(kMaxQuotedBytes, 'x'),
                                 "\"...(100000 bytes)"));
}

TEST(UserTextTest, ControlCharactersAndQuotesAreEscaped) {
  EXPECT_EQ(QuoteUserText("a\nb\"c\x01"), "\"a\\nb\\\"c\\x01\"");
  const std::string logged = EscapeForLog("name\nE1124 forged\r\n");
  EXPECT_FALSE(absl::StrContains(logged, "\n"));
  EXPECT_FALSE(absl::StrContains(logged, "\r"));
  EXPECT_THAT(logged, HasSubstr("\\n"));
}

TEST(UserTextTest, LogTextIsBounded) {
  std::string expected;
  // Each newline escapes to two bytes; the cut is on the input.
  for (size_t i = 0; i < kMaxLoggedBytes; ++i) expected += "\\n";
  expected += "...(10000 bytes)";
  EXPECT_EQ(EscapeForLog(std::string(10000, '\n')), expected);
}

// Every message that echoes a request string goes through QuoteUserText.
TEST(UserTextTest, CatalogAndHardwareErrorsQuoteAShortPrefix) {
  const std::string name(100000, 'y');
  absl::StatusOr<shardplan::v1::ModelSpec> model = FindCatalogModel(name);
  ASSERT_FALSE(model.ok());
  EXPECT_LT(model.status().message().size(), 1024u);
  EXPECT_THAT(model.status().message(), HasSubstr("(100000 bytes)"));
  absl::StatusOr<shardplan::v1::HardwareSpec> hardware =
      FindCatalogHardware(name);
  ASSERT_FALSE(hardware.ok());
  EXPECT_LT(hardware.status().message().size(), 1024u);
  absl::StatusOr<shardplan::v1::ModelSpec> hf =
      ModelSpecFromHfConfig(absl::StrCat(
          R"({"hidden_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "vocab_size": 100, "model_type": ")",
          name, R"("})"));
  ASSERT_FALSE(hf.ok());
  EXPECT_LT(hf.status().message().size(), 1024u);
  EXPECT_THAT(hf.status().message(), HasSubstr("unsupported model_type"));
  // A malformed JSON whose error text would quote a long token.
  hf = ModelSpecFromHfConfig(absl::StrCat(R"({"a": )", name));
  ASSERT_FALSE(hf.ok());
  EXPECT_LT(hf.status().message().size(), 1024u);
}

}  // namespace
}  // namespace shardplan::simulator

// Flag parsing (unit) and start-up against the repository's configs/local.yaml.
#include "net/service/service_flags.h"
#include "common/exit_codes.h"
#include "net/service/worker_loop.h"

#include <gtest/gtest.h>

#include <sstream>

namespace dice::service {
namespace {

Result<ServiceFlags> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "dice-test");
  return parse_service_flags(static_cast<int>(args.size()), args.data());
}

std::string error_of(std::vector<const char*> args) {
  Result<ServiceFlags> flags = parse(std::move(args));
  EXPECT_FALSE(flags.ok());
  if (flags.ok()) return "";
  EXPECT_EQ(flags.status().code(), StatusCode::kInvalidArgument);
  return flags.status().message();
}

TEST(ServiceFlagsTest, ParsesEveryFlagAndOverrides) {
  auto flags = parse({"--config", "c.yaml", "--print-config", "--run-id=r1", "--worker-index", "3",
                      "--metrics-port=9301", "--log-level", "debug", "a.b=1", "c.d[0].e=x y"});
  ASSERT_TRUE(flags.ok()) << flags.status().to_string();
  EXPECT_EQ(flags->config_path, "c.yaml");
  EXPECT_TRUE(flags->print_config);
  EXPECT_EQ(flags->run_id, "r1");
  ASSERT_TRUE(flags->worker_index.has_value());
  EXPECT_EQ(*flags->worker_index, 3);
  ASSERT_TRUE(flags->metrics_port.has_value());
  EXPECT_EQ(*flags->metrics_port, 9301);
  ASSERT_TRUE(flags->log_level.has_value());
  EXPECT_EQ(*flags->log_level, LogLevel::kDebug);
  EXPECT_FALSE(flags->help);
  EXPECT_EQ(flags->overrides, (std::vector<std::string>{"a.b=1", "c.d[0].e=x y"}));
}

TEST(ServiceFlagsTest, ResumeIsTheLearnersFlag) {
  auto flags = parse({"--config", "c.yaml", "--resume"});
  ASSERT_TRUE(flags.ok()) << flags.status().to_string();
  EXPECT_TRUE(flags->resume);
  EXPECT_FALSE(parse({"--config", "c.yaml"})->resume);

  std::ostringstream out, err;
  const char* argv[] = {"dice-reward", "--config", "c.yaml", "--resume"};
  bool ran = false;
  EXPECT_EQ(run_service_main(
                "reward", 4, argv, [&](ServiceContext&) { return ran = true, 0; }, out, err),
            2);
  EXPECT_FALSE(ran);
  EXPECT_NE(err.str().find("--resume is dice-learner's flag"), std::string::npos) << err.str();
}

TEST(ServiceFlagsTest, DefaultsWhenOnlyConfigGiven) {
  auto flags = parse({"--config=c.yaml"});
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(flags->config_path, "c.yaml");
  EXPECT_FALSE(flags->print_config);
  EXPECT_TRUE(flags->run_id.empty());
  EXPECT_FALSE(flags->worker_index.has_value());
  EXPECT_FALSE(flags->log_level.has_value());
  EXPECT_TRUE(flags->overrides.empty());
}

TEST(ServiceFlagsTest, HelpNeedsNoConfig) {
  auto flags = parse({"--help"});
  ASSERT_TRUE(flags.ok());
  EXPECT_TRUE(flags->help);
  EXPECT_TRUE(parse({"-h"}).ok());
}

TEST(ServiceFlagsTest, BadFlagsNameWhatIsWrong) {
  EXPECT_NE(error_of({}).find("--config FILE is required"), std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "--verbose"}).find("unknown flag '--verbose'"),
            std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "-v"}).find("unknown flag '-v'"), std::string::npos);
  EXPECT_NE(error_of({"--config"}).find("--config: missing value"), std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "--worker-index", "-1"}).find("--worker-index: '-1'"),
            std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "--worker-index", "3x"}).find("non-negative integer"),
            std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "--worker-index=99999999999"}).find("--worker-index"),
            std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "--metrics-port", "70000"}).find("--metrics-port: '70000'"),
            std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "--metrics-port", "x"}).find("not a port number"),
            std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "--log-level", "loud"}).find("'loud' is not one of"),
            std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "--run-id", "a b"}).find("--run-id: 'a b'"),
            std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "stray"}).find("argument 3 'stray'"), std::string::npos);
  EXPECT_NE(error_of({"--config", "c", "=1"}).find("key.path=value"), std::string::npos);
  EXPECT_NE(error_of({"--config="}).find("--config: expected a file path"), std::string::npos);
}

const std::string kLocalConfig = std::string(DICE_SOURCE_DIR) + "/configs/local.yaml";

TEST(PrepareServiceTest, FlagsWinOverConfigAndConfigureLogging) {
  ServiceFlags flags;
  flags.config_path = kLocalConfig;
  flags.run_id = "flag-run";
  flags.worker_index = 2;
  flags.log_level = LogLevel::kWarn;
  flags.overrides = {"run.id=override-run", "learner.group_size=8"};
  auto context = prepare_service("reward", flags);
  ASSERT_TRUE(context.ok()) << context.status().to_string();
  EXPECT_EQ(context->config.run.id, "flag-run");
  EXPECT_EQ(context->config.run.log_level, LogLevel::kWarn);
  EXPECT_EQ(context->config.learner.group_size, 8);
  EXPECT_EQ(log_options().component, "reward-2");
  EXPECT_EQ(log_options().run_id, "flag-run");
  EXPECT_EQ(log_options().level, LogLevel::kWarn);
  log_configure(LogOptions{});
}

TEST(PrepareServiceTest, MakesRunIdWhenNoneIsSet) {
  ServiceFlags flags;
  flags.config_path = kLocalConfig;
  flags.overrides = {"run.id="};
  auto context = prepare_service("learner", flags);
  ASSERT_TRUE(context.ok()) << context.status().to_string();
  EXPECT_EQ(context->config.run.id.size(), std::string("r20261130-004053").size());
  EXPECT_EQ(context->config.run.id[0], 'r');
  EXPECT_EQ(log_options().component, "learner");
  log_configure(LogOptions{});
}

// cluster.transport.poll_spin_us reaches a worker's transport options; out-of-range values are a
// config error naming the field.
TEST(PrepareServiceTest, TransportSpinReachesTheWorkerTransport) {
  ServiceFlags flags;
  flags.config_path = kLocalConfig;
  auto context = prepare_service("reward", flags);
  ASSERT_TRUE(context.ok()) << context.status().to_string();
  auto options = worker_loop_options(*context, schema::Role::REWARD, 2);
  ASSERT_TRUE(options.ok()) << options.status().to_string();
  EXPECT_EQ(options->transport.poll_spin_us, transport::kAutoSpin);

  flags.overrides = {"cluster.transport.poll_spin_us=0"};
  context = prepare_service("reward", flags);
  ASSERT_TRUE(context.ok()) << context.status().to_string();
  options = worker_loop_options(*context, schema::Role::REWARD, 2);
  ASSERT_TRUE(options.ok()) << options.status().to_string();
  EXPECT_EQ(options->transport.poll_spin_us, 0);

  flags.overrides = {"cluster.transport.poll_spin_us=-2"};
  context = prepare_service("reward", flags);
  ASSERT_FALSE(context.ok());
  EXPECT_NE(context.status().message().find("cluster.transport.poll_spin_us"), std::string::npos)
      << context.status().message();
  log_configure(LogOptions{});
}

int run_main(std::vector<const char*> args, std::string* out, std::string* err, bool* ran) {
  args.insert(args.begin(), "dice-test");
  std::ostringstream out_stream, err_stream;
  *ran = false;
  int code = run_service_main(
      "learner", static_cast<int>(args.size()), args.data(),
      [&](ServiceContext& context) {
        *ran = true;
        return context.config.run.id == "main-run" ? 7 : 1;
      },
      out_stream, err_stream);
  *out = out_stream.str();
  *err = err_stream.str();
  log_configure(LogOptions{});
  return code;
}

TEST(RunServiceMainTest, ExitCodesForEachPath) {
  std::string out, err;
  bool ran;
  EXPECT_EQ(run_main({"--bogus"}, &out, &err, &ran), 2);
  EXPECT_NE(err.find("unknown flag '--bogus'"), std::string::npos);
  EXPECT_NE(err.find("usage: dice-test"), std::string::npos);
  EXPECT_FALSE(ran);

  EXPECT_EQ(run_main({"--help"}, &out, &err, &ran), 0);
  EXPECT_NE(out.find("--worker-index N"), std::string::npos);
  // The exit statuses the supervisor reads, from common/exit_codes.h.
  EXPECT_NE(out.find(std::to_string(kExitNoDiskSpace) + " too little free disk space, " +
                     std::to_string(kExitNoDevice) + " no GPU or toolchain"),
            std::string::npos)
      << out;
  EXPECT_FALSE(ran);

  EXPECT_EQ(run_main({"--config", "/nonexistent/dice.yaml"}, &out, &err, &ran), 2);
  EXPECT_NE(err.find("/nonexistent/dice.yaml"), std::string::npos);
  EXPECT_FALSE(ran);

  EXPECT_EQ(run_main({"--config", kLocalConfig.c_str(), "learner.no_such_key=1"}, &out, &err, &ran),
            2);
  EXPECT_NE(err.find("no_such_key"), std::string::npos);

  EXPECT_EQ(run_main({"--config", kLocalConfig.c_str(), "--print-config", "--run-id", "printed"},
                     &out, &err, &ran),
            0);
  EXPECT_FALSE(ran);
  EXPECT_NE(out.find("id: printed"), std::string::npos) << out;
  EXPECT_NE(out.find("learner:"), std::string::npos);

  EXPECT_EQ(run_main({"--config", kLocalConfig.c_str(), "--run-id", "main-run"}, &out, &err, &ran),
            7);
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace dice::service

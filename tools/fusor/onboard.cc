// fusor onboard: the pre-launch checklist in one command. Each step is the fusor subcommand a
// user would run by hand (profile before and after fusion, optimize, check, tune, plan), run as
// a child process with its output in DIR, so every artifact can be reproduced from the command
// lines the report lists. The report (DIR/report.html) is rendered from DIR/onboard.json.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "fusor/decoder.h"
#include "fusor/engine.h"
#include "fusor/report.h"
#include "fusor/tune.h"
#include "tune_args.h"

extern char** environ;

namespace fusor::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct OnboardArgs {
  TuneArgs tune;
  std::string out_dir, render_only;
  double qps = 1000, headroom = 0.3, cost_per_hour = 0;
  double tokens_per_s = 0;  // a decoder's plan target, instead of qps when given
  bool decoder = false;     // found when the model is loaded
};

std::string self_exe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "fusor" : p.string();
}

std::string quoted(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + (a.find(' ') == std::string::npos ? a : "'" + a + "'");
  return s;
}

// Runs `fusor ARGS...`; returns its exit code. The child gets Ctrl-C as usual (tune then writes
// its best so far); onboard itself ignores it meanwhile, so it can still write the report.
int run_step(const std::vector<std::string>& args, json& commands) {
  std::vector<std::string> argv = {self_exe()};
  argv.insert(argv.end(), args.begin(), args.end());
  commands.push_back("fusor " + quoted(args));
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0].c_str(), nullptr, &attr, cargv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error("cannot start " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

json read_json(const fs::path& path) {
  std::ifstream f(path);
  if (!f) throw Error("cannot read " + path.string());
  try {
    return json::parse(f);
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not valid JSON: " + e.what());
  }
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) throw Error("cannot write " + path.string());
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void render(const fs::path& dir) {
  json onboard = read_json(dir / "onboard.json");
  write_text(dir / "report.html", report::render_onboard_report(onboard.dump()));
}

// The checklist's steps, each a fusor subcommand writing into `dir`; their command lines go to
// `commands`. Returns the plan step's exit code (the plan may fail: the report then has none).
int run_checklist(const OnboardArgs& a, const fs::path& dir, json& commands) {
  const ModelArgs& m = a.tune.model;
  std::vector<std::string> common;  // the options every step shares
  if (!m.config_path.empty()) common.insert(common.end(), {"--config", m.config_path});
  if (m.threads > 0) common.insert(common.end(), {"--threads", std::to_string(m.threads)});
  for (const auto& s : m.shapes) common.insert(common.end(), {"--shape", s});
  const std::string seq = std::to_string(m.seq);
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin() + 2, common.begin(), common.end());  // after the subcommand and model
    return args;
  };
  // `partial_on_interrupt`: the step writes what it has when interrupted (tune), so onboard goes on
  // to report it; any other step's Ctrl-C ends onboard as interrupted (130), not as failed.
  auto step = [&](const char* title, const std::vector<std::string>& args, bool required,
                  bool partial_on_interrupt = false) {
    std::fprintf(stderr, "\n== onboard: %s\n", title);
    int rc = run_step(args, commands);
    if (rc == 130 && !partial_on_interrupt) throw ExitCode{130};
    if (rc != 0 && required) throw Error(std::string(title) + " failed (exit " + std::to_string(rc) + "); see above");
    return rc;
  };
  const std::string p = (dir / "").string();
  step("1/6 profile, unfused", with({"profile", m.model, "--batch", "1", "--seq", seq, "--runs", "20", "--no-fusion", "--json", p + "profile-before.json"}), true);
  step("2/6 profile, fused", with({"profile", m.model, "--batch", "1", "--seq", seq, "--runs", "20", "--json", p + "profile-after.json"}), true);
  step("3/6 optimize", with({"optimize", m.model, "--seq", seq, "-o", p + "model.fused.onnx"}), true);
  int check_rc = step("4/6 precision gate", with({"check", m.model, "--seq", seq, "--report", p + "check.json", "--junit", p + "check.junit.xml"}), false);
  if (check_rc != 0 && check_rc != 1) throw Error("the precision gate could not run (exit " + std::to_string(check_rc) + ")");

  std::vector<std::string> tune = with({"tune", m.model, "--seq", seq, "-o", p + "tuned.yaml"});
  for (const auto& s : a.tune.slos) tune.insert(tune.end(), {"--slo", s});
  char duration[32];
  std::snprintf(duration, sizeof duration, "%g", a.tune.duration_s);
  tune.insert(tune.end(), {"--duration", duration, "--measure", std::to_string(a.tune.measure_per_class)});
  if (!a.tune.trace_path.empty()) tune.insert(tune.end(), {"--trace", a.tune.trace_path});
  if (!a.tune.windows.empty()) tune.insert(tune.end(), {"--windows", a.tune.windows});
  if (!a.tune.max_batches.empty()) tune.insert(tune.end(), {"--max-batch", a.tune.max_batches});
  if (!a.tune.lengths.empty()) tune.insert(tune.end(), {"--lengths", a.tune.lengths});
  if (!a.tune.token_budgets.empty()) tune.insert(tune.end(), {"--token-budgets", a.tune.token_budgets});
  if (!a.tune.step_tokens.empty()) tune.insert(tune.end(), {"--step-tokens", a.tune.step_tokens});
  if (!a.tune.max_running.empty()) tune.insert(tune.end(), {"--max-running", a.tune.max_running});
  if (!a.tune.prefill_chunks.empty()) tune.insert(tune.end(), {"--prefill-chunks", a.tune.prefill_chunks});
  if (a.decoder) tune.insert(tune.end(), {"--output-tokens", std::to_string(a.tune.output_tokens)});
  if (a.tune.no_baseline) tune.push_back("--no-baseline");
  int tune_rc = step("5/6 tune", tune, false, true);
  if (tune_rc != 0 && !(tune_rc == 130 && fs::exists(p + "tuned.yaml"))) throw Error("tune failed (exit " + std::to_string(tune_rc) + ")");

  char number[3][32];
  const bool by_tokens = a.tokens_per_s > 0;
  std::snprintf(number[0], 32, "%g", by_tokens ? a.tokens_per_s : a.qps);
  std::snprintf(number[1], 32, "%g", a.headroom);
  std::snprintf(number[2], 32, "%g", a.cost_per_hour);
  return step("6/6 plan", {"plan", "--tuned", p + "tuned.yaml", by_tokens ? "--tokens-per-s" : "--qps", number[0], "--headroom",
                           number[1], "--cost-per-hour", number[2], "--json", p + "plan.json", "--k8s", p + "k8s"},
              false);
}

// What an earlier run into the same folder wrote: a step that fails now must not leave its old
// output beside the new ones (an old plan.json and k8s/ would deploy the previous config).
void remove_earlier_outputs(const fs::path& dir) {
  for (const char* name : {"profile-before.json", "profile-after.json", "model.fused.onnx", "check.json",
                           "check.junit.xml", "tuned.yaml", "plan.json", "k8s", "onboard.json", "report.html"}) {
    std::error_code ec;
    fs::remove_all(dir / name, ec);
    if (ec) throw Error("cannot remove " + (dir / name).string() + " from an earlier run: " + ec.message());
  }
}

// The onboard document (docs/onboard.md) from the steps' outputs in `dir`.
json onboard_document(const std::string& model, const tune::TunedRecord& record, const fs::path& dir, bool planned,
                      const json& commands) {
  json files = {{"tuned", "tuned.yaml"}, {"optimized", "model.fused.onnx"}, {"check", "check.json"}};
  if (planned) files["k8s"] = "k8s/";  // a failed plan writes no manifests
  json request = json::object();
  for (const auto& [name, dims] : record.request) request[name] = dims;
  return {{"model", model},
          {"machine", record.machine},
          {"generated_at", utc_now()},
          {"request", request},
          {"profile", {{"before", read_json(dir / "profile-before.json")}, {"after", read_json(dir / "profile-after.json")}}},
          {"check", read_json(dir / "check.json")},
          {"tuned", json::parse(tune::tuned_record_json_text(record))},
          {"plan", planned ? read_json(dir / "plan.json") : json(nullptr)},
          {"commands", commands},
          {"files", files}};
}

void onboard(const OnboardArgs& a) {
  if (!a.render_only.empty()) {
    render(a.render_only);
    std::printf("report: %s\n", (fs::path(a.render_only) / "report.html").c_str());
    return;
  }
  const ModelArgs& m = a.tune.model;
  if (m.model.empty()) throw Error("give the MODEL to onboard (or --render-only DIR)");
  if (!fs::is_regular_file(m.model)) throw Error(m.model + ": no such model file");
  for (const std::string& s : a.tune.slos) tune::parse_slo(s);  // before minutes of steps, not in step 5
  fs::path dir = a.out_dir.empty() ? fs::path("onboard-" + fs::path(m.model).parent_path().filename().string()) : fs::path(a.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw Error("cannot create output folder " + dir.string());
  remove_earlier_outputs(dir);

  OnboardArgs with_defaults = a;
  with_defaults.decoder = is_decoder_export(Engine::load(m.model), m.model);
  if (with_defaults.tune.slos.empty()) with_defaults.tune.slos = tune::default_slos(with_defaults.decoder);
  if (with_defaults.tokens_per_s > 0 && !with_defaults.decoder)
    throw Error("--tokens-per-s is for a decoder (generative serving); give --qps");

  json commands = json::array();
  signal(SIGINT, SIG_IGN);
  const int plan_rc = run_checklist(with_defaults, dir, commands);
  signal(SIGINT, SIG_DFL);

  tune::TunedRecord record = tune::load_tuned_record((dir / "tuned.yaml").string());
  const json doc = onboard_document(m.model, record, dir, plan_rc == 0, commands);
  write_text(dir / "onboard.json", doc.dump(1) + "\n");
  render(dir);
  std::printf("\n%s\n%s", tuned_summary(record).c_str(), report::onboard_comparison_table(doc.dump()).c_str());
  std::printf("report: %s\n", (dir / "report.html").c_str());
  if (record.interrupted) throw ExitCode{130};
  if (plan_rc != 0) throw Error("the plan step failed (exit " + std::to_string(plan_rc) + "): the report has no capacity plan");
}

}  // namespace

void add_onboard_command(CLI::App& app) {
  auto args = std::make_shared<OnboardArgs>();
  CLI::App* cmd = app.add_subcommand("onboard", "The pre-launch checklist: profile, optimize, check, tune, plan, and an HTML report");
  args->tune.add_to(*cmd);
  cmd->get_option("model")->required(false);
  cmd->get_option("--slo")->required(false);
  cmd->add_option("--out", args->out_dir, "Output folder (default onboard-<model folder>)");
  cmd->add_option("--qps", args->qps, "Traffic to plan capacity for")->check(positive_number())->capture_default_str();
  cmd->add_option("--tokens-per-s", args->tokens_per_s, "A decoder: generated tokens per second to plan capacity for")
      ->check(positive_number());
  cmd->add_option("--headroom", args->headroom, "Fraction of capacity kept free for peaks, in [0, 0.95)")
      ->check(headroom_fraction())
      ->capture_default_str();
  cmd->add_option("--cost-per-hour", args->cost_per_hour, "Cost of one instance per hour")->check(non_negative_number());
  cmd->add_option("--render-only", args->render_only, "Only render DIR/report.html again from DIR/onboard.json");
  cmd->callback([args] { onboard(*args); });
}

}  // namespace fusor::cli

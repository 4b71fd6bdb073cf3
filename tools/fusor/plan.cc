// fusor plan: instances, utilisation, latency and cost for a target rate, from the curves fusor
// tune measured (include/fusor/capacity.h); --k8s writes manifests that serve the tuned config.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "fusor/capacity.h"
#include "fusor/config.h"
#include "fusor/error.h"
#include "model_args.h"
#include "fusor/tune.h"

namespace fusor::cli {
namespace {

struct PlanArgs {
  std::string tuned_path, json_path, k8s_dir, image = "fusor:latest", model_name;
  capacity::PlanRequest request;
};

// models/minilm-l6/model.onnx -> minilm-l6; resnet.onnx -> resnet.
std::string default_model_name(const std::string& model_path) {
  std::filesystem::path p(model_path);
  std::string name = p.stem().string();
  if ((name == "model" || name.empty()) && !p.parent_path().filename().empty()) name = p.parent_path().filename().string();
  return name.empty() ? "model" : name;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read tuned file");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void plan(PlanArgs& a) {
  if (!a.json_path.empty()) refuse_writing_over_inputs(a.json_path, "--json", {a.tuned_path});
  if (a.image.empty()) throw Error("--image must name a container image", ErrorKind::InvalidArgument);
  tune::TunedRecord record = tune::load_tuned_record(a.tuned_path);
  Config config = load_config(a.tuned_path);  // the manifests serve this file: it must parse
  capacity::CapacityPlan p = capacity::plan_capacity(record, a.request);
  if (!config.serve.classes.count(p.class_name))
    std::fprintf(stderr, "fusor plan: note: %s serves no class '%s'; requests naming it will be refused\n",
                 a.tuned_path.c_str(), p.class_name.c_str());
  if (!a.k8s_dir.empty()) {
    capacity::ManifestOptions m;
    m.model_name = a.model_name.empty() ? default_model_name(record.model) : a.model_name;
    m.image = a.image;
    m.tuned_yaml = read_text(a.tuned_path);
    m.tuned_path = a.tuned_path;
    p.manifests = capacity::write_manifests(capacity::k8s_manifests(p, m), a.k8s_dir);
  }
  std::cout << capacity::capacity_plan_table(p);
  if (!a.k8s_dir.empty()) std::cout << "  written to " << a.k8s_dir << "\n";
  if (!a.json_path.empty()) {
    std::ofstream f(a.json_path);
    f << capacity::capacity_plan_json_text(p) << "\n";
    f.close();
    if (!f) throw Error("cannot write " + a.json_path);
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd = app.add_subcommand("plan", "Instances, utilisation and cost for a target rate, from fusor tune's measurements");
  cmd->add_option("--tuned", args->tuned_path, "tuned.yaml written by fusor tune")->required()->type_name("FILE");
  auto* qps = cmd->add_option("--qps", args->request.qps, "Total requests per second to serve")->check(positive_number());
  auto* tokens = cmd->add_option("--tokens-per-s", args->request.tokens_per_s,
                                 "A generative model: total generated tokens per second to serve (instead of --qps)")
                     ->check(positive_number());
  qps->excludes(tokens);
  cmd->add_option("--class", args->request.class_name, "Traffic class (default: the first latency class)");
  cmd->add_option_function<std::string>(
         "--p99",
         [args](const std::string& text) { args->request.p99_ms = tune::parse_duration_ms(text); },
         "p99 target: 30ms, 0.03s or 30 (ms); default: the class's SLO")
      ->check(CLI::Validator(
          [](std::string& text) {
            return tune::parse_duration_ms(text) ? std::string() : "'" + text + "' is not a positive duration such as 30ms or 0.03s";
          },
          "DURATION"));
  cmd->add_option("--headroom", args->request.headroom, "Fraction of capacity kept free, in [0, 0.95)")
      ->capture_default_str()
      ->check(headroom_fraction());
  cmd->add_option("--cost-per-hour", args->request.cost_per_hour, "Cost of one instance per hour (0: not shown)")
      ->check(non_negative_number());
  cmd->add_option("--k8s", args->k8s_dir, "Write Kubernetes and KServe manifests into this directory")->type_name("DIR");
  cmd->add_option("--json", args->json_path, "Write the plan as JSON")->type_name("FILE");
  cmd->add_option("--image", args->image, "Container image for the manifests (fusor on PATH, model at /models/model.onnx)")
      ->capture_default_str();
  cmd->add_option("--model-name", args->model_name, "Served model name in the manifests (default: from the tuned model path)")
      ->check(CLI::Validator(
          [](std::string& text) {
            return !text.empty() && text.find_first_of("= \t/") == std::string::npos
                       ? std::string()
                       : "'" + text + "' is not a model name (no '=', '/' or whitespace)";
          },
          "NAME"));
  cmd->callback([args, qps, tokens] {
    if (qps->count() == 0 && tokens->count() == 0) throw CLI::RequiredError("--qps (or --tokens-per-s for a generative model)");
    plan(*args);
  });
}

}  // namespace fusor::cli

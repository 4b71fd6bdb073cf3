// fusor: load, optimize, check, profile, serve and tune ONNX models.
#include <iostream>

#include "commands.h"
#include "fusor/error.h"

int main(int argc, char** argv) {
  CLI::App app{"fusor: an inference optimizer and server for ONNX models"};
  app.require_subcommand(1);
  fusor::cli::add_run_command(app);
  fusor::cli::add_bench_command(app);
  fusor::cli::add_profile_command(app);
  fusor::cli::add_check_command(app);
  fusor::cli::add_optimize_command(app);
  fusor::cli::add_serve_command(app);
  fusor::cli::add_tune_command(app);
  fusor::cli::add_onboard_command(app);
  fusor::cli::add_plan_command(app);
  fusor::cli::add_inspect_command(app);
  fusor::cli::add_tokenize_command(app);
  fusor::cli::add_generate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;  // usage errors exit 2, like argparse; --help exits 0
  } catch (const fusor::cli::ExitCode& e) {
    return e.code;
  } catch (const fusor::Error& e) {
    std::cerr << "fusor: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "fusor: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

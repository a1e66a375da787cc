// boundary-verify: the toolkit's command line. Errors go to stderr with the exit codes of
// boundary::cli::ExitCode; results to stdout.
#include <boundary/verify/cli.hpp>
#include <boundary/verify/cli_cases.hpp>
#include <boundary/verify/constants_json.hpp>
#include <boundary/verify/gate.hpp>
#include <boundary/verify/replay.hpp>
#include <boundary/types.hpp>
#include <boundary/verify/version.hpp>
#if BOUNDARY_WITH_GPU
#include <boundary/verify/capture.hpp>
#include <boundary/verify/cli_kernel.hpp>
#include <boundary/verify/cli_rank.hpp>
#include <boundary/gpu/rank_ipc.hpp>
#include <boundary/gpu/draft_boundary.hpp>
#endif

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

int main(int argc, char** argv) {
  using namespace boundary::cli;
  CLI::App app{"boundary-verify: bit-exact reference and verification of the DSpark residual boundary"};
  app.footer(boundary::constants_help());
  app.set_version_flag("--version", std::string("boundary-verify ") + boundary::kVersion + "\n");
  app.require_subcommand(0, 1);  // none: the gate, `boundary-verify --constants cfg.json`
  bool json = false;
  app.add_flag("--json", json, "Print results as JSON instead of text");
  // The source tree's fixtures when this binary runs where it was built; elsewhere none, unless
  // --fixtures names a directory (which must then exist).
  const bool own_fixtures = std::filesystem::is_directory(default_fixtures_dir());
  GateOptions gate;
  if (own_fixtures) gate.fixtures = default_fixtures_dir();
  setup_gate(app, gate);
  SelfTestOptions self_test;
  if (own_fixtures) self_test.fixtures = default_fixtures_dir();
  CLI::App* self_test_cmd = setup_self_test(app, self_test);
  EmulateOptions emulate;
  CLI::App* emulate_cmd = setup_emulate(app, emulate);
  ReplayOptions replay;
  CLI::App* replay_cmd = setup_replay(app, replay);
  ExportOptions export_options;
  CLI::App* export_cmd = setup_export(app, export_options);
  CheckOptions check;
  CLI::App* check_cmd = setup_check(app, check);
#if BOUNDARY_WITH_GPU
  CaptureOptions capture;
  CLI::App* capture_cmd = setup_capture(app, capture);
  KernelOptions kernel;
  CLI::App* kernel_cmd = setup_kernel(app, kernel);
  RankOptions rank;
  CLI::App* rank_cmd = setup_rank(app, rank);
  replay.gpu_hook = make_gpu_replay_hook();
  gate.gpu_hook = self_test.gpu_hook = make_gate_gpu_hook();
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kSuccess : kUsageOrInput;
  }
  try {
    if (emulate_cmd->parsed()) {
      const auto summary = run_emulate(emulate);
      std::cout << (json ? summary.dump(2) + "\n" : format_emulate(summary));
    }
    if (replay_cmd->parsed()) {
      int rc = kSuccess;
      const auto report = run_replay(replay, &rc);
      std::cout << (json ? report.dump(2) + "\n" : format_replay(report));
      return rc;
    }
    if (export_cmd->parsed()) {
      const auto summary = run_export(export_options);
      std::cout << (json ? summary.dump(2) + "\n" : format_export(summary));
    }
    if (check_cmd->parsed()) {
      int rc = kSuccess;
      const auto report = run_check(check, &rc);
      std::cout << (json ? report.dump(2) + "\n" : format_gate(report));
      return rc;
    }
    if (self_test_cmd->parsed()) {
      int rc = kSuccess;
      const auto result = run_self_test(self_test, &rc);
      std::cout << (json ? result.dump(2) + "\n" : format_self_test(result));
      return rc;
    }
#if BOUNDARY_WITH_GPU
    if (capture_cmd->parsed()) {
      int rc = kSuccess;
      const auto result = run_capture(capture, &rc);
      std::cout << (json ? result.dump(2) + "\n" : format_capture(result));
      return rc;
    }
    if (kernel_cmd->parsed()) {
      int rc = kSuccess;
      const auto result = run_kernel(kernel, &rc);
      std::cout << (json ? result.dump(2) + "\n" : format_kernel(result));
      return rc;
    }
    if (rank_cmd->parsed()) {
      int rc = kSuccess;
      const auto result = run_rank(rank, &rc);
      std::cout << (json ? result.dump(2) + "\n" : format_rank(result));
      return rc;
    }
#endif
    if (app.get_subcommands().empty()) {
      if (gate.constants.empty()) {
        std::cerr << "boundary-verify: give --constants cfg.json (the gate) or a subcommand "
                     "(emulate, replay, capture, self-test, export, check); see --help\n";
        return kUsageOrInput;
      }
      int rc = kSuccess;
      const auto report = run_gate(gate, &rc);
      if (!gate.quiet) std::cout << (json ? report.dump(2) + "\n" : format_gate(report));
      return rc;
    }
    return kSuccess;
  } catch (const boundary::InputError& e) {
    std::cerr << "boundary-verify: error: " << e.what() << "\n";
    return kUsageOrInput;
#if BOUNDARY_WITH_GPU
  } catch (const boundary::gpu::RankError& e) {
    std::cerr << "boundary-verify: peer failure: " << e.what() << "\n";
    return kPeerFailure;
  } catch (const boundary::gpu::CudaError& e) {
    std::cerr << "boundary-verify: CUDA error: " << e.what() << "\n";
    return kCudaFailure;
#endif
  } catch (const std::exception& e) {
    std::cerr << "boundary-verify: internal error: " << e.what() << "\n";
    return kInternal;
  }
}

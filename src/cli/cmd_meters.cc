// magneton meters: which energy meters work on this machine, why the others
// do not, and which one `record` would use.
#include <cstdio>
#include <string>

#include "cli/command.h"
#include "energy/energy.h"
#include "base/format.h"

namespace magneton::cli {
namespace {


const char* StatusText(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk: return "available";
    case StatusCode::kPermissionDenied: return "no permission";
    case StatusCode::kFailedPrecondition: return "refused";
    default: return "unavailable";
  }
}

class MetersCommand : public Command {
 public:
  CLI::App* Register(CLI::App& app) override {
    return app.add_subcommand("meters", "List energy meters on this machine: available or why not, and which one "
                                        "`record` uses");
  }

  int Run() override {
    energy::MeterDiscovery d = energy::DiscoverMeters();
    for (const auto& p : d.probes) {
      std::printf("%-11s %-13s %-9s  %s\n", p.name.c_str(), StatusText(p.status), ProvenanceName(p.provenance),
                  p.status.ok() ? p.description.c_str() : p.status.message().c_str());
    }
    if (d.chosen.empty()) {
      std::printf("\nrecord would use: nothing (%s)\n", d.choice_reason.c_str());
      return 1;
    }
    std::string names;
    for (size_t i : d.chosen) names += (names.empty() ? "" : " + ") + d.probes[i].name;
    std::printf("\nrecord would use: %s (%s): %s\n", names.c_str(), ProvenanceName(d.chosen_provenance),
                d.choice_reason.c_str());
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> MakeMetersCommand() { return std::make_unique<MetersCommand>(); }

}  // namespace magneton::cli

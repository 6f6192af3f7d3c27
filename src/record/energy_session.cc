#include "record/energy_session.h"
#include "base/format.h"

#include <fmt/format.h>

namespace magneton {

StatusOr<std::unique_ptr<EnergySession>> EnergySession::Start(TraceWriter* writer) {
  std::unique_ptr<EnergySession> s(new EnergySession());
  s->writer_ = writer;
  s->discovery_ = energy::DiscoverMeters();
  if (s->discovery_.chosen.empty()) return Unavailable(s->discovery_.choice_reason);
  for (size_t index : s->discovery_.chosen) {
    energy::Meter* meter = s->discovery_.probes[index].meter.get();
    auto sampler = std::make_unique<energy::Sampler>(
        meter, [writer](EnergySample sample) { writer->AppendEnergySample(std::move(sample)); });
    MAGNETON_RETURN_IF_ERROR(sampler->Start());
    s->samplers_.push_back(std::move(sampler));
  }
  return s;
}

EnergySession::~EnergySession() { (void)Stop(); }

Status EnergySession::Stop() {
  if (stopped_) return Status::Ok();
  stopped_ = true;
  Status first_error;
  std::string meters, rates;
  for (size_t i = 0; i < samplers_.size(); ++i) {
    Status st = samplers_[i]->Stop();
    if (!st.ok() && first_error.ok()) first_error = st;
    energy::SamplerStats stats = samplers_[i]->stats();
    const auto& probe = discovery_.probes[discovery_.chosen[i]];
    if (!meters.empty()) meters += ",";
    meters += probe.name;
    if (!rates.empty()) rates += "; ";
    rates += fmt::format("{}: {:.0f} reads/s, {:.2f}% of one core, {} read errors", probe.name,
                         stats.reads_per_second(), 100.0 * stats.cpu_fraction(), stats.read_errors);
    // How the meter took its numbers (NVML: each GPU's power source and its
    // check against the energy counter); read after Stop, so no read races it.
    for (const auto& [key, text] : probe.meter->Notes()) writer_->SetMeta("energy." + probe.name + "." + key, text);
  }
  writer_->SetMeta("energy.meters", meters);
  writer_->SetMeta("energy.provenance",
                   ProvenanceName(discovery_.chosen_provenance));
  writer_->SetMeta("energy.choice", discovery_.choice_reason);
  writer_->SetMeta("energy.sampler", rates);
  return first_error;
}

}  // namespace magneton

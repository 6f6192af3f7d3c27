// Energy sampling during a recording: the meters `record` chose, one sampler
// thread each, samples handed to the trace writer on the ops' clock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "energy/energy.h"
#include "energy/sampler.h"
#include "magneton/status.h"
#include "magneton/trace_writer.h"

namespace magneton {

class EnergySession {
 public:
  // Discovers meters and starts sampling. An error means no usable meter;
  // the recording goes on without energy and says why in its metadata.
  static StatusOr<std::unique_ptr<EnergySession>> Start(TraceWriter* writer);
  ~EnergySession();

  // Takes a final reading, stops the threads, and writes what was used
  // (meters, provenance, sampler rate and CPU cost) into the trace metadata.
  Status Stop();

 private:
  EnergySession() = default;
  TraceWriter* writer_ = nullptr;
  energy::MeterDiscovery discovery_;
  std::vector<std::unique_ptr<energy::Sampler>> samplers_;
  bool stopped_ = false;
};

}  // namespace magneton

// Run metadata, runtime states and config (recorder_meta.h): what a
// recording says about the run as a whole rather than about one op.
#include "record/recorder_meta.h"

#include <time.h>
#include <unistd.h>

#include <string>
#include <utility>

#include "magneton/clock.h"
#include "record/recorder_parts.h"
#include "trace/redact.h"
#include "trace/rerun_plan.h"
#include "trust/trace_trust.h"

namespace magneton {
namespace record {
namespace {

// The re-run plan the caller passed in meta.extra (trace/rerun_plan.h), as the
// trace stores and signs it: argv redacted element by element (a plan holding
// a redaction is then never re-run), the working directory filled in, and the
// display command line derived from it. A malformed plan is dropped with the
// reason in `rerun.plan_error`: the recording goes on, it is only never re-run.
void StoreRerunPlan(RunMetadata* m) {
  auto it = m->extra.find(kRerunPlanKey);
  if (it == m->extra.end()) return;
  auto plan = DecodeRunPlan(it->second, /*require_canonical=*/false);
  if (!plan.ok()) {
    m->extra.erase(it);
    m->extra["rerun.plan_error"] = plan.status().message();
    return;
  }
  plan->argv = RedactArgv(plan->argv);
  for (auto& [name, value] : plan->env) value = RedactIfSecret(name, std::move(value));
  if (plan->cwd.empty()) plan->cwd = m->cwd;
  plan->cwd = RedactSecretsInText(plan->cwd);
  plan->interpreter = RedactSecretsInText(plan->interpreter);
  m->cwd = plan->cwd;
  m->command_line = ShellQuoteArgv(plan->argv);
  // As the writer will store it (it redacts every meta row again): the
  // signature covers these bytes, so they must not change on the way in.
  it->second = RedactIfSecret(kRerunPlanKey, EncodeRunPlan(*plan));
}

// What else ran on the machine while this recording did; a failure is said
// in the trace, not hidden (docs/TRACE_FORMAT.md, machine.*).
void WriteMachineLoadMeta(RecorderParts& parts, TraceWriter& writer) {
  if (!parts.load_sampler) return;  // Start wrote machine.load_error
  const LoadSeries series = parts.load_sampler->Stop();
  parts.load_sampler.reset();
  const CpuTicks first{series.samples.front().busy, series.samples.front().steal, series.samples.front().total};
  const CpuTicks last{series.samples.back().busy, series.samples.back().steal, series.samples.back().total};
  auto load = LoadBetween(first, last, series.samples.back().own_cpu_ns - series.samples.front().own_cpu_ns,
                          series.ticks_per_second);
  if (!load.ok()) {
    writer.SetMeta("machine.load_error", load.status().message());
    return;
  }
  load->cpus = UsableCpuCount();
  for (const auto& [key, value] : LoadMeta(*load)) writer.SetMeta(key, value);
  // The series, so that the diff can take the load over the job alone.
  writer.SetMeta("machine.load_samples", EncodeLoadSeries(series));
}

}  // namespace

RunMetadata CompleteRunMetadata(const RunMetadata& meta) {
  RunMetadata m = meta;
  if (m.start_monotonic_ns == 0) m.start_monotonic_ns = MonotonicNowNs();
  if (m.start_unix_ns == 0) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m.start_unix_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  if (m.cwd.empty()) {
    char cwd[4096] = {};
    if (getcwd(cwd, sizeof(cwd) - 1)) m.cwd = cwd;
  }
  if (m.host.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) m.host = host;
  }
  StoreRerunPlan(&m);
  trust::AddSignature(&m);  // every way of recording signs (docs/DIFF.md)
  return m;
}

void StartBesideRecording(RecorderParts& parts, TraceWriter& writer, bool sample_energy) {
  if (sample_energy) {
    auto session = EnergySession::Start(&writer);
    if (session.ok()) {
      parts.energy = std::move(session).value();
    } else {
      writer.SetMeta("energy.status", "no energy recorded: " + session.status().message());
    }
  }
  if (auto sampler = LoadSampler::Start(); sampler.ok()) {
    parts.load_sampler = std::move(sampler).value();
  } else {
    writer.SetMeta("machine.load_error", sampler.status().message());
  }
}

Status WriteStopMeta(RecorderParts& parts, TraceWriter& writer, bool record_values) {
  // The fingerprints still queued are written first (their thread's work
  // from here on is marked as the recorder's at stop).
  parts.fingerprints.Finish();
  parts.window.WriteStopMeta();
  WriteMachineLoadMeta(parts, writer);
  Status st = parts.energy ? parts.energy->Stop() : Status::Ok();
  // How many values the recorder let go of (storage freed or written); what
  // it still held at the end is what was live.
  const TensorIdentity::Counts counts = parts.tensors.counts();
  writer.SetMeta("recorder.tensors_forgotten", std::to_string(counts.forgotten));
  writer.SetMeta("recorder.tensors_held_at_stop", std::to_string(counts.held));
  writer.SetMeta("recorder.unfingerprinted_nested_inputs", std::to_string(counts.fresh_nested_inputs));
  if (record_values) parts.fingerprints.WriteStopMeta();
  return st;
}

}  // namespace record

int64_t Recorder::InternRuntimeState(const std::map<std::string, std::string>& values) {
  return parts_->intern.InternRuntimeState(values);
}

void Recorder::SetThreadStateId(int64_t state_id) { parts_->ops.Local().state_id = state_id; }

int64_t Recorder::ThreadStateId() const { return parts_->ops.Local().state_id; }

void Recorder::AddStateSetter(StateSetter setter) {
  if (setter.t_ns == 0) setter.t_ns = MonotonicNowNs();
  if (setter.thread_id == 0) setter.thread_id = parts_->ops.Local().os_tid;
  writer_->AppendStateSetter(std::move(setter));
}

void Recorder::SetConfig(std::string key, std::string value, std::string source) {
  writer_->AppendConfig({std::move(key), std::move(value), std::move(source)});
}

void Recorder::SetMeta(const std::string& key, const std::string& value) { writer_->SetMeta(key, value); }

void Recorder::AppendEnergySample(EnergySample sample) { writer_->AppendEnergySample(std::move(sample)); }

Status Recorder::Flush() {
  // What was fingerprinted so far is part of what a flush writes.
  parts_->fingerprints.Drain();
  return writer_->Flush();
}

}  // namespace magneton

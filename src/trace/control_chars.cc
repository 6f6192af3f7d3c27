#include "trace/control_chars.h"

#include <map>
#include <string_view>
#include <utility>

namespace magneton {

namespace {

// The bytes of the control character at text[i], or 0 for none.
size_t ControlCharacterAt(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if ((c < 0x20 && c != '\t') || c == 0x7f) return 1;
  if (c == 0xc2 && i + 1 < text.size()) {
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if (next >= 0x80 && next <= 0x9f) return 2;  // a C1 control, two bytes in UTF-8
  }
  return 0;
}

bool HoldsControlCharacters(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (ControlCharacterAt(text, i) != 0) return true;
  }
  return false;
}

}  // namespace

size_t NeutralizeControlCharacters(std::string* text) {
  size_t replaced = 0;
  for (size_t i = 0; i < text->size(); ++i) {
    const size_t bytes = ControlCharacterAt(*text, i);
    if (bytes == 0) continue;
    text->replace(i, bytes, "?");
    ++replaced;
  }
  return replaced;
}

namespace {

// Map keys are const: rebuilds a map whose keys might hold one.
size_t NeutralizeMap(std::map<std::string, std::string>* map) {
  size_t n = 0;
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : *map) {
    std::string k = key, v = value;
    n += NeutralizeControlCharacters(&k) + NeutralizeControlCharacters(&v);
    out.emplace(std::move(k), std::move(v));
  }
  *map = std::move(out);
  return n;
}

}  // namespace

size_t NeutralizeControlCharacters(RunMetadata* m) {
  size_t n = 0;
  for (std::string* s : {&m->label, &m->command_line, &m->host, &m->cwd, &m->engine}) {
    n += NeutralizeControlCharacters(s);
  }
  return n + NeutralizeMap(&m->versions) + NeutralizeMap(&m->extra);
}

size_t NeutralizeControlCharacters(Trace* t) {
  size_t n = NeutralizeControlCharacters(&t->meta);
  auto fix = [&n](std::string& s) { n += NeutralizeControlCharacters(&s); };
  for (ConfigEntry& c : t->config) {
    fix(c.key);
    fix(c.value);
    fix(c.source);
  }
  for (std::string& s : t->strings) fix(s);
  for (Scope& s : t->scopes) fix(s.init_args);
  // Ops of one text share it: a copy only for a text to mend.
  for (OpEvent& op : t->ops) {
    if (!HoldsControlCharacters(op.args.str())) continue;
    std::string text = op.args;
    n += NeutralizeControlCharacters(&text);
    op.args = std::move(text);
  }
  for (TensorMeta& tensor : t->tensors) {
    fix(tensor.dtype);
    fix(tensor.device);
  }
  for (RuntimeState& r : t->runtime_states) n += NeutralizeMap(&r.values);
  for (StateSetter& s : t->state_setters) {
    fix(s.key);
    fix(s.value);
    fix(s.where);
  }
  for (DeviceActivity& a : t->device_activities) {
    fix(a.device);
    fix(a.kind);
  }
  for (EnergySample& e : t->energy_samples) {
    fix(e.domain);
    fix(e.meter);
  }
  return n;
}

}  // namespace magneton

# Trust stage: signing traces at record time, verifying them before a re-run
# (trust/trace_trust.h). Linked into the recorder, so every way of recording signs.
set(MAGNETON_TRUST_SOURCES
  trust/trust_key.cc
  trust/trace_trust.cc
)
